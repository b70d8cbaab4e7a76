package main

import (
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/plan"
)

func init() {
	register("seed-demo", func(m *Main) *cobra.Command {
		var redisURL, prefix string
		cmd := &cobra.Command{
			Use:   "seed-demo",
			Short: "Load the plan engine's demo data (users, follow/recommendation/media lists) into Redis",
			Long: `seed-demo writes the data the example plans expect (docs/plan.md) into
the Redis at --redis_url (default $REDIS_URL, else redis://127.0.0.1:6379/0),
every key under --key_prefix (default $RANKD_KEY_PREFIX). It replaces only
the demo's own keys and never flushes anything; running it twice is harmless.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if redisURL == "" {
					redisURL = m.Getenv("REDIS_URL")
				}
				if redisURL == "" {
					redisURL = "redis://127.0.0.1:6379/0"
				}
				if !cmd.Flags().Changed("key_prefix") {
					prefix = m.Getenv("RANKD_KEY_PREFIX")
				}
				opt, err := redis.ParseURL(redisURL)
				if err != nil {
					return fmt.Errorf("seed-demo: --redis_url: %w", err)
				}
				c := redis.NewClient(opt)
				defer c.Close()
				n, err := plan.Seed(cmd.Context(), c, prefix, plan.Demo())
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(m.Stdout, "seeded %d demo keys into %s (key prefix %q)\n", n, opt.Addr, prefix)
				return err
			},
		}
		cmd.Flags().StringVar(&redisURL, "redis_url", "", "Redis URL (default $REDIS_URL, else redis://127.0.0.1:6379/0)")
		cmd.Flags().StringVar(&prefix, "key_prefix", "", "prefix of every key written (default $RANKD_KEY_PREFIX)")
		return cmd
	})
}
