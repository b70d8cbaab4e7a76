package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/stream"
	"github.com/taskflow/taskflow/internal/task"
	"github.com/taskflow/taskflow/internal/worker"
)

// DispatcherConfig configures a Dispatcher.
type DispatcherConfig struct {
	// Namespace is the deployment's key namespace. Default "taskflow".
	Namespace string
	// PollInterval is how often a timed-out task is checked for its late
	// outcome. Default 1s.
	PollInterval time.Duration
	// Retention of published events. Default 7 days.
	Retention time.Duration
	// Stop, when closed, ends the waits of timed-out tasks as Shutdown
	// does (a process closes it when it begins to stop). Optional.
	Stop <-chan struct{}
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (c DispatcherConfig) withDefaults() DispatcherConfig {
	if c.Namespace == "" {
		c.Namespace = "taskflow"
	}
	if c.PollInterval == 0 {
		c.PollInterval = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Dispatcher is the worker handler of every task type an external service
// performs. A worker fetches the task as for any type (so priorities,
// scheduled runs, retries and leases are the core's); the dispatcher
// publishes task.create with the attempt's lease token and then holds the
// attempt while the service works. The orchestrator applies the service's
// outcome with that token; the worker's next heartbeat then finds the lease
// gone and the dispatcher returns without the worker writing anything.
//
// When the attempt's deadline (the task's timeout) passes first, the
// dispatcher marks the task TIMEOUT and publishes task.timeout; it keeps
// the attempt until the late outcome is applied or the task is cancelled.
// When the task is cancelled, it publishes task.cancel for the service and
// returns, and the worker ends the task CANCELLED.
type Dispatcher struct {
	st  *store.Store
	rdb redis.UniversalClient
	cfg DispatcherConfig
	sk  stream.Keys
	k   keys
	pub *stream.Publisher

	stopOnce sync.Once
	stop     chan struct{}
}

// NewDispatcher returns the dispatcher of st's namespace.
func NewDispatcher(st *store.Store, cfg DispatcherConfig) *Dispatcher {
	cfg = cfg.withDefaults()
	return &Dispatcher{st: st, rdb: st.Client(), cfg: cfg, sk: stream.NewKeys(cfg.Namespace), k: newKeys(cfg.Namespace),
		pub: stream.NewPublisher(st.Client(), cfg.Retention, cfg.Now), stop: make(chan struct{})}
}

// Shutdown ends the waits of timed-out tasks (their attempts are failed
// as transient, so they are retried after the process restarts). Call it
// when the process begins to stop: a worker waits for its handlers.
func (d *Dispatcher) Shutdown() { d.stopOnce.Do(func() { close(d.stop) }) }

// Register makes d the handler of each type on mux.
func (d *Dispatcher) Register(mux *worker.Mux, types ...string) {
	for _, t := range types {
		mux.Handle(t, d)
	}
}

// ProcessTask implements worker.Handler.
func (d *Dispatcher) ProcessTask(ctx context.Context, t *task.Task) (json.RawMessage, error) {
	bg := context.WithoutCancel(ctx)
	if t.Lease == "" {
		return nil, task.Permanent(errors.New("dispatch: the task has no lease token"))
	}
	params := t.Params
	if len(params) == 0 {
		params = json.RawMessage("null")
	}
	e, err := stream.New(stream.TypeCreate, d.cfg.Now(), stream.CreateData{
		TaskID: t.ID, TaskType: t.Type, Params: params, SessionID: t.SessionID,
		Timeout: int(t.Timeout / time.Second), Priority: string(t.Priority), CreatedBy: "agent",
		Attempt: t.RetryCount + 1, Token: t.Lease,
	})
	if err != nil {
		return nil, task.Permanent(fmt.Errorf("dispatch: %w", err))
	}
	if _, err := e.Unmarshal(); err != nil { // e.g. a task type the protocol cannot carry
		return nil, task.Permanent(fmt.Errorf("dispatch: %w", err))
	}
	_, err = d.rdb.TxPipelined(bg, func(p redis.Pipeliner) error {
		p.Set(bg, d.k.dispatch(t.ID), t.Lease, 7*24*time.Hour)
		p.XAdd(bg, d.pub.Args(d.sk.Create(), e))
		return nil
	})
	if err != nil {
		return nil, task.Transient(task.ErrTypeServiceUnavailable, fmt.Errorf("dispatch: publish: %w", err))
	}
	d.cfg.Logger.Debug("Event published", "stream", d.sk.Create(), "event_id", e.ID)
	d.cfg.Logger.Info("Task dispatched", "task_id", t.ID, "task_type", t.Type, "attempt", t.RetryCount+1)

	<-ctx.Done()
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, worker.ErrCancelRequested):
		d.publishCancel(bg, t.ID, "cancelled")
		return nil, task.Cancel(cause)
	case errors.Is(cause, context.DeadlineExceeded):
		return d.timedOut(bg, t)
	}
	// Lease lost (the outcome was applied, or the task was reaped) or the
	// worker is stopping: the worker decides what to write.
	return nil, cause
}

func (d *Dispatcher) publishCancel(ctx context.Context, id, reason string) {
	e, err := stream.New(stream.TypeCancel, d.cfg.Now(), stream.CancelData{TaskID: id, Reason: reason})
	if err == nil {
		_, err = d.pub.Publish(ctx, d.sk.Cancel(), e)
	}
	if err != nil {
		d.cfg.Logger.Warn("cancel event not published", "task_id", id, "err", err)
	}
}

// timedOut marks the task TIMEOUT, publishes task.timeout and waits for the
// late outcome (or a cancel) by polling the task.
func (d *Dispatcher) timedOut(ctx context.Context, t *task.Task) (json.RawMessage, error) {
	elapsed := d.cfg.Now().Sub(t.CreatedAt)
	if t.StartedAt != nil {
		elapsed = d.cfg.Now().Sub(*t.StartedAt)
	}
	if err := d.st.MarkTimeout(ctx, t.ID, t.Lease); err != nil {
		// The outcome arrived at the same moment, or the lease is gone.
		return nil, fmt.Errorf("dispatch: mark timeout: %w", err)
	}
	e, err := stream.New(stream.TypeTimeout, d.cfg.Now(), stream.TimeoutData{
		TaskID: t.ID, Status: "timeout", ElapsedMS: elapsed.Milliseconds(),
		Message: fmt.Sprintf("Task exceeded timeout of %d seconds", int(t.Timeout/time.Second)),
	})
	if err == nil {
		_, err = d.pub.Publish(ctx, d.sk.Timeout(), e)
	}
	if err != nil {
		d.cfg.Logger.Warn("timeout event not published", "task_id", t.ID, "err", err)
	}
	d.cfg.Logger.Warn("Task timeout", "task_id", t.ID, "elapsed", elapsed.Milliseconds())
	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-d.stop:
			return nil, task.Transient(task.ErrTypeServiceUnavailable, errors.New("dispatcher stopping while the task was overdue"))
		case <-d.cfg.Stop:
			return nil, task.Transient(task.ErrTypeServiceUnavailable, errors.New("dispatcher stopping while the task was overdue"))
		}
		cur, err := d.st.Get(ctx, t.ID)
		if errors.Is(err, task.ErrNotFound) {
			return nil, task.Cancel(err)
		}
		if err != nil {
			continue
		}
		if cur.State == task.StateCancelled {
			d.publishCancel(ctx, t.ID, "cancelled")
		}
		if cur.State != task.StateTimeout || cur.Lease != t.Lease {
			// Applied by the orchestrator (or cancelled): nothing left to
			// write; the worker's write of this return is refused by the
			// store's state guard.
			return nil, task.Cancel(fmt.Errorf("task left TIMEOUT as %s", cur.State))
		}
	}
}
