package seconds

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestToDuration(t *testing.T) {
	for s, want := range map[float64]time.Duration{
		0: 0, 0.5: 500 * time.Millisecond, 1.5: 1500 * time.Millisecond, 30: 30 * time.Second,
		-2: -2 * time.Second, 86400: 24 * time.Hour, 1e-9: time.Nanosecond, 9_000_000_000: 9_000_000_000 * time.Second,
	} {
		got, err := ToDuration(s)
		if err != nil || got != want {
			t.Errorf("ToDuration(%v) = %v, %v; want %v", s, got, err, want)
		}
	}
	// 9999999999 s times 1e9 overflows an int64: refused, not wrapped round
	for _, s := range []float64{9_999_999_999, 1.7e12, 1e300, -1e19, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if d, err := ToDuration(s); !errors.Is(err, ErrRange) {
			t.Errorf("ToDuration(%v) = %v, %v; want ErrRange", s, d, err)
		}
	}
}

func TestWithin(t *testing.T) {
	if d, err := Within(0.25, 0, time.Hour); err != nil || d != 250*time.Millisecond {
		t.Fatalf("Within = %v, %v", d, err)
	}
	_, err := Within(9_999_999_999, 0, 365*24*time.Hour)
	if !errors.Is(err, ErrRange) || err.Error() != "out of range: must be between 0 and 31536000 seconds (got 9.999999999e+09)" {
		t.Fatalf("Within error = %v", err)
	}
	if _, err := Within(-0.5, 0, time.Hour); !errors.Is(err, ErrRange) {
		t.Fatalf("negative accepted: %v", err)
	}
	if got := Format(1500 * time.Millisecond); got != "1.5" {
		t.Fatalf("Format = %q", got)
	}
}

// Every float64 either converts to a duration of the same sign and about
// the same size, or is ErrRange: nothing overflows into another meaning.
func FuzzToDuration(f *testing.F) {
	for _, s := range []float64{0, 0.5, -1, 9_999_999_999, 1.7e12, 9.2e9, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s float64) {
		d, err := ToDuration(s)
		if err != nil {
			if !errors.Is(err, ErrRange) {
				t.Fatalf("error %v is not ErrRange", err)
			}
			if !math.IsNaN(s) && !math.IsInf(s, 0) && math.Abs(s) <= maxSeconds {
				t.Fatalf("%v refused: %v", s, err)
			}
			return
		}
		if (s > 0 && d < 0) || (s < 0 && d > 0) {
			t.Fatalf("%v seconds became %v", s, d)
		}
		if diff := math.Abs(d.Seconds() - s); diff > 1e-6*math.Max(1, math.Abs(s)) {
			t.Fatalf("%v seconds became %v", s, d)
		}
	})
}

func TestParse(t *testing.T) {
	for v, want := range map[string]time.Duration{"30": 30 * time.Second, " 0.5 ": 500 * time.Millisecond, "90s": 90 * time.Second, "1h30m": 90 * time.Minute, "0": 0} {
		if got, err := Parse(v); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"", "NaN", "Inf", "-Inf", "1e300", "ten", "5 s", "9999999999999"} {
		if d, err := Parse(v); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", v, d)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, v := range []string{"30", "0.5", "90s", "1h30m", "1e300", "NaN", "-5", "2562047h47m16.854775807s"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := Parse(v)
		if err != nil {
			return
		}
		// a number of seconds reads back as about the same number
		if x, perr := strconv.ParseFloat(strings.TrimSpace(v), 64); perr == nil {
			if diff := math.Abs(d.Seconds() - x); diff > 1e-6*math.Max(1, math.Abs(x)) {
				t.Fatalf("Parse(%q) = %v", v, d)
			}
		}
	})
}
