package testwait

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB whose Fatalf records the message instead of
// ending the test.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func TestUntilReturnsOnceTheCheckHolds(t *testing.T) {
	t.Parallel()
	calls := 0
	Until(t, 5*time.Second, time.Millisecond, func() bool { calls++; return calls == 3 },
		func() string { return "never called" })
	require.Equal(t, 3, calls, "checked at once, then until it held")
}

func TestUntilFailsWithWhatTheLastCheckSaw(t *testing.T) {
	t.Parallel()
	r := &recorder{TB: t}
	seen := 0
	start := time.Now()
	Until(r, 50*time.Millisecond, 5*time.Millisecond, func() bool { seen++; return false },
		func() string { return fmt.Sprintf("the counter never reached -1 (last %d)", seen) })
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "it waited the whole timeout")
	require.Equal(t, fmt.Sprintf("the counter never reached -1 (last %d) (waited 50ms)", seen), r.fatal)
	require.Greater(t, seen, 1)
}
