package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

func TestParseSchedules(t *testing.T) {
	t.Parallel()
	got, err := ParseSchedules(" RateLimitError = 30, 1m30s ; Default=1,2.5 ;")
	require.NoError(t, err)
	require.Equal(t, []time.Duration{30 * time.Second, 90 * time.Second}, got[task.ErrTypeRateLimit])
	require.Equal(t, []time.Duration{time.Second, 2500 * time.Millisecond}, got[task.ErrTypeDefault])
	require.Equal(t, DefaultSchedules()[task.ErrTypeServiceUnavailable], got[task.ErrTypeServiceUnavailable], "types not given keep the built-in schedules")
	p := Policy{Schedules: got}.WithDefaults()
	require.NoError(t, p.Validate())
	require.Equal(t, 90*time.Second, p.Base(5, task.ErrTypeRateLimit), "the last delay repeats")

	empty, err := ParseSchedules("")
	require.NoError(t, err)
	require.Equal(t, DefaultSchedules(), empty)

	for in, msg := range map[string]string{
		"RateLimitError":          "is not ErrorType=d1,d2,...",
		"=1,2":                    "is not ErrorType=d1,d2,...",
		"Default=":                "Default: an empty delay",
		"Default=1,,2":            "Default: an empty delay",
		"Default=soon":            `Default: delay "soon" is not seconds or a duration like 90s`,
		"NetworkTimeout=-1":       `NetworkTimeout: delay "-1" must be within 0 and 168h0m0s`,
		"NetworkTimeout=-1s":      `NetworkTimeout: delay "-1s" must be within 0 and 168h0m0s`,
		"ServiceUnavailable=999h": `ServiceUnavailable: delay "999h" must be within 0 and 168h0m0s`,
	} {
		_, err := ParseSchedules(in)
		require.ErrorContains(t, err, msg, in)
	}
}

func FuzzParseSchedules(f *testing.F) {
	for _, s := range []string{"", "Default=1,2", "RateLimitError=60,120;Default=5", "a=1s;b=2m;", "x=;", "=", ";;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSchedules(s)
		if err != nil {
			return
		}
		// whatever parses is a valid policy
		require.NoError(t, Policy{Schedules: got}.WithDefaults().Validate(), s)
	})
}
