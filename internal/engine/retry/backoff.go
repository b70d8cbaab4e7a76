package retry

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff is an exponential delay: from Initial, doubled per retry,
// capped at Max, with ±Jitter. It is the retry delay of external tasks'
// transient failures (attempt 1 runs at once; retry n, from 0, waits
// Initial·2ⁿ: 1 s, 2 s, 4 s … 60 s) and the pause of a stream consumer
// after a failed read (protocol.Loop).
type Backoff struct {
	// Initial is the first retry's delay. Default 1s.
	Initial time.Duration
	// Max caps the delay. Default 60s.
	Max time.Duration
	// Jitter is the ± fraction applied to each delay. nil: 0.2; 0 turns
	// jitter off.
	Jitter *float64
}

// WithDefaults returns b with unset fields defaulted.
func (b Backoff) WithDefaults() Backoff {
	if b.Initial == 0 {
		b.Initial = time.Second
	}
	if b.Max == 0 {
		b.Max = 60 * time.Second
	}
	if b.Jitter == nil {
		b.Jitter = new(0.2)
	}
	return b
}

// Validate says what is wrong with b.
func (b Backoff) Validate() error {
	switch {
	case b.Initial <= 0:
		return fmt.Errorf("retry: backoff Initial %s must be positive", b.Initial)
	case b.Max < b.Initial:
		return fmt.Errorf("retry: backoff Max %s is below Initial %s", b.Max, b.Initial)
	case b.Jitter != nil && (*b.Jitter < 0 || *b.Jitter >= 1):
		return fmt.Errorf("retry: backoff Jitter %v must be in [0, 1)", *b.Jitter)
	}
	return nil
}

// Delay is the wait before retry n (0-based), with jitter drawn from r
// (nil: the global source).
func (b Backoff) Delay(n int, r *rand.Rand) time.Duration {
	d := b.Initial
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	if b.Jitter != nil && *b.Jitter > 0 {
		var u float64
		if r != nil {
			u = r.Float64()
		} else {
			u = rand.Float64()
		}
		d = time.Duration(float64(d) * (1 + *b.Jitter*(2*u-1)))
	}
	return d
}
