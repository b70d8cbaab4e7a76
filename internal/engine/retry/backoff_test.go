package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	b := Backoff{Jitter: new(0.0)}.WithDefaults()
	var got []time.Duration
	for n := 0; n < 8; n++ {
		got = append(got, b.Delay(n, nil))
	}
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 60 * time.Second, 60 * time.Second}, got)
	j := Backoff{}.WithDefaults()
	for i := 0; i < 1000; i++ {
		d := j.Delay(2, nil)
		require.GreaterOrEqual(t, d, 3200*time.Millisecond)
		require.LessOrEqual(t, d, 4800*time.Millisecond)
	}
	require.Error(t, Backoff{Initial: time.Second, Max: time.Millisecond}.Validate())
}
