// Package seconds turns a number of seconds, as API clients and settings
// write it (30, 0.5, 1.5), into a time.Duration. A float64 times 1e9 does
// not fit an int64 beyond about 292 years, and Go's conversion of such a
// value is undefined (on amd64 it turns into a large negative duration), so
// every conversion goes through here and is checked.
package seconds

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrRange is wrapped by every error of this package.
var ErrRange = errors.New("out of range")

// maxSeconds is the largest whole number of seconds a Duration holds.
const maxSeconds = float64(math.MaxInt64 / int64(time.Second))

// ToDuration converts s seconds. NaN, ±Inf and magnitudes beyond what a
// Duration holds (about 292 years) are ErrRange. Fractions below a
// nanosecond are dropped.
func ToDuration(s float64) (time.Duration, error) {
	if math.IsNaN(s) || math.IsInf(s, 0) || math.Abs(s) > maxSeconds {
		return 0, fmt.Errorf("%w: %v seconds", ErrRange, s)
	}
	whole, frac := math.Modf(s)
	return time.Duration(whole)*time.Second + time.Duration(frac*float64(time.Second)), nil
}

// Within converts s seconds and checks lo <= d <= hi. The error says the
// bounds in seconds, so callers can put it after the field's name.
func Within(s float64, lo, hi time.Duration) (time.Duration, error) {
	d, err := ToDuration(s)
	if err != nil || d < lo || d > hi {
		return 0, fmt.Errorf("%w: must be between %s and %s seconds (got %v)", ErrRange, Format(lo), Format(hi), s)
	}
	return d, nil
}

// Format writes d as a number of seconds, as short as it reads back
// ("0.5", "86400").
func Format(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d", d/time.Second)
	}
	return fmt.Sprintf("%g", d.Seconds())
}

// Parse reads the one way taskflow writes a duration in text (settings,
// flags, retry schedules): a number of seconds ("30", "0.5") or a Go
// duration ("90s", "1h30m"). Both are checked for overflow.
func Parse(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, errors.New("empty: want seconds (30, 0.5) or a duration (90s, 1h)")
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%q is not seconds (30, 0.5) or a duration (90s, 1h)", v)
		}
		return ToDuration(f)
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not seconds (30, 0.5) or a duration (90s, 1h)", v)
	}
	return d, nil
}
