package taskflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/taskflow/taskflow/internal/engine/depend"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/task"
)

// Client enqueues tasks and acts on them, with the rules of the HTTP API
// (the same service layer): params checked against the type's declared
// schema, content limits, dependencies, sessions. It is safe for
// concurrent use; concurrent Enqueue calls are written together in one
// script call, as the API's submits are.
type Client struct {
	app   *app.App
	owned bool // the client opened app and closes it
	svc   *service.Service
	auth  *auth.Authenticator
	admin auth.Principal
}

// NewClient connects to cfg's Redis and checks the deployment's layout.
// Close it when done.
func NewClient(ctx context.Context, cfg Config) (*Client, error) {
	ac, err := cfg.appConfig()
	if err != nil {
		return nil, err
	}
	a, err := app.Open(ctx, ac, cfg.logger())
	if err != nil {
		return nil, clientErr(err)
	}
	c, err := newClientOn(a, cfg)
	if err != nil {
		_ = a.Close()
		return nil, err
	}
	c.owned = true
	return c, nil
}

// newClientOn builds a client on a process's app (which it does not close).
func newClientOn(a *app.App, cfg Config) (*Client, error) {
	st := a.Store
	au, err := auth.New(a.Redis, auth.Config{Namespace: st.Namespace(), SessionTTL: a.Config.SessionTTL})
	if err != nil {
		return nil, err
	}
	local := make([]tasktypes.Type, 0, len(cfg.Types))
	for _, ti := range cfg.Types {
		local = append(local, declared(ti))
	}
	types, err := tasktypes.New(tasktypes.Config{Local: local, External: cfg.ExternalTypes, Redis: a.Redis,
		Keys: protocol.NewKeys(st.Namespace()), WorkerTypes: store.WorkerTypesKeyOf(st.Namespace()), Logger: a.Logger})
	if err != nil {
		return nil, fmt.Errorf("taskflow: %w", err)
	}
	svc, err := service.New(service.Config{Store: st, Auth: au, Types: types, MaxContentBytes: a.Config.MaxContentBytes,
		SessionTTL: a.Config.SessionTTL, IdempotencyTTL: a.Config.IdempotencyTTL, Dependencies: depend.New(st, depend.Config{Logger: a.Logger}), Logger: a.Logger,
		TypeQueues: a.Config.TypeQueues})
	if err != nil {
		return nil, err
	}
	return &Client{app: a, svc: svc, auth: au, admin: auth.Principal{Admin: true}}, nil
}

// declared is the registry's view of what a handler declares.
func declared(ti TypeInfo) tasktypes.Type {
	return tasktypes.Declared(ti.Name, ti.Description, ti.Params, ti.JSONSchema, ti.Check, ti.Notify)
}

// Close waits for the enqueues in flight and releases the connection.
func (c *Client) Close() error {
	c.svc.Close()
	if c.owned {
		return c.app.Close()
	}
	return nil
}

// Option sets something about a task at enqueue; every field of POST
// /api/v1/tasks has one.
type Option func(*submit) error

type submit struct {
	in      service.SubmitInput
	session string
	idemKey string
	dup     *bool
}

// Priority orders the task among those waiting: task.PriorityHigh,
// PriorityNormal (the default) or PriorityLow; low is never starved.
func Priority(p task.Priority) Option {
	return func(s *submit) error { s.in.Priority = string(p); return nil }
}

// Delay runs the task d from now (at most 30 days).
func Delay(d time.Duration) Option {
	return func(s *submit) error { v := d.Seconds(); s.in.Delay = &v; return nil }
}

// RunAt runs the task at t (at most 30 days ahead; a past time: at once).
func RunAt(t time.Time) Option {
	return func(s *submit) error { v := t.UTC().Format(time.RFC3339Nano); s.in.RunAt = &v; return nil }
}

// Timeout bounds each attempt (the handler's context deadline); at most
// 24 h. Default: the worker's (TASKFLOW_TASK_TIMEOUT, 5 min).
func Timeout(d time.Duration) Option {
	return func(s *submit) error { v := d.Seconds(); s.in.Timeout = &v; return nil }
}

// MaxRetries is how many times a failed attempt is retried before the
// task goes to the dead-letter queue (0..100). Default MAX_RETRIES (3).
func MaxRetries(n int) Option {
	return func(s *submit) error { s.in.MaxRetries = &n; return nil }
}

// DependsOn makes the task wait until the tasks ids have completed; it is
// cancelled if one of them fails for good.
func DependsOn(ids ...string) Option {
	return func(s *submit) error { s.in.DependsOn = append(s.in.DependsOn, ids...); return nil }
}

// PartitionKey keeps the tasks that give the same key in one partition of
// a deployment of several, so they are taken in order together.
func PartitionKey(key string) Option {
	return func(s *submit) error { s.in.PartitionKey = key; return nil }
}

// UniqueKey makes the task unique among its owner's (the Session's, or
// the deployment-wide callers' without one): while a task enqueued with
// key is unfinished (PENDING, ACTIVE, FAILED awaiting a retry, TIMEOUT),
// and for keepFor after it was enqueued even once it has finished (0: only
// while unfinished; at most 30 days), Enqueue creates nothing and returns
// that task instead (see Duplicate). Concurrent calls with one key create
// one task. docs/api.md, "Unique tasks".
func UniqueKey(key string, keepFor time.Duration) Option {
	return func(s *submit) error {
		s.in.UniqueKey = key
		if keepFor > 0 {
			v := keepFor.Seconds()
			s.in.UniqueFor = &v
		}
		return nil
	}
}

// IdempotencyKey makes the call idempotent, as the HTTP API's
// Idempotency-Key header does: a call with the same key and the same
// request (type, params, options) within TASKFLOW_IDEMPOTENCY_TTL (24 h)
// returns the task the first call created and creates nothing; with
// another request it fails with an *Error matching ErrInvalid (code
// idempotency_key_reused). Keys are the caller's: the Session's, or the
// deployment-wide callers'. Retry a call that failed with ErrUnavailable
// with its key, and at most one task exists for it. Not with DependsOn.
func IdempotencyKey(key string) Option {
	return func(s *submit) error { s.idemKey = key; return nil }
}

// Duplicate reports into *dst whether Enqueue created nothing: true when
// the task returned is the one holding the UniqueKey, or the first call's
// under an IdempotencyKey.
func Duplicate(dst *bool) Option {
	return func(s *submit) error { s.dup = dst; return nil }
}

// Session makes the task the session's (its id, as POST /api/v1/sessions
// answered it): the session is told when it ends, and sees it in its
// listings and over MCP.
func Session(id string) Option {
	return func(s *submit) error { s.session = id; return nil }
}

// Content is the task's text (e.g. what summarize summarizes), kept apart
// from its params.
func Content(text string) Option {
	return func(s *submit) error { s.in.Content = &text; return nil }
}

// Request is one task of EnqueueMany.
type Request struct {
	// Type is the task type.
	Type string
	// Params are the task's params: a struct or map (encoded as JSON),
	// json.RawMessage or []byte (used as they are), or nil.
	Params any
	// Options are the task's options.
	Options []Option
}

// Enqueue creates a task of taskType with params (see Request.Params) and
// returns it PENDING. A refused call creates nothing and says why: an
// *Error matching ErrInvalid names the field ("params.to", "task_type").
//
// With an OpenTelemetry TracerProvider installed (otel.SetTracerProvider)
// the call is a client span "enqueue TYPE" whose trace the task carries:
// its queue wait, attempts and outcome are spans of the same trace.
func (c *Client) Enqueue(ctx context.Context, taskType string, params any, opts ...Option) (t *task.Task, err error) {
	ctx, span := tracing.Start(ctx, "enqueue", taskType, trace.SpanKindClient)
	defer func() {
		if span.IsRecording() {
			span.SetAttributes(tracing.AttrSystem.String(tracing.System), tracing.AttrOperationName.String("enqueue"), tracing.AttrTaskType.String(taskType))
			if t != nil {
				span.SetAttributes(tracing.AttrMessageID.String(t.ID))
			}
			tracing.Fail(span, err, "")
		}
		span.End()
	}()
	s, err := prepare(Request{Type: taskType, Params: params, Options: opts})
	if err != nil {
		return nil, err
	}
	p, err := c.principal(ctx, s.session)
	if err != nil {
		return nil, err
	}
	sub, replayed, err := c.svc.SubmitOnce(ctx, p, s.in, s.idempotency())
	if err != nil {
		return nil, clientErr(err)
	}
	if s.dup != nil {
		*s.dup = sub.Duplicate || replayed
	}
	if sub.Task == nil && (sub.Duplicate || replayed) {
		// the existing task, whole (its stub when it is gone meanwhile)
		if v, err := c.svc.Get(ctx, p, sub.TaskID); err == nil && v.Task != nil {
			return v.Task, nil
		}
	}
	return created(sub, s.in.TaskType), nil
}

// idempotency is the call's key and its fingerprint: a hash of the
// request as the service receives it.
func (s submit) idempotency() service.Idempotency {
	if s.idemKey == "" {
		return service.Idempotency{}
	}
	b, _ := json.Marshal(s.in) // plain fields and raw JSON: cannot fail
	h := sha256.Sum256(b)
	return service.Idempotency{Key: s.idemKey, Fingerprint: "go:" + hex.EncodeToString(h[:])}
}

// BatchResult is what became of one Request of EnqueueBatch.
type BatchResult struct {
	// Task is the task created (its ID, Type and State), or for a
	// Duplicate the one holding the request's UniqueKey (ID and State);
	// nil when Err is set. Get a task for its other fields.
	Task *task.Task
	// Duplicate: nothing was created, the request's UniqueKey is held.
	Duplicate bool
	// Err says why the request was refused: an *Error matching
	// ErrInvalid, whose Field names it ("tasks[3].params.to").
	Err error
}

// EnqueueBatch creates up to 1000 tasks, each checked on its own: unlike
// EnqueueMany, a refused request does not stop the others; each gets its
// BatchResult, in order. The accepted ones are written together (one
// script call per 500 tasks and partition). With idempotencyKey != "" the
// call is idempotent as a whole (IdempotencyKey): a repeat with the same
// requests returns the first call's results and creates nothing. Every
// request must have the same Session option (or none); IdempotencyKey and
// Duplicate options of the requests are ignored.
func (c *Client) EnqueueBatch(ctx context.Context, reqs []Request, idempotencyKey string) ([]BatchResult, error) {
	ins, session, err := prepareAll(reqs, "tasks", "EnqueueBatch")
	if err != nil {
		return nil, err
	}
	out := make([]BatchResult, len(reqs))
	p, err := c.principal(ctx, session)
	if err != nil {
		return nil, err
	}
	var idem service.Idempotency
	if idempotencyKey != "" {
		b, _ := json.Marshal(ins)
		h := sha256.Sum256(b)
		idem = service.Idempotency{Key: idempotencyKey, Fingerprint: "go-batch:" + hex.EncodeToString(h[:])}
	}
	res, _, err := c.svc.SubmitBatch(ctx, p, ins, idem)
	if err != nil {
		return nil, clientErr(err)
	}
	for i, it := range res.Results {
		switch it.Status {
		case service.BatchInvalid:
			out[i].Err = &Error{Code: it.Error.Code, Field: it.Error.Field, Message: it.Error.Message, kind: ErrInvalid}
		default:
			out[i].Task = &task.Task{ID: it.TaskID, State: it.State}
			out[i].Duplicate = it.Status == service.BatchDuplicate
			if !out[i].Duplicate {
				out[i].Task.Type = ins[i].TaskType
			}
		}
	}
	return out, nil
}

// EnqueueMany creates every task of reqs, checking them all first: when
// one is refused none is created, and the *Error's Field names the item
// ("items[3].params.to"). The tasks are written by the store's batched
// enqueue (one script call per 500 tasks and partition); those with
// DependsOn follow one by one, and may depend on tasks of the same call.
// Every request must have the same Session option (or none).
func (c *Client) EnqueueMany(ctx context.Context, reqs []Request) ([]*task.Task, error) {
	ins, session, err := prepareAll(reqs, "items", "EnqueueMany")
	if err != nil {
		return nil, err
	}
	p, err := c.principal(ctx, session) // once for the call, not per item
	if err != nil {
		return nil, err
	}
	subs, err := c.svc.SubmitMany(ctx, p, ins)
	if err != nil {
		return nil, clientErr(err)
	}
	out := make([]*task.Task, len(subs))
	for i, sub := range subs {
		out[i] = created(sub, reqs[i].Type)
	}
	return out, nil
}

// prepareAll prepares the requests of one call (named call in errors): a
// refused one's *Error names it as list[i].field; all must have the same
// session, which it returns.
func prepareAll(reqs []Request, list, call string) ([]service.SubmitInput, string, error) {
	ins := make([]service.SubmitInput, len(reqs))
	session := ""
	for i, r := range reqs {
		s, err := prepare(r)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Field = fmt.Sprintf("%s[%d].%s", list, i, e.Field)
			}
			return nil, "", err
		}
		if i > 0 && s.session != session {
			return nil, "", &Error{Code: "validation_failed", Field: fmt.Sprintf("%s[%d]", list, i), kind: ErrInvalid,
				Message: "every task of one " + call + " call must have the same session"}
		}
		ins[i], session = s.in, s.session
	}
	return ins, session, nil
}

// prepare applies a request's params and options.
func prepare(r Request) (submit, error) {
	s := submit{in: service.SubmitInput{TaskType: r.Type}}
	switch p := r.Params.(type) {
	case nil:
	case json.RawMessage:
		s.in.Params = p
	case []byte:
		s.in.Params = p
	default:
		b, err := json.Marshal(p)
		if err != nil {
			return s, &Error{Code: "validation_failed", Field: "params", kind: ErrInvalid,
				Message: "params cannot be encoded as JSON: " + err.Error()}
		}
		s.in.Params = b
	}
	for _, o := range r.Options {
		if err := o(&s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// principal is whose the tasks are: the admin's, or a live session's.
func (c *Client) principal(ctx context.Context, session string) (auth.Principal, error) {
	if session == "" {
		return c.admin, nil
	}
	ok, err := c.auth.SessionExists(ctx, session)
	if err != nil {
		return auth.Principal{}, &Error{Code: "unavailable", Message: err.Error(), kind: ErrUnavailable, cause: err}
	}
	if !ok {
		return auth.Principal{}, &Error{Code: "session_not_found", Field: "session", kind: ErrInvalid,
			Message: fmt.Sprintf("no live session %q", session)}
	}
	return auth.Principal{SessionID: session}, nil
}

// created is the task a submit answered: as written, or (parked until its
// dependencies complete) its id, type and state.
func created(sub service.Submitted, typ string) *task.Task {
	if sub.Task != nil {
		return sub.Task
	}
	return &task.Task{ID: sub.TaskID, Type: typ, State: sub.State}
}

// Get returns the task. A task waiting on others (DependsOn) is PENDING
// with only its request's fields.
func (c *Client) Get(ctx context.Context, id string) (*task.Task, error) {
	v, err := c.svc.Get(ctx, c.admin, id)
	if err != nil {
		return nil, clientErr(err)
	}
	return v.Task, nil
}

// Wait returns the task once it has ended: COMPLETED (its Result is the
// handler's), or an error — a *TaskError matching ErrTaskFailed for a
// task in the dead-letter queue, ErrTaskCancelled for a cancelled one —
// or ctx's error when ctx ends first. It polls the task, every few ms at
// first and at most every 250 ms.
func (c *Client) Wait(ctx context.Context, id string) (*task.Task, error) {
	delay := 2 * time.Millisecond
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
		t, err := c.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		switch t.State {
		case task.StateCompleted:
			return t, nil
		case task.StateDLQ, task.StateCancelled:
			return t, &TaskError{Task: t}
		}
		timer.Reset(delay)
		delay = min(delay*2, 250*time.Millisecond)
	}
}

// Cancel cancels a PENDING, ACTIVE or TIMEOUT task: a waiting one ends
// CANCELLED at once (done is true); a running one's handler context is
// cancelled (cause task.ErrCancelRequested) and the task ends CANCELLED
// when the handler returns (done is false). A task in another state is an
// ErrConflict.
func (c *Client) Cancel(ctx context.Context, id string) (done bool, err error) {
	r, err := c.svc.Cancel(ctx, c.admin, id)
	if err != nil {
		return false, clientErr(err)
	}
	return r.State == task.StateCancelled, nil
}

// Retry queues a FAILED or dead-lettered task again, with its retries
// reset; another state is an ErrConflict.
func (c *Client) Retry(ctx context.Context, id string) error {
	_, err := c.svc.Retry(ctx, c.admin, id)
	return clientErr(err)
}

// Delete removes a task that is not ACTIVE (cancel a running one first:
// ErrConflict).
func (c *Client) Delete(ctx context.Context, id string) error {
	return clientErr(c.svc.Delete(ctx, c.admin, id))
}
