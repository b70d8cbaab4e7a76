package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/taskflow/taskflow/internal/engine/breaker"
	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/engine/store"
)

// Config configures a Worker.
type Config struct {
	// ID names this worker process in tasks and the list of live workers.
	// Default "<hostname>-<pid>-<random>". Must not contain , or ;.
	ID string
	// Concurrency is the number of handler goroutines. Default 10.
	Concurrency int
	// FetchBatch is the most tasks taken per fetch script call (bounded by
	// the free handler slots). Default 64.
	FetchBatch int
	// Prefetch is how many fetched tasks may wait in the worker for a free
	// handler, beyond Concurrency: fetches are then up to FetchBatch even
	// when few handlers are free (a deep queue drains in larger batches).
	// Prefetched tasks are ACTIVE and leased while they wait, so keep it 0
	// for long tasks shared by many workers. Default 0.
	Prefetch int
	// FetchWait is how long the fetch loop, while the queue is deep,
	// waits for more handlers to become free so that one fetch takes a
	// bigger batch. Negative disables the wait. Default 1ms.
	FetchWait time.Duration
	// Lease is how long a task stays ours without a heartbeat; after it the
	// reaper hands the task to another worker. Default 30s.
	Lease time.Duration
	// HeartbeatInterval renews the leases of running tasks and publishes
	// the worker's info. Default Lease/3.
	HeartbeatInterval time.Duration
	// DefaultTimeout bounds an attempt of a task that sets no timeout (its
	// handler's context deadline). Default 5m.
	DefaultTimeout time.Duration
	// ShutdownGrace is how long running handlers may finish after Run's
	// context ends; the rest are cancelled and handed back. Default 10s.
	ShutdownGrace time.Duration
	// AckBatch is the most completions written per script call. Default 64.
	AckBatch int
	// IdleWait is how long an idle worker blocks on the wake-up list before
	// it fetches anyway (a safety net: wake-ups normally arrive at once).
	// Default 1s (the minimum Redis blocking timeout go-redis sends).
	IdleWait time.Duration
	// Dependencies maps a task type to the outside dependency it needs;
	// while that dependency's circuit breaker is open, such tasks wait
	// (rescheduled) without spending a retry. Default none.
	Dependencies map[string]string
	// HandOff says, for a fetched task's type, whether its handler only
	// hands the task to another holder and returns ErrHandedOff after a
	// round trip (the external path's dispatcher, while the type has room).
	// Such a task frees its handler slot at once and runs in a goroutine of
	// its own, at most HandOffConcurrency at once: a handful of slots would
	// otherwise cap the external path at a few tasks per round trip, and
	// the Concurrency of the worker's own handlers stays theirs. A task for
	// which it says false (the dispatcher's type is full: it would wait for
	// a place) holds a slot as any other, so a full type does not drain the
	// core's priority queues into the worker. Default nil: none.
	HandOff func(taskType string) bool
	// HandOffConcurrency bounds the HandOff tasks running at once (the
	// fetch loop waits when it is reached). Default 256.
	HandOffConcurrency int
	// HandOffRoom says how many more tasks HandOff would take now. While
	// the last fetch's tasks were all handed off, a fetch takes that many
	// more than the free slots (up to FetchBatch and the free HandOff
	// places): a few slots would otherwise cap the external path at a few
	// tasks per round trip. Nil: fetches take as many as there are free
	// slots.
	HandOffRoom func() int
	// FetchDispatch lets a fetch dispatch the tasks of some types itself,
	// in the fetch's own script call (store.FetchAndDispatch), instead of
	// starting them and passing them to their handler (which would hand
	// them off in a second call: the external path's dispatcher, one
	// partition). Such a task counts as started and handed off; it takes
	// no slot. A type with a Dependency is never dispatched so (its circuit
	// breaker is asked by the handler's path). Default nil: none.
	FetchDispatch FetchDispatcher
	// Breaker configures the per-dependency circuit breakers; its Clock
	// defaults to Clock.
	Breaker breaker.Config
	// Retry is the retry schedule policy.
	Retry retry.Policy
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
	// Clock gives the time written to tasks and, unless Breaker.Clock is
	// set, the circuit breakers' time; default clock.Real{}. Handler
	// deadlines and tickers use the real time.
	Clock clock.Clock
	// Queues are the named queues the worker serves. Default: the
	// default queue alone.
	Queues []QueueConfig
	// StrictOrder takes from Queues in their order: a queue only while
	// the ones before it give nothing (empty, paused, at a limit or at
	// their concurrency). Default false: the queues are tried in a
	// weighted random order per fetch (Weight), so each gets its share
	// while all have work.
	StrictOrder bool
}

// QueueConfig is one named queue a worker serves.
type QueueConfig struct {
	// Name is the queue (store.ValidQueueName).
	Name string
	// Weight is the queue's share of the fetches while several queues
	// have work (weighted order only). Default 1.
	Weight int
	// Concurrency is the most of the queue's tasks this worker runs at
	// once. Default 0: up to the worker's Concurrency. (The fleet-wide
	// figure is a limit: store.SetLimit.)
	Concurrency int
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.ID == "" {
		host, _ := os.Hostname()
		c.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:6])
	}
	if c.Concurrency == 0 {
		c.Concurrency = 10
	}
	if c.FetchBatch == 0 {
		c.FetchBatch = 64
	}
	if c.FetchWait == 0 {
		c.FetchWait = time.Millisecond
	}
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = c.Lease / 3
	}
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = 5 * time.Minute
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.AckBatch == 0 {
		c.AckBatch = 64
	}
	if c.IdleWait == 0 {
		c.IdleWait = time.Second
	}
	if c.HandOffConcurrency == 0 {
		c.HandOffConcurrency = 256
	}
	if len(c.Queues) == 0 {
		c.Queues = []QueueConfig{{Name: store.DefaultQueue}}
	} else {
		c.Queues = slices.Clone(c.Queues)
	}
	for i := range c.Queues {
		if c.Queues[i].Weight == 0 {
			c.Queues[i].Weight = 1
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Breaker.Clock == nil {
		c.Breaker.Clock = c.Clock
	}
	c.Breaker = c.Breaker.WithDefaults()
	c.Retry = c.Retry.WithDefaults()
	return c
}

// Validate says what is wrong with c (after WithDefaults).
func (c Config) Validate() error {
	var errs []error
	if strings.ContainsAny(c.ID, ",; \t\n") {
		errs = append(errs, fmt.Errorf("worker: ID %q must not contain , ; or spaces", c.ID))
	}
	if c.Concurrency < 1 || c.Concurrency > 10000 {
		errs = append(errs, fmt.Errorf("worker: Concurrency %d must be within [1, 10000]", c.Concurrency))
	}
	if c.Prefetch < 0 || c.Prefetch > 1000 {
		errs = append(errs, fmt.Errorf("worker: Prefetch %d must be within [0, 1000]", c.Prefetch))
	}
	if c.FetchBatch < 1 || c.FetchBatch > 1000 {
		errs = append(errs, fmt.Errorf("worker: FetchBatch %d must be within [1, 1000]", c.FetchBatch))
	}
	if c.HandOffConcurrency < 1 || c.HandOffConcurrency > 10000 {
		errs = append(errs, fmt.Errorf("worker: HandOffConcurrency %d must be within [1, 10000]", c.HandOffConcurrency))
	}
	if c.AckBatch < 1 || c.AckBatch > 1000 {
		errs = append(errs, fmt.Errorf("worker: AckBatch %d must be within [1, 1000]", c.AckBatch))
	}
	if c.Lease < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("worker: Lease %s must be at least 100ms", c.Lease))
	}
	if c.HeartbeatInterval <= 0 || c.HeartbeatInterval >= c.Lease {
		errs = append(errs, fmt.Errorf("worker: HeartbeatInterval %s must be positive and shorter than Lease %s", c.HeartbeatInterval, c.Lease))
	}
	if c.DefaultTimeout <= 0 || c.ShutdownGrace < 0 || c.IdleWait <= 0 {
		errs = append(errs, errors.New("worker: DefaultTimeout and IdleWait must be positive, ShutdownGrace not negative"))
	}
	seen := map[string]bool{}
	for _, q := range c.Queues {
		if err := store.ValidQueueName(q.Name); err != nil {
			errs = append(errs, fmt.Errorf("worker: Queues: %w", err))
		}
		if seen[q.Name] {
			errs = append(errs, fmt.Errorf("worker: Queues: %q listed twice", q.Name))
		}
		seen[q.Name] = true
		if q.Weight < 1 || q.Weight > 1000 {
			errs = append(errs, fmt.Errorf("worker: Queues: %q weight %d must be within [1, 1000]", q.Name, q.Weight))
		}
		if q.Concurrency < 0 {
			errs = append(errs, fmt.Errorf("worker: Queues: %q concurrency %d must not be negative", q.Name, q.Concurrency))
		}
	}
	if err := c.Breaker.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Retry.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// FetchDispatcher is Config.FetchDispatch: the external path's dispatcher.
type FetchDispatcher interface {
	// Plan says what a fetch of up to n tasks dispatches itself; nil:
	// nothing.
	Plan(ctx context.Context, n int) *store.FetchDispatch
	// Dispatched is told of the tasks a fetch dispatched.
	Dispatched(ds []store.Dispatched)
}
