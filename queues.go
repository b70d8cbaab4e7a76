package taskflow

import (
	"context"
	"time"

	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// Named queues, pauses and limits (docs/api.md, "Queues, pauses and
// limits"): the Client's operator side, as the HTTP API's
// /api/v1/queues, /api/v1/task-types/{task_type}/pause and /api/v1/limits.
// Every change applies fleet-wide at once (the next fetch of every worker
// sees it) and is kept in Redis, so it survives restarts.

// Queue puts the task in the named queue (^[a-z0-9][a-z0-9._-]{0,63}$).
// Default: its task type's default queue (TASKFLOW_TYPE_QUEUES), else
// "default". A queue exists from its first task on; a Worker serves the
// queues of Config.Queues.
func Queue(name string) Option {
	return func(s *submit) error { s.in.Queue = name; return nil }
}

// LimitKey is the key per-key limits count the task against (a tenant, a
// customer; at most 200 bytes).
func LimitKey(key string) Option {
	return func(s *submit) error { s.in.LimitKey = key; return nil }
}

// QueueConfig is one named queue a Worker serves (Config.Queues).
type QueueConfig struct {
	// Name is the queue.
	Name string
	// Weight is its share of the fetches while several queues have work.
	// Default 1.
	Weight int
	// Concurrency is the most of its tasks the Worker runs at once.
	// Default 0: up to the Worker's Concurrency.
	Concurrency int
}

// QueueState is one named queue's state.
type QueueState = service.QueueView

// QueueList is every queue's state, the paused task types and the tasks
// held back (parked) by a pause or a limit, by scope.
type QueueList = service.QueueList

// LimitScope is what a limit counts: LimitTaskType, LimitQueue or
// LimitKeyScope.
type LimitScope string

// The limit scopes.
const (
	LimitTaskType LimitScope = "task_type"
	LimitQueue    LimitScope = "queue"
	// LimitKeyScope limits the tasks of one limit key (Name), or with
	// Name "*" every key apart.
	LimitKeyScope LimitScope = "key"
)

// Limit is a fleet-wide limit on the tasks of a task type, a queue or a
// limit key: at most Rate starts per RatePer, and/or at most Concurrency
// running at once, across every worker. A task over a limit waits in
// order, keeping its priority; it is not failed and spends no retry.
type Limit struct {
	Scope LimitScope
	Name  string
	// Rate and RatePer: at most Rate starts per RatePer (bursts up to
	// Rate). Rate 0: no rate limit.
	Rate    int
	RatePer time.Duration
	// Concurrency is the most running at once; nil: no concurrency limit.
	Concurrency *int
}

func (l Limit) view() service.LimitInput {
	in := service.LimitInput{Scope: string(l.Scope), Name: l.Name, Concurrency: l.Concurrency}
	if l.Rate != 0 || l.RatePer != 0 {
		in.Rate = &service.RateView{Limit: l.Rate, Per: l.RatePer.Seconds()}
	}
	return in
}

func limitOf(v service.LimitView) Limit {
	l := Limit{Scope: LimitScope(v.Scope), Name: v.Name, Concurrency: v.Concurrency}
	if v.Rate != nil {
		l.Rate, l.RatePer = v.Rate.Limit, time.Duration(v.Rate.Per*float64(time.Second))
	}
	return l
}

// Queues returns every named queue's state: depth by priority, retry,
// running, completions per minute, oldest waiting age, pause, limits.
func (c *Client) Queues(ctx context.Context) (QueueList, error) {
	out, err := c.svc.Queues(ctx, c.admin)
	return out, clientErr(err)
}

// QueueInfo returns one queue's state; ErrNotFound for a queue never used.
func (c *Client) QueueInfo(ctx context.Context, name string) (QueueState, error) {
	out, err := c.svc.Queue(ctx, c.admin, name)
	return out, clientErr(err)
}

// PauseQueue pauses a queue fleet-wide: once it returns no worker starts
// a task of it; its tasks stay queued in order, running ones finish.
func (c *Client) PauseQueue(ctx context.Context, name string) error {
	_, err := c.svc.PauseQueue(ctx, c.admin, name, true)
	return clientErr(err)
}

// ResumeQueue lifts a queue's pause.
func (c *Client) ResumeQueue(ctx context.Context, name string) error {
	_, err := c.svc.PauseQueue(ctx, c.admin, name, false)
	return clientErr(err)
}

// PauseTaskType pauses a task type fleet-wide, in every queue: its tasks
// wait in order while the others proceed.
func (c *Client) PauseTaskType(ctx context.Context, taskType string) error {
	_, err := c.svc.PauseTaskType(ctx, c.admin, taskType, true)
	return clientErr(err)
}

// ResumeTaskType lifts a task type's pause; its waiting tasks go back to
// the head of their queues, in order.
func (c *Client) ResumeTaskType(ctx context.Context, taskType string) error {
	_, err := c.svc.PauseTaskType(ctx, c.admin, taskType, false)
	return clientErr(err)
}

// SetLimit creates or replaces the limit of l's scope and name.
func (c *Client) SetLimit(ctx context.Context, l Limit) error {
	_, err := c.svc.SetLimit(ctx, c.admin, l.view())
	return clientErr(err)
}

// DeleteLimit removes a limit; deleted is false when there was none.
func (c *Client) DeleteLimit(ctx context.Context, scope LimitScope, name string) (deleted bool, err error) {
	deleted, err = c.svc.DeleteLimit(ctx, c.admin, string(scope), name)
	return deleted, clientErr(err)
}

// Limits lists the limits.
func (c *Client) Limits(ctx context.Context) ([]Limit, error) {
	ls, err := c.svc.Limits(ctx, c.admin)
	if err != nil {
		return nil, clientErr(err)
	}
	out := make([]Limit, len(ls.Limits))
	for i, v := range ls.Limits {
		out[i] = limitOf(v)
	}
	return out, nil
}
