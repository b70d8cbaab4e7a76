package breaker

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestForceOpenHeldUntilReset(t *testing.T) {
	t.Parallel()
	s, clk := newSet(t)
	require.Equal(t, []string{"api"}, s.ForceOpen(time.Time{}, "api"))
	for range 3 { // long past the timeout: still held
		ok, wait := s.Allow("api")
		require.False(t, ok)
		require.Equal(t, time.Minute, wait, "looked at again after Timeout")
		clk.Advance(time.Hour)
	}
	s.Record("api", true) // a call started before: does not move it
	require.Equal(t, Open, s.State("api"))
	sn := s.Snapshots()
	require.Len(t, sn, 1)
	require.True(t, sn[0].Forced)
	require.True(t, sn[0].Until.IsZero())

	s.Reset("api")
	require.Equal(t, Closed, s.State("api"))
	ok, _ := s.Allow("api")
	require.True(t, ok)
	require.False(t, s.Snapshots()[0].Forced)
}

func TestForceOpenForADuration(t *testing.T) {
	t.Parallel()
	s, clk := newSet(t)
	s.ForceOpen(clk.Now().Add(5*time.Minute), "api") // longer than Timeout
	clk.Advance(4 * time.Minute)
	ok, wait := s.Allow("api")
	require.False(t, ok)
	require.Equal(t, time.Minute, wait)
	clk.Advance(time.Minute)
	ok, _ = s.Allow("api")
	require.True(t, ok, "then one probe, as after a normal timeout")
	require.Equal(t, HalfOpen, s.State("api"))
	s.Record("api", true)
	require.Equal(t, Closed, s.State("api"))
}

func TestResetClearsCounts(t *testing.T) {
	t.Parallel()
	s, _ := newSet(t)
	for range 10 {
		s.Record("api", false)
	}
	require.Equal(t, Open, s.State("api"))
	s.Reset("api")
	for range 9 { // the old failures are gone: 9 more stay below volume
		s.Record("api", false)
	}
	require.Equal(t, Closed, s.State("api"))
}

func TestApplyCommand(t *testing.T) {
	t.Parallel()
	s, clk := newSet(t)
	s.Record("seen", true)
	until := clk.Now().Add(time.Hour).UnixMilli()

	got := s.Apply(Command{Op: OpOpen, Until: until}, []string{"configured", "seen", ""})
	require.Equal(t, []string{"configured", "seen"}, got, "empty dependency: known and configured, once each")
	for _, sn := range s.Snapshots() {
		require.Equal(t, Open, sn.State)
		require.Equal(t, until, sn.Until.UnixMilli())
	}
	require.Equal(t, []string{"other"}, s.Apply(Command{Op: OpOpen, Dependency: "other"}, nil))
	require.Equal(t, []string{"seen"}, s.Apply(Command{Op: OpReset, Dependency: "seen"}, nil))
	require.Equal(t, Closed, s.State("seen"))
	require.Equal(t, Open, s.State("other"))
	s.Apply(Command{Op: OpReset}, nil)
	for _, sn := range s.Snapshots() {
		require.Equal(t, Closed, sn.State, sn.Dependency)
	}
}

func TestParseCommand(t *testing.T) {
	t.Parallel()
	c, err := ParseCommand([]byte(`{"op":"open","dependency":"openrouter","until_ms":5,"at_ms":1}`))
	require.NoError(t, err)
	require.Equal(t, Command{Op: OpOpen, Dependency: "openrouter", Until: 5, At: 1}, c)
	for name, in := range map[string]string{
		"NotJSON":      `open`,
		"UnknownOp":    `{"op":"close"}`,
		"NegativeTime": `{"op":"open","until_ms":-1}`,
		"ResetUntil":   `{"op":"reset","until_ms":5}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseCommand([]byte(in))
			require.ErrorIs(t, err, ErrBadCommand)
		})
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{`{"op":"reset","at_ms":1}`, `{"op":"open","dependency":"x","until_ms":99}`, `{}`, `[]`, `{"op":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCommand(b)
		if err != nil {
			return
		}
		if c.Op != OpReset && c.Op != OpOpen || c.Until < 0 {
			t.Fatalf("accepted %+v", c)
		}
		s, _ := NewSet(Config{})
		s.Apply(c, []string{"a"})
	})
}

func TestReplay(t *testing.T) {
	t.Parallel()
	s, clk := newSet(t)
	now := clk.Now()
	enc := func(c Command) string {
		b, err := json.Marshal(c)
		require.NoError(t, err)
		return string(b)
	}
	n := s.Replay(map[string]string{
		"":        enc(Command{Op: OpOpen}),                                                // every dependency, held
		"a":       enc(Command{Op: OpReset, Dependency: "a"}),                              // then a reset
		"expired": enc(Command{Op: OpOpen, Dependency: "expired", Until: now.UnixMilli()}), // ended
		"later":   enc(Command{Op: OpOpen, Dependency: "later", Until: now.Add(time.Hour).UnixMilli()}),
		"junk":    "{",
	}, []string{"a", "b"}, now)
	require.Equal(t, 3, n)
	require.Equal(t, Closed, s.State("a"), "the per-dependency reset is newer than the all-open")
	require.Equal(t, Open, s.State("b"))
	require.Equal(t, Open, s.State("later"))
	require.Equal(t, Closed, s.State("expired"))
	require.Zero(t, s.Replay(nil, []string{"a"}, now))
}

// TestDeclare: declared dependencies are listed, CLOSED, before any task
// used them, and declaring again changes nothing.
func TestDeclare(t *testing.T) {
	t.Parallel()
	s, err := NewSet(Config{})
	require.NoError(t, err)
	require.Empty(t, s.Snapshots())
	s.Declare("openrouter", "search")
	s.ForceOpen(time.Time{}, "search")
	s.Declare("search")
	sn := s.Snapshots()
	require.Len(t, sn, 2)
	require.Equal(t, "openrouter", sn[0].Dependency)
	require.Equal(t, Closed, sn[0].State)
	require.Equal(t, Open, sn[1].State, "declaring again does not reset it")
}
