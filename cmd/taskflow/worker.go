package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/engine/maintenance"
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/platform/bridge"
)

func init() {
	register("worker", func(m *Main) *cobra.Command {
		cfg, envErr := m.config()
		var withScheduler bool
		var id string
		cmd := &cobra.Command{
			Use:   "worker",
			Short: "Run task handlers (and, by default, the scheduler) against REDIS_URL",
			Long: `Run --concurrency handler goroutines for every registered task type
until interrupted; on SIGINT/SIGTERM stop fetching, let running tasks finish
within TASKFLOW_SHUTDOWN_GRACE and hand the rest back to their queue.
Any number of worker processes may share one Redis. With --scheduler (the
default) the process also promotes due retries and reaps expired leases;
several schedulers at once do no harm.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if envErr != nil {
					return envErr
				}
				if cfg.RedisURL == "" {
					return errors.New("REDIS_URL is not set: `taskflow worker` needs a Redis")
				}
				a, err := app.Open(cmd.Context(), cfg, m.Logger)
				if err != nil {
					return err
				}
				defer a.Close()
				return runEngine(cmd.Context(), m, a, engineRun{
					workers: true, scheduler: withScheduler, concurrency: cfg.Concurrency,
					grace: cfg.ShutdownGrace, id: id,
				})
			},
		}
		f := cmd.Flags()
		cfg.BindFlags(f, "redis-url", "namespace", "concurrency")
		f.BoolVar(&withScheduler, "scheduler", true, "also run the scheduler in this process")
		f.StringVar(&id, "id", "", "worker id (default <host>-<pid>-<random>)")
		return cmd
	})
}

// engineRun says which parts of the engine a process runs.
type engineRun struct {
	workers, scheduler bool
	concurrency        int
	grace              time.Duration
	id                 string
}

// runEngine runs a worker and/or a scheduler until ctx ends. `taskflow
// dev` can call it too. The worker is the public package's
// (taskflow.Worker), built on the process's app, with every task type
// registered on it (registerTasks): `taskflow worker` is one program
// written on the public API.
func runEngine(ctx context.Context, m *Main, a *app.App, r engineRun) error {
	st, eng := a.Store, a.Config.Engine
	if !r.workers {
		if !r.scheduler {
			return nil
		}
		sc := eng.Scheduler
		sc.Logger = m.Logger.With("component", "scheduler")
		s, err := maintenance.New(st, sc)
		if err != nil {
			return err
		}
		return s.Run(ctx)
	}
	w := bridge.WorkerOn(a, taskflow.Config{WorkerID: r.id, Concurrency: r.concurrency, ShutdownGrace: r.grace,
		NoScheduler: !r.scheduler, Logger: m.Logger}).(*taskflow.Worker)
	closeHandlers, err := registerTasks(m, w, taskDeps{Redis: a.Redis, Namespace: st.Namespace(), Store: st,
		DefaultTimeout: eng.Worker.WithDefaults().DefaultTimeout, Plans: &a.Config.Plans, RedisURL: a.Config.RedisURL})
	if err != nil {
		return err
	}
	// after the worker has stopped: the plan engine's Redis clients
	defer func() { _ = closeHandlers() }()
	return w.Run(ctx)
}
