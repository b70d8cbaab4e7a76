package breaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/clock"
)

func newSet(t *testing.T) (*Set, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Unix(1000, 0))
	s, err := NewSet(Config{Clock: clk})
	require.NoError(t, err)
	return s, clk
}

func TestStaysClosedBelowVolume(t *testing.T) {
	t.Parallel()
	s, _ := newSet(t)
	for i := 0; i < 9; i++ {
		s.Record("api", false)
	}
	require.Equal(t, Closed, s.State("api"))
	ok, _ := s.Allow("api")
	require.True(t, ok)
}

func TestOpensAtThresholdOverVolume(t *testing.T) {
	t.Parallel()
	s, clk := newSet(t)
	for i := 0; i < 5; i++ {
		s.Record("api", true)
	}
	for i := 0; i < 4; i++ {
		s.Record("api", false)
	}
	require.Equal(t, Closed, s.State("api"), "9 calls: below volume")
	s.Record("api", false) // 5/10 = 0.5 >= 0.5
	require.Equal(t, Open, s.State("api"))
	ok, wait := s.Allow("api")
	require.False(t, ok)
	require.Equal(t, 60*time.Second, wait)
	require.Equal(t, Closed, s.State("other"), "breakers are per dependency")

	clk.Advance(59 * time.Second)
	ok, wait = s.Allow("api")
	require.False(t, ok)
	require.Equal(t, time.Second, wait)
}

func TestBelowThresholdStaysClosed(t *testing.T) {
	t.Parallel()
	s, _ := newSet(t)
	for i := 0; i < 6; i++ {
		s.Record("api", true)
	}
	for i := 0; i < 4; i++ {
		s.Record("api", false)
	}
	require.Equal(t, Closed, s.State("api"))
}

func TestHalfOpenProbe(t *testing.T) {
	t.Parallel()
	for _, probeOK := range []bool{true, false} {
		name := "ProbeFails"
		if probeOK {
			name = "ProbeSucceeds"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, clk := newSet(t)
			for i := 0; i < 10; i++ {
				s.Record("api", false)
			}
			require.Equal(t, Open, s.State("api"))
			clk.Advance(60 * time.Second)
			ok, _ := s.Allow("api")
			require.True(t, ok, "the probe goes through")
			require.Equal(t, HalfOpen, s.State("api"))
			ok, _ = s.Allow("api")
			require.False(t, ok, "one probe at a time")
			s.Record("api", probeOK)
			if probeOK {
				require.Equal(t, Closed, s.State("api"))
				snap := s.Snapshots()
				require.Equal(t, 0, snap[0].Failures, "counts reset on close")
				return
			}
			require.Equal(t, Open, s.State("api"))
			ok, wait := s.Allow("api")
			require.False(t, ok)
			require.Equal(t, 60*time.Second, wait, "a failed probe restarts the timeout")
		})
	}
}

func TestLostProbeIsReplaced(t *testing.T) {
	t.Parallel()
	s, clk := newSet(t)
	for i := 0; i < 10; i++ {
		s.Record("api", false)
	}
	clk.Advance(60 * time.Second)
	ok, _ := s.Allow("api")
	require.True(t, ok)
	clk.Advance(60 * time.Second)
	ok, _ = s.Allow("api")
	require.True(t, ok, "a probe that never reported is replaced after Timeout")
}

// TestReleasedProbeIsReplacedAtOnce: a probe that ends without saying
// anything about the dependency frees the slot, so the next task probes
// without waiting another Timeout; Release outside HALF_OPEN changes
// nothing.
func TestReleasedProbeIsReplacedAtOnce(t *testing.T) {
	t.Parallel()
	s, clk := newSet(t)
	s.Release("api") // unknown: nothing to do
	require.Equal(t, Closed, s.State("api"))
	for i := 0; i < 10; i++ {
		s.Record("api", false)
	}
	s.Release("api")
	ok, wait := s.Allow("api")
	require.False(t, ok, "Release does not shorten OPEN")
	require.Equal(t, 60*time.Second, wait)
	clk.Advance(60 * time.Second)
	ok, _ = s.Allow("api")
	require.True(t, ok, "the probe")
	ok, _ = s.Allow("api")
	require.False(t, ok, "one probe at a time")
	s.Release("api")
	require.Equal(t, HalfOpen, s.State("api"), "a released probe decides nothing")
	ok, _ = s.Allow("api")
	require.True(t, ok, "the next task is the probe, without another Timeout")
	ok, _ = s.Allow("api")
	require.False(t, ok)
	s.Record("api", true)
	require.Equal(t, Closed, s.State("api"))
	s.Release("api")
	require.Equal(t, Closed, s.State("api"))
	require.Equal(t, 0, s.Snapshots()[0].Successes+s.Snapshots()[0].Failures, "Release counts nothing")
}

func TestWindowForgetsOldCalls(t *testing.T) {
	t.Parallel()
	s, clk := newSet(t)
	for i := 0; i < 100; i++ {
		s.Record("api", true)
	}
	clk.Advance(61 * time.Second)
	for i := 0; i < 10; i++ {
		s.Record("api", false)
	}
	require.Equal(t, Open, s.State("api"))
	require.Equal(t, Open, s.Snapshots()[0].State)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	_, err := NewSet(Config{FailureThreshold: 2})
	require.Error(t, err)
	_, err = NewSet(Config{VolumeThreshold: -1})
	require.Error(t, err)
}
