package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/plan"
)

func init() {
	register("seed-demo", func(m *Main) *cobra.Command {
		cfg, _ := m.config() // its settings have no parse rules
		cmd := &cobra.Command{
			Use:   "seed-demo",
			Short: "Load the plan engine's demo data (users, follow/recommendation/media lists) into the Redis you name",
			Long: `seed-demo writes the data the example plans expect (docs/plan.md) into
the Redis at --redis-url (default $TASKFLOW_PLAN_REDIS_URL, else $REDIS_URL),
every key under --key-prefix (default $RANKD_KEY_PREFIX). It writes only to a
Redis you named, replaces only the demo's own keys and never flushes
anything; running it twice is harmless.`,
			Example: `  REDIS_URL=redis://127.0.0.1:6379/0 taskflow seed-demo
  taskflow seed-demo --redis-url redis://127.0.0.1:6379/0 --key-prefix demo:`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				// --redis-url, else the plans' Redis: TASKFLOW_PLAN_REDIS_URL,
				// else REDIS_URL
				redisURL, prefix := cfg.PlanRedisURL(), cfg.Plans.KeyPrefix
				if cmd.Flags().Changed("redis-url") {
					redisURL = cfg.RedisURL
				}
				if redisURL == "" {
					return fmt.Errorf("seed-demo writes only to a Redis you name: give --redis-url or set REDIS_URL (e.g. the address `taskflow dev` prints)")
				}
				addr, err := redisconn.Addrs(redisURL)
				if err != nil {
					return fmt.Errorf("seed-demo: --redis-url: %w", err)
				}
				// one clear answer at once when nothing listens there, not a
				// dial error per retry
				c, err := redisconn.Open(cmd.Context(), redisURL, redisconn.Options{PingTimeout: 2 * time.Second})
				if err != nil {
					return fmt.Errorf("seed-demo: cannot reach Redis at %s: %w", addr, err)
				}
				defer c.Close()
				n, err := plan.Seed(cmd.Context(), c, prefix, plan.Demo())
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(m.Stdout, "seeded %d demo keys into %s (key prefix %q)\n", n, addr, prefix)
				return err
			},
		}
		cfg.BindFlags(cmd.Flags(), "redis-url", "key-prefix")
		cmd.Flags().Lookup("redis-url").Usage = "Redis to write to (default TASKFLOW_PLAN_REDIS_URL, else REDIS_URL; one of them is required)"
		return cmd
	})
}
