package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/platform/seconds"
	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/task"
)

// SubmitInput is a request to create a task of any registered type.
type SubmitInput struct {
	TaskType   string          `json:"task_type" openapi:"required;example=summarize" jsonschema:"a registered task type"`
	Content    *string         `json:"content,omitempty" jsonschema:"input text (required for summarize)"`
	Params     json.RawMessage `json:"params,omitempty" openapi:"type=object" jsonschema:"handler parameters"`
	Priority   string          `json:"priority,omitempty" openapi:"enum=high|normal|low"`
	Timeout    *float64        `json:"timeout,omitempty" jsonschema:"seconds one attempt may run"`
	MaxRetries *int            `json:"max_retries,omitempty" jsonschema:"0..100; default 3"`
	RunAt      *string         `json:"run_at,omitempty" openapi:"format=date-time" jsonschema:"delay the first run until this time"`
	// Delay runs the task this many seconds from now (delayed
	// execution); an alternative to RunAt, not both.
	Delay *float64 `json:"delay,omitempty" jsonschema:"seconds from now to the first run (instead of run_at)"`
	// DependsOn lists tasks (the caller's own) that must complete first;
	// until then the task is PENDING with waiting_on.
	DependsOn []string `json:"depends_on,omitempty" openapi:"maxItems=100" jsonschema:"the caller's own tasks that must complete first; until then the task is PENDING with waiting_on. If one ends in the DLQ or CANCELLED, this task is cancelled"`
	// PartitionKey keeps the tasks that give the same key in one partition
	// of a deployment of several (TASKFLOW_PARTITIONS), so they are queued
	// FIFO together; without it a task's partition follows from its id.
	// It changes nothing with one partition.
	PartitionKey string `json:"partition_key,omitempty" openapi:"maxLength=200" jsonschema:"tasks giving the same key share a partition of a deployment split into several (TASKFLOW_PARTITIONS), so they are queued first in, first out together; without it a task's partition follows from its id. No effect with one partition"`
	// UniqueKey makes the task unique among its owner's (the session's;
	// deployment-wide callers share one scope): while a task with the key
	// is unfinished, or within UniqueFor seconds of its submit, a submit
	// with the key answers that task (duplicate) instead of creating one.
	UniqueKey string `json:"unique_key,omitempty" openapi:"maxLength=200" jsonschema:"while a task of yours with this key is PENDING or ACTIVE (or FAILED awaiting a retry, or TIMEOUT), or within unique_for seconds of its submit, this submit answers that task with duplicate: true instead of creating one"`
	// UniqueFor keeps UniqueKey held this many seconds after the submit,
	// even once the task has finished. Needs UniqueKey.
	UniqueFor *float64 `json:"unique_for,omitempty" jsonschema:"seconds after its submit the unique_key stays held even once the task finished (needs unique_key; at most 30 days)"`
	// Queue is the named queue the task waits in; default: its task
	// type's default queue (TASKFLOW_TYPE_QUEUES), else "default".
	Queue string `json:"queue,omitempty" openapi:"maxLength=64;example=emails" jsonschema:"the named queue (^[a-z0-9][a-z0-9._-]{0,63}$); default: the task type's default queue, else default. A queue exists from its first task on"`
	// LimitKey is the key per-key limits count the task against.
	LimitKey string `json:"limit_key,omitempty" openapi:"maxLength=200;example=tenant-42" jsonschema:"the key per-key limits count this task against (a tenant, a customer)"`
}

// Limits of SubmitInput.
const (
	MaxTimeout    = 24 * time.Hour
	MaxMaxRetries = 100
	MaxRunAhead   = 30 * 24 * time.Hour
	// MaxPartitionKey is the longest partition_key, in bytes.
	MaxPartitionKey = 200
	// MaxUniqueKey is the longest unique_key, in bytes.
	MaxUniqueKey = 200
	// MaxUniqueFor is the longest unique_for.
	MaxUniqueFor = 30 * 24 * time.Hour
)

// TaskTypeSummarize is summarization task type.
const TaskTypeSummarize = "summarize"

// Submitted is the answer to a submit: TaskResponse.
type Submitted struct {
	TaskID string     `json:"task_id"`
	State  task.State `json:"state"`
	// Duplicate says nothing was created: the task is the one holding
	// the submit's unique_key (HTTP 200 rather than 201).
	Duplicate bool `json:"duplicate,omitempty"`
	// Task is the task as created (nil for one parked until its
	// dependencies complete); not part of the wire answer.
	Task *task.Task `json:"-"`
}

// Submit validates in and creates the task, owned by p's session (none for
// the admin).
func (s *Service) Submit(ctx context.Context, p auth.Principal, in SubmitInput) (Submitted, error) {
	if err := requirePrincipal(p); err != nil {
		return Submitted{}, err
	}
	req, err := s.validate(ctx, in)
	if err != nil {
		return Submitted{}, err
	}
	req.SessionID = p.SessionID
	ctx, span := startSubmit(ctx, req.Type, string(req.Priority), 1)
	defer span.End()
	req.Traceparent = tracing.Traceparent(ctx)
	if len(in.DependsOn) > 0 {
		sub, err := s.submitAfter(ctx, p, req, in.DependsOn)
		endSubmit(span, sub.TaskID, err)
		return sub, err
	}
	res, err := s.batch.enqueue(ctx, req)
	if err != nil {
		err = storeErr("", err)
		endSubmit(span, "", err)
		return Submitted{}, err
	}
	endSubmit(span, res.Task.ID, nil)
	return submitted(res), nil
}

// submitted is the answer for one enqueue outcome.
func submitted(r store.Enqueued) Submitted {
	if r.Duplicate {
		return Submitted{TaskID: r.Task.ID, State: r.Task.State, Duplicate: true}
	}
	return Submitted{TaskID: r.Task.ID, State: r.Task.State, Task: r.Task}
}

// startSubmit starts the producer span of a submit of n tasks (the trace
// each task then carries: its traceparent is this span's), after
// OpenTelemetry's messaging conventions: the destination is the priority
// queue ("normal" when the request names none).
func startSubmit(ctx context.Context, typ, priority string, n int) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, "submit", typ, trace.SpanKindProducer)
	if !span.IsRecording() {
		return ctx, span
	}
	if priority == "" {
		priority = string(task.PriorityNormal)
	}
	span.SetAttributes(append(tracing.Messaging("send", priority, ""), tracing.AttrOperationName.String("submit"), tracing.AttrTaskType.String(typ))...)
	if n > 1 {
		span.SetAttributes(tracing.AttrBatchCount.Int(n))
	}
	return ctx, span
}

// endSubmit records the created task's id, or the error, on span.
func endSubmit(span trace.Span, id string, err error) {
	if !span.IsRecording() {
		return
	}
	if id != "" {
		span.SetAttributes(tracing.AttrMessageID.String(id))
	}
	var e *Error
	if errors.As(err, &e) {
		tracing.Fail(span, err, e.Code)
	} else {
		tracing.Fail(span, err, "")
	}
}

// itemErr names item i of a SubmitMany call in err's field.
func itemErr(i int, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Field = fmt.Sprintf("items[%d]", i)
	if e.Field != "" {
		c.Field += "." + e.Field
	}
	return &c
}

// MaxSubmitMany is the most tasks one SubmitMany call creates.
const MaxSubmitMany = 10_000

// SubmitMany validates every input, then creates them all (none when one
// is refused: the error's Field names the item, "items[3].params.x"). The
// tasks without depends_on are written by the store's batched enqueue (one
// script call per chunk and partition), the others one by one. Answers are
// in the order of ins.
func (s *Service) SubmitMany(ctx context.Context, p auth.Principal, ins []SubmitInput) ([]Submitted, error) {
	if err := requirePrincipal(p); err != nil {
		return nil, err
	}
	if len(ins) > MaxSubmitMany {
		return nil, Unprocessable("items", "%d tasks in one call; at most %d", len(ins), MaxSubmitMany)
	}
	reqs := make([]store.EnqueueRequest, len(ins))
	for i, in := range ins {
		req, err := s.validate(ctx, in)
		if err != nil {
			return nil, itemErr(i, err)
		}
		req.SessionID = p.SessionID
		reqs[i] = req
	}
	// one submit span for the call: every task of it continues its trace
	typ, prio := "", ""
	if len(reqs) > 0 {
		typ, prio = reqs[0].Type, string(reqs[0].Priority)
	}
	ctx, span := startSubmit(ctx, typ, prio, len(reqs))
	defer span.End()
	if tp := tracing.Traceparent(ctx); tp != "" {
		for i := range reqs {
			reqs[i].Traceparent = tp
		}
	}
	out := make([]Submitted, len(ins))
	batch := make([]store.EnqueueRequest, 0, len(ins))
	at := make([]int, 0, len(ins))
	for i, in := range ins {
		if len(in.DependsOn) == 0 {
			batch = append(batch, reqs[i])
			at = append(at, i)
		}
	}
	res, err := s.st.EnqueueResults(ctx, batch)
	if err != nil {
		return nil, storeErr("", err)
	}
	for j, r := range res {
		out[at[j]] = submitted(r)
	}
	// then those that wait on others, which may be tasks of this call
	for i, in := range ins {
		if len(in.DependsOn) == 0 {
			continue
		}
		sub, err := s.submitAfter(ctx, p, reqs[i], in.DependsOn)
		if err != nil {
			return nil, itemErr(i, err)
		}
		out[i] = sub
	}
	return out, nil
}

func (s *Service) validate(ctx context.Context, in SubmitInput) (store.EnqueueRequest, error) {
	var r store.EnqueueRequest
	in.TaskType = strings.TrimSpace(in.TaskType)
	if in.TaskType == "" {
		return r, Unprocessable("task_type", "task_type is required")
	}
	if ok, types := s.knownType(ctx, in.TaskType); !ok {
		return r, &Error{Kind: KindUnprocessable, Code: "unknown_task_type", Field: "task_type",
			Message: fmt.Sprintf("no worker handles task_type %q (known: %s)", in.TaskType, strings.Join(types, ", "))}
	}
	r.Type = in.TaskType
	if in.Content != nil {
		if len(*in.Content) > s.cfg.MaxContentBytes {
			return r, TooLarge("content_too_large", "content", "content is %d bytes; the limit is %d", len(*in.Content), s.cfg.MaxContentBytes)
		}
		r.Content = *in.Content
	}
	if len(in.Params) > 0 && !bytes.Equal(bytes.TrimSpace(in.Params), []byte("null")) {
		trimmed := bytes.TrimSpace(in.Params)
		if len(trimmed) == 0 || trimmed[0] != '{' {
			return r, Unprocessable("params", "params must be a JSON object")
		}
		r.Params = trimmed
	}
	if err := s.checkParams(ctx, r.Type, r.Params); err != nil {
		return r, err
	}
	if in.TaskType == TaskTypeSummarize {
		if err := s.summarizeText(r); err != nil {
			return r, err
		}
	}
	prio, err := task.ParsePriority(in.Priority)
	if err != nil {
		return r, Unprocessable("priority", "%v", err)
	}
	r.Priority = prio
	if in.Timeout != nil {
		d, err := seconds.Within(*in.Timeout, time.Nanosecond, MaxTimeout)
		if err != nil {
			return r, Unprocessable("timeout", "timeout must be more than 0 and at most %d seconds (got %v)", int(MaxTimeout.Seconds()), *in.Timeout)
		}
		r.Timeout = d
	}
	if in.MaxRetries != nil {
		if *in.MaxRetries < 0 || *in.MaxRetries > MaxMaxRetries {
			return r, Unprocessable("max_retries", "max_retries must be between 0 and %d (got %d)", MaxMaxRetries, *in.MaxRetries)
		}
		n := *in.MaxRetries
		r.MaxRetries = &n
	}
	if len(in.PartitionKey) > MaxPartitionKey {
		return r, Unprocessable("partition_key", "partition_key must be at most %d characters (got %d)", MaxPartitionKey, len(in.PartitionKey))
	}
	r.PartitionKey = in.PartitionKey
	if len(in.UniqueKey) > MaxUniqueKey {
		return r, Unprocessable("unique_key", "unique_key must be at most %d bytes (got %d)", MaxUniqueKey, len(in.UniqueKey))
	}
	if in.UniqueKey != "" && len(in.DependsOn) > 0 {
		return r, Unprocessable("unique_key", "unique_key cannot be combined with depends_on")
	}
	r.UniqueKey = in.UniqueKey
	if in.UniqueFor != nil {
		if in.UniqueKey == "" {
			return r, Unprocessable("unique_for", "unique_for needs a unique_key")
		}
		d, err := seconds.Within(*in.UniqueFor, 0, MaxUniqueFor)
		if err != nil {
			return r, Unprocessable("unique_for", "unique_for must be between 0 and %d seconds (got %v)", int(MaxUniqueFor.Seconds()), *in.UniqueFor)
		}
		r.UniqueFor = d
	}
	r.Queue = in.Queue
	if r.Queue == "" {
		r.Queue = s.cfg.TypeQueues[r.Type]
	}
	if r.Queue != "" {
		if err := store.ValidQueueName(r.Queue); err != nil {
			return r, Unprocessable("queue", "queue must match ^[a-z0-9][a-z0-9._-]{0,63}$ (got %q)", truncate(r.Queue, 80))
		}
	}
	if len(in.LimitKey) > store.MaxLimitKey || strings.ContainsFunc(in.LimitKey, func(c rune) bool { return c < ' ' || c == 0x7f }) {
		return r, Unprocessable("limit_key", "limit_key must be at most %d bytes without control characters", store.MaxLimitKey)
	}
	r.LimitKey = in.LimitKey
	if in.RunAt != nil && *in.RunAt != "" {
		at, err := time.Parse(time.RFC3339Nano, *in.RunAt)
		if err != nil {
			return r, Unprocessable("run_at", "run_at must be an RFC 3339 time like 2026-01-02T15:04:05Z (got %q)", *in.RunAt)
		}
		if at.After(s.cfg.Now().Add(MaxRunAhead)) {
			return r, Unprocessable("run_at", "run_at is more than %d days ahead", int(MaxRunAhead.Hours()/24))
		}
		r.RunAt = at
	}
	if in.Delay != nil {
		if in.RunAt != nil && *in.RunAt != "" {
			return r, Unprocessable("delay", "give run_at or delay, not both")
		}
		d, err := seconds.Within(*in.Delay, 0, MaxRunAhead)
		if err != nil {
			hint := ""
			if *in.Delay > 1e9 { // 2001 onwards as Unix seconds (or milliseconds)
				hint = "; it looks like a timestamp: give run_at (RFC 3339) for a time"
			}
			return r, Unprocessable("delay", "delay must be between 0 and %d seconds (got %v)%s", int(MaxRunAhead.Seconds()), *in.Delay, hint)
		}
		if d > 0 {
			r.RunAt = s.cfg.Now().Add(d)
		}
	}
	return r, nil
}

// summarizeText checks where a summarize task's text is: in content or in
// params.content (generic creation), exactly one of the two, as the
// handler will read it (summarize.Handler refuses the others, permanently).
func (s *Service) summarizeText(r store.EnqueueRequest) error {
	var p struct {
		Content *string `json:"content"`
	}
	if len(r.Params) > 0 {
		_ = json.Unmarshal(r.Params, &p) // its type was checked with the params
	}
	inParams := p.Content != nil && *p.Content != ""
	switch {
	case r.Content != "" && inParams:
		return Unprocessable("params.content", "the text is given both as content and as params.content; give it once")
	case inParams && len(*p.Content) > s.cfg.MaxContentBytes:
		return TooLarge("content_too_large", "params.content", "params.content is %d bytes; the limit is %d", len(*p.Content), s.cfg.MaxContentBytes)
	case inParams && strings.TrimSpace(*p.Content) == "":
		return Unprocessable("params.content", "params.content is blank: the text to summarize")
	case !inParams && strings.TrimSpace(r.Content) == "":
		return Unprocessable("content", "content is required: the text to summarize (or params.content)")
	}
	return nil
}

// indexParked records a task that waits on others (not in the store yet)
// in its session's task index, so the session lists it; the store writes
// the entry again when the task is created.
func (s *Service) indexParked(ctx context.Context, id, sessionID string, at time.Time) error {
	return s.st.IndexSessionTask(ctx, sessionID, id, at, s.cfg.SessionTTL)
}

// TaskView is a task as the API shows it: the task's fields plus its
// timeout in seconds.
type TaskView struct {
	*task.Task
	TimeoutSeconds float64 `json:"timeout,omitempty"`
	// WaitingOn lists the tasks a task submitted with depends_on still
	// waits for (it is PENDING, not yet in a queue).
	WaitingOn []string `json:"waiting_on,omitempty"`
	// WaitingFor says why a PENDING task is not picked up when no service
	// runs for its type.
	WaitingFor *WaitingFor `json:"waiting_for,omitempty"`
}

// ViewOf wraps t for output.
func ViewOf(t *task.Task) TaskView {
	return TaskView{Task: t, TimeoutSeconds: t.Timeout.Seconds()}
}

// get loads a task and checks that p may see it.
func (s *Service) get(ctx context.Context, p auth.Principal, id string) (*task.Task, error) {
	if err := requirePrincipal(p); err != nil {
		return nil, err
	}
	if err := validTaskID(id); err != nil {
		return nil, err
	}
	t, err := s.st.Get(ctx, id)
	if err != nil {
		return nil, storeErr(id, err)
	}
	if err := authorize(p, t); err != nil {
		return nil, err
	}
	return t, nil
}

func validTaskID(id string) error {
	if id == "" || len(id) > 200 || strings.ContainsAny(id, " {},;\t\n\r") {
		return Invalid("invalid_parameter", "task_id", "task_id %q is not a valid task id", truncate(id, 64))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Get returns the task id if p may see it.
func (s *Service) Get(ctx context.Context, p auth.Principal, id string) (TaskView, error) {
	t, err := s.get(ctx, p, id)
	if errors.Is(err, ErrNotFound) {
		// not created yet: it may wait on other tasks
		pv, perr := s.parkedViews(ctx, []string{id})
		if perr != nil {
			return TaskView{}, storeErr(id, perr)
		}
		if v, ok := pv[id]; ok {
			if aerr := authorize(p, v.Task); aerr != nil {
				return TaskView{}, aerr
			}
			return v, nil
		}
	}
	if err != nil {
		return TaskView{}, err
	}
	v := ViewOf(t)
	v.WaitingFor = s.waitingFor(ctx, t)
	return v, nil
}

// Retry is manual retry: a FAILED or DLQ task goes back to
// PENDING in the retry queue with retry_count 0. Another state is a 409
// saying which state the task is in.
func (s *Service) Retry(ctx context.Context, p auth.Principal, id string) (Submitted, error) {
	if _, err := s.get(ctx, p, id); err != nil {
		return Submitted{}, err
	}
	err := s.st.Retry(ctx, id)
	var se *task.StateError
	if errors.As(err, &se) {
		return Submitted{}, &Error{Kind: KindConflict, Code: "task_not_retryable", Err: err,
			Message: fmt.Sprintf("task %s is %s: only FAILED or DLQ tasks can be retried%s", id, se.Have, retryHint(se.Have))}
	}
	if err != nil {
		return Submitted{}, storeErr(id, err)
	}
	return Submitted{TaskID: id, State: task.StatePending}, nil
}

func retryHint(st task.State) string {
	switch st {
	case task.StatePending, task.StateActive:
		return " (it has not failed: it is queued or running)"
	case task.StateCompleted:
		return " (it succeeded; submit a new task to run it again)"
	case task.StateCancelled:
		return " (it was cancelled; submit a new task)"
	case task.StateTimeout:
		return " (it is overdue but may still complete; cancel it first)"
	}
	return ""
}

// CancelResult says what a cancel did.
type CancelResult struct {
	TaskID string `json:"task_id"`
	// Outcome is "cancelled" (the task is CANCELLED now) or "requested"
	// (it is ACTIVE: its worker stops it and it ends CANCELLED).
	Outcome string     `json:"outcome" openapi:"enum=cancelled|requested"`
	State   task.State `json:"state"`
}

// Cancel cancels a PENDING, ACTIVE or TIMEOUT task.
func (s *Service) Cancel(ctx context.Context, p auth.Principal, id string) (CancelResult, error) {
	if _, err := s.get(ctx, p, id); err != nil {
		cancelled, perr := s.cancelParked(ctx, p, id, err)
		if perr != nil {
			return CancelResult{}, perr
		}
		if cancelled { // it waited on other tasks
			return CancelResult{TaskID: id, Outcome: string(store.Cancelled), State: task.StateCancelled}, nil
		}
		return CancelResult{}, err
	}
	out, err := s.st.Cancel(ctx, id)
	var se *task.StateError
	if errors.As(err, &se) {
		return CancelResult{}, &Error{Kind: KindConflict, Code: "task_not_cancellable", Err: err,
			Message: fmt.Sprintf("task %s is %s: only PENDING, ACTIVE or TIMEOUT tasks can be cancelled", id, se.Have)}
	}
	if err != nil {
		return CancelResult{}, storeErr(id, err)
	}
	st := task.StateCancelled
	if out == store.CancelRequested {
		st = task.StateActive
	}
	return CancelResult{TaskID: id, Outcome: string(out), State: st}, nil
}

// Delete removes a task. An ACTIVE task is refused with 409 task_active: a
// worker holds it, so deleting it would leave half a task behind; cancel
// it first (docs/api.md).
func (s *Service) Delete(ctx context.Context, p auth.Principal, id string) error {
	t, err := s.get(ctx, p, id)
	if errors.Is(err, ErrNotFound) {
		if v, perr := s.Get(ctx, p, id); perr == nil && len(v.WaitingOn) > 0 {
			return &Error{Kind: KindConflict, Code: "task_waiting",
				Message: fmt.Sprintf("task %s waits on other tasks; cancel it first (POST /api/v1/tasks/%s/cancel), then delete it", id, id)}
		}
	}
	if err != nil {
		return err
	}
	err = s.st.Delete(ctx, id)
	var se *task.StateError
	if errors.As(err, &se) {
		return &Error{Kind: KindConflict, Code: "task_active", Err: err,
			Message: fmt.Sprintf("task %s is %s: a worker holds it; cancel it first (POST /api/v1/tasks/%s/cancel), then delete it", id, se.Have, id)}
	}
	if err != nil {
		return storeErr(id, err)
	}
	if t.SessionID != "" {
		_ = s.st.UnindexSessionTasks(ctx, t.SessionID, id)
	}
	return nil
}

// RequeueOrphaned is operator action: ACTIVE tasks whose lease
// expired go back to their queue now.
func (s *Service) RequeueOrphaned(ctx context.Context, p auth.Principal) ([]string, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	ids, err := s.st.RequeueOrphaned(ctx)
	if err != nil {
		return nil, storeErr("", err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}
