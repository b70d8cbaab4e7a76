package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/config"
	"github.com/taskflow/taskflow/internal/orchestrator"
	"github.com/taskflow/taskflow/internal/retry"
	"github.com/taskflow/taskflow/internal/scheduler"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/worker"
)

// engineEnv is the engine's configuration from the environment (spec 001's
// Settings names where it has them). Unset variables keep the packages'
// defaults.
type engineEnv struct {
	Store     store.Config
	Worker    worker.Config
	Scheduler scheduler.Config
}

// engineFromEnv reads the engine's variables; an error names the variable.
func engineFromEnv(getenv func(string) string, namespace string) (engineEnv, error) {
	var e engineEnv
	var errs []error
	unparsed := map[string]bool{} // set, but not a number or duration
	e.Store.Namespace = namespace
	intVar := func(name string, dst *int) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not an integer", name, v))
				unparsed[name] = true
				return
			}
			*dst = n
		}
	}
	floatVar := func(name string, dst *float64) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a number", name, v))
				unparsed[name] = true
				return
			}
			*dst = f
		}
	}
	// durVar accepts a Go duration ("90s") or plain seconds ("3600").
	durVar := func(name string, dst *time.Duration) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			if secs, err := strconv.ParseFloat(v, 64); err == nil {
				*dst = time.Duration(secs * float64(time.Second))
				return
			}
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a duration (e.g. 90s) or a number of seconds", name, v))
				unparsed[name] = true
				return
			}
			*dst = d
		}
	}
	intVar("MAX_RETRIES", &e.Store.DefaultMaxRetries)
	// a session's task index lives as long as the session (written by enqueue)
	durVar("TASKFLOW_SESSION_TTL", &e.Store.SessionIndexTTL)
	durVar("MAX_TASK_AGE", &e.Store.MaxTaskAge)
	floatVar("DEFAULT_RETRY_RATIO", &e.Store.RetryRatio)
	floatVar("RETRY_RATIO_WARNING", &e.Store.RetryRatioWarning)
	floatVar("RETRY_RATIO_CRITICAL", &e.Store.RetryRatioCritical)
	intVar("RETRY_QUEUE_WARNING", &e.Store.RetryQueueWarning)
	intVar("RETRY_QUEUE_CRITICAL", &e.Store.RetryQueueCritical)
	floatVar("CIRCUIT_FAILURE_THRESHOLD", &e.Worker.Breaker.FailureThreshold)
	intVar("CIRCUIT_VOLUME_THRESHOLD", &e.Worker.Breaker.VolumeThreshold)
	durVar("CIRCUIT_TIMEOUT", &e.Worker.Breaker.Timeout)
	durVar("TASKFLOW_LEASE", &e.Worker.Lease)
	durVar("TASKFLOW_TASK_TIMEOUT", &e.Worker.DefaultTimeout)
	intVar("TASKFLOW_FETCH_BATCH", &e.Worker.FetchBatch)
	floatVar("TASKFLOW_RETRY_SCALE", &e.Worker.Retry.Scale)
	if v := strings.TrimSpace(getenv("TASKFLOW_RETRY_SCHEDULES")); v != "" {
		sch, err := retry.ParseSchedules(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("TASKFLOW_RETRY_SCHEDULES: %w", err))
		}
		e.Worker.Retry.Schedules = sch
	}
	durVar("TASKFLOW_SCHEDULER_INTERVAL", &e.Scheduler.Interval)
	// retention: unset keeps the scheduler's defaults (24 h, DLQ 7 days);
	// 0 keeps finished tasks forever
	retention := func(name string, dst *time.Duration) {
		durVar(name, dst)
		if strings.TrimSpace(getenv(name)) != "" && *dst == 0 {
			*dst = -1
		}
	}
	retention("TASKFLOW_RETENTION", &e.Scheduler.Retention)
	retention("TASKFLOW_DLQ_RETENTION", &e.Scheduler.DLQRetention)
	// An explicit 0 must not fall back to the packages' defaults (their
	// zero value means unset): where 0 means something, pass the packages'
	// spelling of it; where it does not, say so.
	set := func(name string) bool { return strings.TrimSpace(getenv(name)) != "" && !unparsed[name] }
	if set("MAX_RETRIES") {
		switch {
		case e.Store.DefaultMaxRetries < 0:
			errs = append(errs, fmt.Errorf("MAX_RETRIES: %d must be 0 or more", e.Store.DefaultMaxRetries))
		case e.Store.DefaultMaxRetries == 0:
			e.Store.DefaultMaxRetries = -1 // store: no retries
		}
	}
	for name, r := range map[string]*float64{"DEFAULT_RETRY_RATIO": &e.Store.RetryRatio,
		"RETRY_RATIO_WARNING": &e.Store.RetryRatioWarning, "RETRY_RATIO_CRITICAL": &e.Store.RetryRatioCritical} {
		if !set(name) {
			continue
		}
		switch {
		case *r < 0 || *r > 1:
			errs = append(errs, fmt.Errorf("%s: %v must be within [0, 1]", name, *r))
		case *r == 0:
			*r = -1 // store: never retry-first
		}
	}
	if set("MAX_TASK_AGE") && e.Store.MaxTaskAge == 0 {
		e.Store.MaxTaskAge = -1 // 0: no age limit
	}
	for name, pos := range map[string]bool{
		"RETRY_QUEUE_WARNING": e.Store.RetryQueueWarning > 0, "RETRY_QUEUE_CRITICAL": e.Store.RetryQueueCritical > 0,
		"CIRCUIT_FAILURE_THRESHOLD": e.Worker.Breaker.FailureThreshold > 0, "CIRCUIT_VOLUME_THRESHOLD": e.Worker.Breaker.VolumeThreshold > 0,
		"CIRCUIT_TIMEOUT": e.Worker.Breaker.Timeout > 0, "TASKFLOW_LEASE": e.Worker.Lease > 0,
		"TASKFLOW_TASK_TIMEOUT": e.Worker.DefaultTimeout > 0, "TASKFLOW_FETCH_BATCH": e.Worker.FetchBatch > 0,
		"TASKFLOW_RETRY_SCALE": e.Worker.Retry.Scale > 0, "TASKFLOW_SCHEDULER_INTERVAL": e.Scheduler.Interval > 0,
		"TASKFLOW_SESSION_TTL": e.Store.SessionIndexTTL > 0,
	} {
		if set(name) && !pos {
			errs = append(errs, fmt.Errorf("%s: %q must be more than 0", name, strings.TrimSpace(getenv(name))))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return e, err
	}
	if err := e.Store.WithDefaults().Validate(); err != nil {
		return e, err
	}
	if err := e.Worker.WithDefaults().Validate(); err != nil {
		return e, err
	}
	return e, e.Scheduler.WithDefaults().Validate()
}

func init() {
	register("worker", func(m *Main) *cobra.Command {
		cfg, envErr := config.FromEnv(m.Getenv)
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
				if err := cfg.Validate(); err != nil {
					return err
				}
				if cfg.RedisURL == "" {
					return errors.New("REDIS_URL is not set: `taskflow worker` needs a Redis")
				}
				// Read again by the dispatcher; checked here so a bad value
				// stops the process before it connects.
				if _, err := orchestrator.InFlightFromEnv(m.Getenv); err != nil {
					return &ExitError{Code: 2, Err: err}
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
				return runEngine(cmd.Context(), m, rdb, eng, engineRun{
					workers: true, scheduler: withScheduler, concurrency: cfg.Concurrency,
					grace: cfg.ShutdownGrace, id: id, namespace: cfg.Namespace,
				})
			},
		}
		f := cmd.Flags()
		f.StringVar(&cfg.RedisURL, "redis-url", cfg.RedisURL, "Redis URL (REDIS_URL)")
		f.StringVar(&cfg.Namespace, "namespace", cfg.Namespace, "Redis key namespace (TASKFLOW_NAMESPACE)")
		f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "handler goroutines (TASKFLOW_CONCURRENCY)")
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
	id, namespace      string
}

// runEngine runs a worker and/or a scheduler until ctx ends. `taskflow
// dev` can call it too.
func runEngine(ctx context.Context, m *Main, rdb redis.UniversalClient, eng engineEnv, r engineRun) error {
	st, err := store.New(rdb, eng.Store)
	if err != nil {
		return err
	}
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
		mux, closeHandlers, err := openTaskMux(m, taskDeps{Redis: rdb, Namespace: r.namespace})
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
