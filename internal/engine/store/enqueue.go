package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/taskflow/taskflow/task"
)

// EnqueueRequest describes a task to create. Only Type is required.
type EnqueueRequest struct {
	// ID is a caller-chosen task id; empty means a new UUIDv7. An id that
	// exists already fails with task.ErrDuplicateTaskID.
	ID string
	// Type is the task_type a worker handler is registered for.
	Type string
	// Content is the task's input text (content).
	Content string
	// Params is a JSON value for the handler (parameters).
	Params json.RawMessage
	// SessionID is the session that owns the task, if any.
	SessionID string
	// Priority chooses the primary queue; empty means normal.
	Priority task.Priority
	// Timeout bounds one attempt (the handler's context deadline); 0 means
	// the worker's default.
	Timeout time.Duration
	// MaxRetries overrides the store's DefaultMaxRetries when not nil.
	MaxRetries *int
	// RunAt delays the first run: a future time puts the task in
	// tasks:scheduled, moved to its primary queue when due.
	RunAt time.Time
	// PartitionKey, when set, places the task in the partition of the key
	// rather than of a random id, so the tasks given one key are queued
	// FIFO together (per priority) in a deployment of several partitions.
	// The new id is drawn until it falls in that partition; a caller-chosen
	// ID must already fall there. At most 200 characters.
	PartitionKey string
	// Traceparent is the W3C trace context the task continues
	// (tracing.Traceparent of the submit's span); "" for none. It is
	// stored in the task's hash with the enqueue's own write.
	Traceparent string
	// Queue is the named queue the task waits in (ValidQueueName); ""
	// means DefaultQueue. A queue exists from its first task on.
	Queue string
	// LimitKey is the key per-key limits count the task against (a
	// tenant, a customer): at most 200 bytes, no control characters; ""
	// for none.
	LimitKey string
}

const maxIDLen = 200

func validID(id string) error {
	if id == "" || len(id) > maxIDLen {
		return &ValidationError{Field: "task_id", Reason: fmt.Sprintf("must be 1 to %d characters", maxIDLen)}
	}
	for _, r := range id {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("{},;", r) {
			return &ValidationError{Field: "task_id", Reason: fmt.Sprintf("must not contain spaces, control characters or any of {},; (got %q)", id)}
		}
	}
	return nil
}

func (s *Store) prepare(r EnqueueRequest) (EnqueueRequest, error) {
	if strings.TrimSpace(r.Type) == "" {
		return r, &ValidationError{Field: "task_type", Reason: "is required"}
	}
	if len(r.Type) > 200 || strings.ContainsAny(r.Type, "\x1e\x1f") {
		return r, &ValidationError{Field: "task_type", Reason: "must be at most 200 characters without control separators"}
	}
	if strings.ContainsAny(r.SessionID, "\x1e\x1f") || len(r.SessionID) > 200 {
		return r, &ValidationError{Field: "session_id", Reason: "must be at most 200 characters without control separators"}
	}
	if len(r.PartitionKey) > maxIDLen {
		return r, &ValidationError{Field: "partition_key", Reason: fmt.Sprintf("must be at most %d characters", maxIDLen)}
	}
	n := len(s.parts)
	want := -1
	if r.PartitionKey != "" {
		want = PartitionOf(r.PartitionKey, n)
	}
	if r.ID == "" {
		// a task with neither id nor partition key may go to any
		// partition: while one is marked down, it goes to one that is not
		// (as a keyless message goes to an available partition), so its
		// submit does not wait for a failover
		avoidDown := want < 0 && n > 1 && s.anyUp()
		for draw := 0; ; draw++ {
			id, err := uuid.NewV7()
			if err != nil {
				return r, fmt.Errorf("store: new task id: %w", err)
			}
			r.ID = id.String()
			p := PartitionOf(r.ID, n)
			if want >= 0 && p != want {
				continue // a random id falls in the wanted partition once in n draws
			}
			if avoidDown && s.isDown(p) && draw < 64*n {
				continue
			}
			break
		}
	} else if err := validID(r.ID); err != nil {
		return r, err
	} else if want >= 0 && PartitionOf(r.ID, n) != want {
		return r, &ValidationError{Field: "partition_key", Reason: fmt.Sprintf("task_id %q falls in partition %d and the partition key in %d: leave out the task_id or the partition key", r.ID, PartitionOf(r.ID, n), want)}
	}
	if r.Queue == "" {
		r.Queue = DefaultQueue
	} else if err := ValidQueueName(r.Queue); err != nil {
		return r, err
	}
	if err := validLimitKey(r.LimitKey); err != nil {
		return r, err
	}
	p, err := task.ParsePriority(string(r.Priority))
	if err != nil {
		return r, &ValidationError{Field: "priority", Reason: err.Error()}
	}
	r.Priority = p
	if len(r.Params) > 0 && !json.Valid(r.Params) {
		return r, &ValidationError{Field: "params", Reason: "must be valid JSON"}
	}
	if r.Timeout < 0 {
		return r, &ValidationError{Field: "timeout", Reason: "must not be negative"}
	}
	if r.MaxRetries != nil && *r.MaxRetries < 0 {
		return r, &ValidationError{Field: "max_retries", Reason: "must not be negative"}
	}
	return r, nil
}

// Enqueue creates one task in PENDING and queues it (or schedules it when
// RunAt is in the future). It returns the task as stored.
func (s *Store) Enqueue(ctx context.Context, r EnqueueRequest) (*task.Task, error) {
	out, err := s.EnqueueBatch(ctx, []EnqueueRequest{r})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// EnqueueBatch creates many tasks with one script call per EnqueueChunk
// tasks of each partition (the partitions' calls at once). Each chunk is
// all-or-nothing: a duplicate id fails its chunk with
// task.ErrDuplicateTaskID (other chunks may stay created); a request that
// does not validate fails the whole batch before anything is written, with
// a *ValidationError whose Field is prefixed by the request's index
// ("[3].task_type") when there are several.
func (s *Store) EnqueueBatch(ctx context.Context, reqs []EnqueueRequest) ([]*task.Task, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	prepared := make([]EnqueueRequest, len(reqs))
	seen := make(map[string]struct{}, len(reqs))
	for i, r := range reqs {
		p, err := s.prepare(r)
		if err != nil {
			if ve, ok := err.(*ValidationError); ok && len(reqs) > 1 {
				return nil, &ValidationError{Field: fmt.Sprintf("[%d].%s", i, ve.Field), Reason: ve.Reason}
			}
			return nil, err
		}
		if _, dup := seen[p.ID]; dup {
			return nil, fmt.Errorf("task %s appears twice in the batch: %w", p.ID, task.ErrDuplicateTaskID)
		}
		seen[p.ID] = struct{}{}
		prepared[i] = p
	}
	now := s.cfg.Clock.Now()
	call := s.enqueueCallID()
	if len(s.parts) == 1 {
		if err := s.enqueueIn(ctx, s.parts[0], prepared, now, call); err != nil {
			return nil, err
		}
	} else {
		// one script call per partition (per chunk), at once
		err := s.eachPartition(len(prepared), func(i int) string { return prepared[i].ID }, func(p int, k keys, at []int) error {
			rs := make([]EnqueueRequest, len(at))
			for n, i := range at {
				rs[n] = prepared[i]
			}
			return s.onPartition(ctx, p, func(ctx context.Context) error { return s.enqueueIn(ctx, k, rs, now, call) })
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]*task.Task, len(prepared))
	for i, r := range prepared {
		out[i] = s.created(r, now)
	}
	return out, nil
}

// enqueueIn writes reqs, all of partition k, one script call per
// EnqueueChunk.
func (s *Store) enqueueIn(ctx context.Context, k keys, prepared []EnqueueRequest, now time.Time, call string) error {
	// the tasks of one named queue go in one script call (its lists and
	// wake-up are in KEYS); a batch all of the default queue is one group
	if err := s.registerQueues(ctx, prepared); err != nil {
		return err
	}
	for _, group := range byQueue(prepared) {
		if err := s.enqueueQueue(ctx, k, group, now, call); err != nil {
			return err
		}
	}
	return nil
}

// enqueueQueue is enqueueIn for tasks all of one named queue.
func (s *Store) enqueueQueue(ctx context.Context, k keys, prepared []EnqueueRequest, now time.Time, call string) error {
	nowMS := ms(now)
	q := k.named(prepared[0].Queue)
	for start := 0; start < len(prepared); start += s.cfg.EnqueueChunk {
		chunk := prepared[start:min(start+s.cfg.EnqueueChunk, len(prepared))]
		keys := make([]string, 0, 7+len(chunk))
		keys = append(keys, k.stateIndex(task.StatePending), k.scheduled(), k.events(), q.wake(),
			q.primary(task.PriorityHigh), q.primary(task.PriorityNormal), q.primary(task.PriorityLow))
		args := make([]any, 0, 3+len(chunk)*14)
		args = append(args, nowMS, s.cfg.EventStreamMaxLen, len(chunk))
		for _, r := range chunk {
			keys = append(keys, k.task(r.ID))
			runAt := int64(0)
			if r.RunAt.After(now) {
				runAt = ms(r.RunAt)
			}
			maxRetries := s.cfg.maxRetries()
			if r.MaxRetries != nil {
				maxRetries = *r.MaxRetries
			}
			fields := []any{fMaxRetries, strconv.Itoa(maxRetries), fEnqueueCall, call}
			if r.Content != "" {
				fields = append(fields, fContent, r.Content)
			}
			if len(r.Params) > 0 {
				fields = append(fields, fParams, string(r.Params))
			}
			if r.Timeout > 0 {
				fields = append(fields, fTimeout, r.Timeout.Milliseconds())
			}
			if r.Traceparent != "" {
				fields = append(fields, fTraceparent, r.Traceparent)
			}
			if r.Queue != DefaultQueue {
				fields = append(fields, fQueue, r.Queue)
			}
			if r.LimitKey != "" {
				fields = append(fields, fLimitKey, r.LimitKey)
			}
			args = append(args, r.ID, string(r.Priority), runAt, r.Type, r.SessionID, len(fields)/2)
			args = append(args, fields...)
		}
		for _, r := range chunk { // the sessions' task indexes, written with the tasks
			if r.SessionID != "" {
				keys = append(keys, k.sessionTasks(r.SessionID))
			}
		}
		args = append(args, call, s.cfg.SessionIndexTTL.Milliseconds())
		if err := scriptEnqueue.Run(ctx, s.rdb, keys, args...).Err(); err != nil {
			return scriptErr("", err)
		}
	}
	return nil
}

// enqueueCallID names one enqueue call (all its chunks): the process's
// random prefix and a counter, unique across the processes of a
// deployment without a random read per call.
func (s *Store) enqueueCallID() string {
	return s.callPrefix + strconv.FormatUint(s.calls.Add(1), 36)
}

// created is the Task as enqueue wrote it.
func (s *Store) created(r EnqueueRequest, now time.Time) *task.Task {
	now = time.UnixMilli(ms(now)).UTC()
	maxRetries := s.cfg.maxRetries()
	if r.MaxRetries != nil {
		maxRetries = *r.MaxRetries
	}
	return &task.Task{
		ID: r.ID, Type: r.Type, State: task.StatePending, Content: r.Content, Params: r.Params,
		SessionID: r.SessionID, Priority: r.Priority, Timeout: r.Timeout.Truncate(time.Millisecond),
		MaxRetries: maxRetries, CreatedAt: now, UpdatedAt: now, Traceparent: r.Traceparent,
		Queue: r.Queue, LimitKey: r.LimitKey,
		ErrorHistory: []task.ErrorRecord{},
		StateHistory: []task.StateChange{{At: now, To: task.StatePending, Cause: "created"}},
	}
}

// byQueue splits reqs by named queue, keeping their order within each;
// the common case (all of one queue) costs no copy.
func byQueue(reqs []EnqueueRequest) [][]EnqueueRequest {
	one := true
	for _, r := range reqs[1:] {
		if r.Queue != reqs[0].Queue {
			one = false
			break
		}
	}
	if one {
		return [][]EnqueueRequest{reqs}
	}
	var order []string
	groups := map[string][]EnqueueRequest{}
	for _, r := range reqs {
		if _, ok := groups[r.Queue]; !ok {
			order = append(order, r.Queue)
		}
		groups[r.Queue] = append(groups[r.Queue], r)
	}
	out := make([][]EnqueueRequest, len(order))
	for i, q := range order {
		out[i] = groups[q]
	}
	return out
}
