package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/platform/app"
)

func init() {
	register("scheduler", func(m *Main) *cobra.Command {
		cfg, envErr := m.config()
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
				if cfg.RedisURL == "" {
					return errors.New("REDIS_URL is not set: `taskflow scheduler` needs a Redis")
				}
				a, err := app.Open(cmd.Context(), cfg, m.Logger)
				if err != nil {
					return err
				}
				defer a.Close()
				m.Logger.Info("taskflow scheduler running", "namespace", cfg.Namespace)
				return runEngine(cmd.Context(), m, a, engineRun{scheduler: true})
			},
		}
		cfg.BindFlags(cmd.Flags(), "redis-url", "namespace")
		return cmd
	})
}
