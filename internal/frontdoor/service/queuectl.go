package service

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
)

// Named queues, pauses and limits (operator or admin; docs/api.md,
// "Queues, pauses and limits").

// PendingByPriority counts the tasks waiting in a queue's primary lists.
type PendingByPriority struct {
	High   int64 `json:"high"`
	Normal int64 `json:"normal"`
	Low    int64 `json:"low"`
}

// QueueView is one named queue: GET /api/v1/queues/{queue}.
type QueueView struct {
	Name    string            `json:"name" openapi:"example=default"`
	Paused  bool              `json:"paused"`
	Pending PendingByPriority `json:"pending"`
	Retry   int64             `json:"retry" jsonschema:"tasks waiting in its retry list"`
	// Scheduled counts its tasks in the scheduled set (delayed first
	// runs, retries not yet due), among the first 10,000 of each
	// partition.
	Scheduled int64 `json:"scheduled" jsonschema:"its delayed tasks and retries not yet due"`
	Active    int64 `json:"active" jsonschema:"attempts running"`
	// CompletedPerMin is the completions of the last 60 s.
	CompletedPerMin float64 `json:"completed_per_min"`
	// OldestPendingAge is how long the task at the head of its lists has
	// waited, in seconds (0 when none waits).
	OldestPendingAge float64     `json:"oldest_pending_age" jsonschema:"seconds the oldest waiting task has waited"`
	Limits           []LimitView `json:"limits" jsonschema:"the limits of scope queue on it"`
}

// QueueList is GET /api/v1/queues.
type QueueList struct {
	Queues []QueueView `json:"queues"`
	// PausedTaskTypes are the task types paused fleet-wide.
	PausedTaskTypes []string `json:"paused_task_types"`
	// Parked counts the tasks a paused task type or a limit holds back,
	// by scope ("t:<type>", "k:<limit key>"): they wait outside their
	// queue, in order, and go back to its head when they may start.
	Parked map[string]int64 `json:"parked"`
}

// RateView is a rate limit: at most Limit starts per Per seconds.
type RateView struct {
	Limit int     `json:"limit" openapi:"required;example=10"`
	Per   float64 `json:"per" openapi:"required;example=1" jsonschema:"seconds"`
}

// LimitView is one limit; PUT /api/v1/limits takes the same shape.
type LimitView struct {
	Scope string `json:"scope" openapi:"required;enum=task_type|queue|key"`
	// Name is the task type, the queue or the limit key; for scope key,
	// "*" gives every key without a limit of its own this one, each key
	// counted apart.
	Name        string    `json:"name" openapi:"required;example=summarize"`
	Rate        *RateView `json:"rate" jsonschema:"null for none"`
	Concurrency *int      `json:"concurrency" jsonschema:"the most running at once fleet-wide; null for none"`
}

// LimitInput is the body of PUT /api/v1/limits: a LimitView.
type LimitInput LimitView

// LimitList is GET /api/v1/limits.
type LimitList struct {
	Limits []LimitView `json:"limits"`
}

// PauseState answers a pause or resume.
type PauseState struct {
	Queue    string `json:"queue,omitempty"`
	TaskType string `json:"task_type,omitempty"`
	Paused   bool   `json:"paused"`
}

func limitView(l store.Limit) LimitView {
	v := LimitView{Scope: string(l.Scope), Name: l.Name, Concurrency: l.Concurrency}
	if l.Rate != nil {
		v.Rate = &RateView{Limit: l.Rate.Limit, Per: l.Rate.Per.Seconds()}
	}
	return v
}

func queueView(q store.QueueInfo) QueueView {
	v := QueueView{Name: q.Name, Paused: q.Paused, Retry: q.Retry, Scheduled: q.Scheduled, Active: q.Active,
		CompletedPerMin: math.Round(q.CompletedPerMin*10) / 10, OldestPendingAge: q.OldestPendingAge.Seconds(),
		Pending: PendingByPriority{High: q.Pending["high"], Normal: q.Pending["normal"], Low: q.Pending["low"]},
		Limits:  make([]LimitView, 0, len(q.Limits))}
	for _, l := range q.Limits {
		v.Limits = append(v.Limits, limitView(l))
	}
	return v
}

func queueErr(err error) error {
	if errors.Is(err, store.ErrNoQueue) {
		return &Error{Kind: KindNotFound, Code: "queue_not_found", Field: "queue", Message: err.Error(), Err: err}
	}
	var ve *store.ValidationError
	if errors.As(err, &ve) && ve.Field == "queue" {
		return &Error{Kind: KindNotFound, Code: "queue_not_found", Field: "queue", Message: "queue " + ve.Reason, Err: err}
	}
	return storeErr("", err)
}

// Queues lists the named queues with their depths, rates and limits.
func (s *Service) Queues(ctx context.Context, p auth.Principal) (QueueList, error) {
	if err := requireAdmin(p); err != nil {
		return QueueList{}, err
	}
	qs, err := s.st.Queues(ctx)
	if err != nil {
		return QueueList{}, storeErr("", err)
	}
	_, types, err := s.st.Paused(ctx)
	if err != nil {
		return QueueList{}, storeErr("", err)
	}
	parked, err := s.st.Parked(ctx)
	if err != nil {
		return QueueList{}, storeErr("", err)
	}
	out := QueueList{Queues: make([]QueueView, len(qs)), PausedTaskTypes: types, Parked: parked}
	if out.PausedTaskTypes == nil {
		out.PausedTaskTypes = []string{}
	}
	for i, q := range qs {
		out.Queues[i] = queueView(q)
	}
	return out, nil
}

// Queue returns one queue; one never used is 404 queue_not_found.
func (s *Service) Queue(ctx context.Context, p auth.Principal, name string) (QueueView, error) {
	if err := requireAdmin(p); err != nil {
		return QueueView{}, err
	}
	q, err := s.st.Queue(ctx, name)
	if err != nil {
		return QueueView{}, queueErr(err)
	}
	return queueView(*q), nil
}

// PauseQueue pauses (pause) or resumes a queue fleet-wide. A queue may be
// paused before its first task.
func (s *Service) PauseQueue(ctx context.Context, p auth.Principal, name string, pause bool) (PauseState, error) {
	if err := requireAdmin(p); err != nil {
		return PauseState{}, err
	}
	var err error
	if pause {
		err = s.st.PauseQueue(ctx, name)
	} else {
		err = s.st.ResumeQueue(ctx, name)
	}
	if err != nil {
		return PauseState{}, queueErr(err)
	}
	return PauseState{Queue: name, Paused: pause}, nil
}

// PauseTaskType pauses (pause) or resumes a task type fleet-wide.
func (s *Service) PauseTaskType(ctx context.Context, p auth.Principal, taskType string, pause bool) (PauseState, error) {
	if err := requireAdmin(p); err != nil {
		return PauseState{}, err
	}
	var err error
	if pause {
		err = s.st.PauseTaskType(ctx, taskType)
	} else {
		err = s.st.ResumeTaskType(ctx, taskType)
	}
	if err != nil {
		return PauseState{}, storeErr("", err)
	}
	return PauseState{TaskType: taskType, Paused: pause}, nil
}

// Limits lists the limits.
func (s *Service) Limits(ctx context.Context, p auth.Principal) (LimitList, error) {
	if err := requireAdmin(p); err != nil {
		return LimitList{}, err
	}
	ls, err := s.st.Limits(ctx)
	if err != nil {
		return LimitList{}, storeErr("", err)
	}
	out := LimitList{Limits: make([]LimitView, len(ls))}
	for i, l := range ls {
		out.Limits[i] = limitView(l)
	}
	return out, nil
}

// SetLimit creates or replaces the limit of in's scope and name; it
// applies fleet-wide at once.
func (s *Service) SetLimit(ctx context.Context, p auth.Principal, in LimitInput) (LimitView, error) {
	if err := requireAdmin(p); err != nil {
		return LimitView{}, err
	}
	l := store.Limit{Scope: store.LimitScope(in.Scope), Name: in.Name, Concurrency: in.Concurrency}
	if in.Rate != nil {
		if math.IsNaN(in.Rate.Per) || in.Rate.Per < 0.001 || in.Rate.Per > 86400 {
			return LimitView{}, Unprocessable("rate.per", "rate.per must be within [0.001, 86400] seconds (got %v)", in.Rate.Per)
		}
		l.Rate = &store.RateLimit{Limit: in.Rate.Limit, Per: time.Duration(in.Rate.Per * float64(time.Second))}
	}
	if err := s.st.SetLimit(ctx, l); err != nil {
		return LimitView{}, storeErr("", err)
	}
	return limitView(l), nil
}

// DeleteLimit removes a limit; deleted is false when there was none (the
// call is idempotent: a retried delete is no error).
func (s *Service) DeleteLimit(ctx context.Context, p auth.Principal, scope, name string) (deleted bool, err error) {
	if err := requireAdmin(p); err != nil {
		return false, err
	}
	sc, err := store.ParseLimitScope(scope)
	if err != nil {
		return false, Unprocessable("scope", "scope must be task_type, queue or key (got %q)", truncate(scope, 40))
	}
	if err := s.st.DeleteLimit(ctx, sc, name); err != nil {
		if errors.Is(err, store.ErrNoLimit) {
			return false, nil
		}
		return false, storeErr("", err)
	}
	return true, nil
}
