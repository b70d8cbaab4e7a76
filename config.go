package taskflow

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/platform/app"
)

// Config is what a Client or a Worker needs to reach a deployment. The
// zero value of every field but RedisURL is a documented default; with
// Getenv set, the deployment's other settings (retry schedules,
// MAX_RETRIES, MAX_TASK_AGE, TASKFLOW_PARTITIONS, the lease, ...) are read
// from the same environment variables taskflow's own processes read
// (docs/operations.md), and a field set here overrides its variable.
type Config struct {
	// RedisURL is the deployment's Redis: redis://[user:password@]host:port/db,
	// rediss:// for TLS, or a Redis Cluster as
	// redis://h1:p1?addr=h2:p2&addr=h3:p3. Required (REDIS_URL with Getenv).
	RedisURL string
	// Namespace prefixes every key of the deployment; every process of
	// one deployment uses the same. Default "taskflow" (TASKFLOW_NAMESPACE).
	Namespace string
	// Partitions is the number of partitions the deployment's tasks are
	// spread over on a Redis Cluster (docs/guarantees.md, "Partitions");
	// it must match the deployment's. Default 1 (TASKFLOW_PARTITIONS).
	Partitions int

	// Concurrency is how many tasks a Worker runs at once. Default 10
	// (TASKFLOW_CONCURRENCY).
	Concurrency int
	// ShutdownGrace is how long a stopping Worker lets running handlers
	// finish before it cancels them and hands their tasks back to the
	// queue. Default 10s (TASKFLOW_SHUTDOWN_GRACE).
	ShutdownGrace time.Duration
	// Queues are the named queues a Worker serves, tried in a weighted
	// random order per fetch. Default: TASKFLOW_QUEUES with Getenv, else
	// the default queue alone.
	Queues []QueueConfig
	// StrictQueueOrder takes from Queues in their order: a queue only
	// while those before it give nothing. Default false
	// (TASKFLOW_QUEUES_STRICT).
	StrictQueueOrder bool
	// WorkerID names a Worker in tasks, logs and the workers view.
	// Default "<host>-<pid>-<random>".
	WorkerID string
	// NoScheduler stops a Worker from also running the scheduler (due
	// retries and delayed tasks to their queue, expired leases reaped, old
	// tasks retired) and the release of tasks enqueued with DependsOn once
	// their dependencies complete. Default false: every worker runs both;
	// any number may run at once (each step is idempotent). At least one
	// process of a deployment must run them.
	NoScheduler bool

	// Types are task types a Client accepts before any worker has
	// published them, with their params checked as declared (Check
	// included): e.g. the TypeInfos of the Mux its own process serves.
	// Default none: a Client accepts the types the deployment's workers
	// published and those in ExternalTypes.
	Types []TypeInfo
	// ExternalTypes are the types external services perform that a
	// Client may submit, as the API's TASKFLOW_EXTERNAL_TYPES (a type a
	// worker dispatches is known without it). Default none.
	ExternalTypes []string

	// Getenv, when set, reads the deployment's settings from the
	// environment, e.g. os.Getenv. Default nil: only this struct.
	Getenv func(string) string
	// Logger receives the worker's and scheduler's logs. Default
	// slog.Default().
	Logger *slog.Logger
}

// appConfig is the engine's whole configuration: the variables through
// Getenv (their defaults without it), then this struct's fields.
func (c Config) appConfig() (app.Config, error) {
	getenv := c.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	ac, err := app.Load(getenv)
	if err != nil {
		return ac, fmt.Errorf("taskflow: %w", err)
	}
	if c.RedisURL != "" {
		ac.RedisURL = c.RedisURL
	}
	if c.Namespace != "" {
		ac.Namespace = c.Namespace
	}
	if c.Partitions != 0 {
		ac.Engine.Store.Partitions = c.Partitions
	}
	if c.Concurrency != 0 {
		ac.Concurrency = c.Concurrency
	}
	if c.ShutdownGrace != 0 {
		ac.ShutdownGrace = c.ShutdownGrace
	}
	if len(c.Queues) > 0 {
		ac.Engine.Worker.Queues = make([]worker.QueueConfig, len(c.Queues))
		for i, q := range c.Queues {
			ac.Engine.Worker.Queues[i] = worker.QueueConfig{Name: q.Name, Weight: q.Weight, Concurrency: q.Concurrency}
		}
	}
	if c.StrictQueueOrder {
		ac.Engine.Worker.StrictOrder = true
	}
	if ac.RedisURL == "" {
		return ac, errors.New("taskflow: Config.RedisURL is required")
	}
	return ac, nil
}

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}
