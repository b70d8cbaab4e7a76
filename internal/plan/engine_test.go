package plan_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg  plan.Config
		want string
	}{
		"Policy":        {plan.Config{CPUPolicy: "fast"}, "CPUPolicy"},
		"RedisURL":      {plan.Config{RedisURL: "http://x"}, "RedisURL"},
		"MaxInflight":   {plan.Config{MaxInflight: -1}, "MaxInflight"},
		"RedisConns":    {plan.Config{RedisConns: 257}, "RedisConns"},
		"NegativeDelay": {plan.Config{FlushDelay: -time.Microsecond}, "FlushDelay"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := plan.New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestConnectionOptions: more connections and a flush delay change how
// commands are written, never the answer; concurrent runs share them.
func TestConnectionOptions(t *testing.T) {
	t.Parallel()
	base := setup(t)
	want := ids(decode(t, base.reg, mustRun(t, base, "complex_dag")))
	require.Len(t, want, 6)
	for name, mod := range map[string]func(*plan.Config){
		"FourConns":   func(c *plan.Config) { c.RedisConns = 4 },
		"FlushDelay":  func(c *plan.Config) { c.FlushDelay = 50 * time.Microsecond },
		"ReadDeadToo": func(c *plan.Config) { c.ReadDeadColumns, c.RedisConns = true, 2 },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, mod)
			c := b.load(t, "complex_dag")
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					res, err := b.eng.Run(t.Context(), c, user(1), plan.RunOptions{Deadline: 10 * time.Second})
					if !assert.NoError(t, err) {
						return
					}
					assert.Equal(t, want, ids(decode(t, b.reg, res)))
				})
			}
			wg.Wait()
		})
	}
}
