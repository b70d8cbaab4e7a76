package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/app"
	"github.com/taskflow/taskflow/internal/scheduler"
	"github.com/taskflow/taskflow/internal/worker"
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
// dev` can call it too.
func runEngine(ctx context.Context, m *Main, a *app.App, r engineRun) error {
	st, eng := a.Store, a.Config.Engine
	errc := make(chan error, 2)
	n := 0
	if r.scheduler {
		sc := eng.Scheduler
		sc.Logger = m.Logger.With("component", "scheduler")
		s, err := scheduler.New(st, sc)
		if err != nil {
			return err
		}
		n++
		go func() { errc <- s.Run(ctx) }()
	}
	if r.workers {
		mux, closeHandlers, err := openTaskMux(m, taskDeps{Redis: a.Redis, Namespace: st.Namespace(), Store: st,
			DefaultTimeout: eng.Worker.WithDefaults().DefaultTimeout, Plans: &a.Config.Plans, RedisURL: a.Config.RedisURL})
		if err != nil {
			return err
		}
		// After the worker has stopped (runEngine returns once every part
		// has): the plan engine's Redis clients.
		defer func() { _ = closeHandlers() }()
		wc := eng.Worker
		wc.ID, wc.Concurrency, wc.ShutdownGrace = r.id, r.concurrency, r.grace
		wc.Logger = m.Logger.With("component", "worker")
		deps := taskDependencies(mux)
		if len(wc.Dependencies) == 0 {
			wc.Dependencies = deps
		}
		w, err := worker.New(st, mux, wc)
		if err != nil {
			return err
		}
		m.Logger.Info("taskflow worker running", "id", w.ID(), "concurrency", r.concurrency, "types", mux.Types(), "scheduler", r.scheduler)
		n++
		go func() { errc <- w.Run(ctx) }()
	}
	var errs []error
	for i := 0; i < n; i++ {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
