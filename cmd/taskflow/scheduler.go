package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/config"
)

func init() {
	register("scheduler", func(m *Main) *cobra.Command {
		cfg, envErr := config.FromEnv(m.Getenv)
		cmd := &cobra.Command{
			Use:   "scheduler",
			Short: "Run the scheduler alone: due retries, delayed tasks, expired leases, the max-age rule, retention",
			Long: `Every TASKFLOW_SCHEDULER_INTERVAL (default 500ms): move due retries and
delayed tasks to their queues, return tasks whose lease expired to their
queue, dead-letter tasks older than MAX_TASK_AGE, delete finished tasks past
TASKFLOW_RETENTION (24h; DLQ: TASKFLOW_DLQ_RETENTION, 168h; 0 keeps them
forever). Each step is an idempotent
script over a bounded batch, so any number of schedulers may run at once
(no leader election).`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if envErr != nil {
					return envErr
				}
				if err := cfg.Validate(); err != nil {
					return err
				}
				if cfg.RedisURL == "" {
					return errors.New("REDIS_URL is not set: `taskflow scheduler` needs a Redis")
				}
				eng, err := engineFromEnv(m.Getenv, cfg.Namespace)
				if err != nil {
					return err
				}
				rdb, err := openRedis(cmd.Context(), cfg.RedisURL)
				if err != nil {
					return err
				}
				defer rdb.Close()
				m.Logger.Info("taskflow scheduler running", "namespace", cfg.Namespace)
				return runEngine(cmd.Context(), m, rdb, eng, engineRun{scheduler: true, namespace: cfg.Namespace})
			},
		}
		f := cmd.Flags()
		f.StringVar(&cfg.RedisURL, "redis-url", cfg.RedisURL, "Redis URL (REDIS_URL)")
		f.StringVar(&cfg.Namespace, "namespace", cfg.Namespace, "Redis key namespace (TASKFLOW_NAMESPACE)")
		return cmd
	})
}
