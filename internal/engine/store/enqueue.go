package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
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
	// UniqueKey, when set, makes the task unique among its owner's
	// (SessionID's; "" is the deployment-wide callers'): while the task
	// holding the key is unfinished (PENDING, ACTIVE, FAILED awaiting a
	// retry, TIMEOUT), or for UniqueFor after it was created, a request
	// with the same key creates nothing and is answered with the holder
	// (Enqueued.Duplicate). Without a PartitionKey the task is placed in
	// the key's partition; with one, in the partition key's, and then the
	// key is unique within that partition. At most 200 bytes.
	UniqueKey string
	// UniqueFor keeps the unique key held for this long after the task was
	// created, even when it has finished. 0: only while unfinished.
	UniqueFor time.Duration

	place string // when set (and no PartitionKey), the partition follows from it
}

// Enqueued is the outcome of one request of EnqueueResults.
type Enqueued struct {
	// Task is the task created; for a Duplicate, the existing task that
	// holds the unique key, with only its ID and State.
	Task *task.Task
	// Duplicate says the request created nothing: its unique key is held.
	Duplicate bool
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
	if len(r.UniqueKey) > maxIDLen {
		return r, &ValidationError{Field: "unique_key", Reason: fmt.Sprintf("must be at most %d bytes", maxIDLen)}
	}
	if r.UniqueFor < 0 {
		return r, &ValidationError{Field: "unique_for", Reason: "must not be negative"}
	}
	n := len(s.parts)
	want := -1
	switch {
	case r.PartitionKey != "":
		want = PartitionOf(r.PartitionKey, n)
	case r.UniqueKey != "":
		want = PartitionOf(uniquePlace(r.SessionID, r.UniqueKey), n)
	case r.place != "":
		want = PartitionOf(r.place, n)
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
	out, err := s.EnqueueResults(ctx, []EnqueueRequest{r})
	if err != nil {
		return nil, err
	}
	return out[0].Task, nil
}

// uniquePlace is what places a task with a unique key and no partition key.
func uniquePlace(scope, key string) string { return "uniq:" + scope + ":" + key }

// EnqueueBatch is EnqueueResults returning the tasks only: for a request
// answered by its unique key's holder, the holder (ID and State).
func (s *Store) EnqueueBatch(ctx context.Context, reqs []EnqueueRequest) ([]*task.Task, error) {
	res, err := s.EnqueueResults(ctx, reqs)
	if err != nil {
		return nil, err
	}
	out := make([]*task.Task, len(res))
	for i, r := range res {
		out[i] = r.Task
	}
	return out, nil
}

// EnqueueResults creates many tasks with one script call per EnqueueChunk
// tasks of each partition (the partitions' calls at once). Each chunk is
// all-or-nothing: a duplicate id fails its chunk with
// task.ErrDuplicateTaskID (other chunks may stay created); a request that
// does not validate fails the whole batch before anything is written, with
// a *ValidationError whose Field is prefixed by the request's index
// ("[3].task_type") when there are several. A request whose unique key is
// held creates nothing and is answered Duplicate.
func (s *Store) EnqueueResults(ctx context.Context, reqs []EnqueueRequest) ([]Enqueued, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	prepared, err := s.prepareAll(reqs)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock.Now()
	call := s.enqueueCallID()
	var dups []dup
	var mu sync.Mutex
	if len(s.parts) == 1 {
		ds, _, err := s.enqueueIn(ctx, s.parts[0], prepared, now, call, nil)
		if err != nil {
			return nil, err
		}
		dups = ds
	} else {
		// one script call per partition (per chunk), at once
		err := s.eachPartition(len(prepared), func(i int) string { return prepared[i].ID }, func(p int, k keys, at []int) error {
			rs := make([]EnqueueRequest, len(at))
			for n, i := range at {
				rs[n] = prepared[i]
			}
			return s.onPartition(ctx, p, func(ctx context.Context) error {
				ds, _, err := s.enqueueIn(ctx, k, rs, now, call, nil)
				mu.Lock()
				for _, d := range ds {
					d.i = at[d.i]
					dups = append(dups, d)
				}
				mu.Unlock()
				return err
			})
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]Enqueued, len(prepared))
	for i, r := range prepared {
		out[i] = Enqueued{Task: s.created(r, now)}
	}
	for _, d := range dups {
		out[d.i] = Enqueued{Task: &task.Task{ID: d.id, State: d.state}, Duplicate: true}
	}
	return out, nil
}

// prepareAll validates reqs and gives each an id.
func (s *Store) prepareAll(reqs []EnqueueRequest) ([]EnqueueRequest, error) {
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
	return prepared, nil
}

// dup is a request (at position i) answered by its unique key's holder.
type dup struct {
	i     int
	id    string
	state task.State
}

// idemCall is the idempotency record an enqueue call checks and writes.
type idemCall struct {
	key, fp, extra string
	ttl            time.Duration
}

// replay is what an idempotency record holds (its results, its extra).
type replay struct {
	res, extra string
}

// enqueueIn writes reqs, all of partition k, one script call per
// EnqueueChunk, the tasks of each named queue apart (a queue's lists and
// wake-up are in the script's KEYS; a batch all of one queue is one group).
// With idem, every task is written in one call with the record (the
// caller keeps the request within a chunk, and refuses a keyed request
// spanning queues: ErrIdempotencyQueues). It answers the requests not
// created (their unique key held), by position in prepared, or the record
// idem found.
func (s *Store) enqueueIn(ctx context.Context, k keys, prepared []EnqueueRequest, now time.Time, call string, idem *idemCall) ([]dup, *replay, error) {
	if err := s.registerQueues(ctx, prepared); err != nil {
		return nil, nil, err
	}
	groups := byQueue(prepared)
	if len(groups) <= 1 {
		return s.enqueueQueue(ctx, k, prepared, now, call, idem)
	}
	if idem != nil {
		return nil, nil, ErrIdempotencyQueues
	}
	var dups []dup
	for _, at := range groups {
		rs := make([]EnqueueRequest, len(at))
		for j, i := range at {
			rs[j] = prepared[i]
		}
		ds, _, err := s.enqueueQueue(ctx, k, rs, now, call, nil)
		for _, d := range ds {
			d.i = at[d.i]
			dups = append(dups, d)
		}
		if err != nil {
			return dups, nil, err
		}
	}
	return dups, nil, nil
}

// ErrIdempotencyQueues: a request under an Idempotency-Key puts tasks in
// several named queues, which one script call cannot write together.
var ErrIdempotencyQueues = errors.New("store: a request under one idempotency key must put its tasks in one queue")

// enqueueQueue is enqueueIn for tasks of one named queue: one script call
// per EnqueueChunk (one for all with idem).
func (s *Store) enqueueQueue(ctx context.Context, k keys, prepared []EnqueueRequest, now time.Time, call string, idem *idemCall) ([]dup, *replay, error) {
	nowMS := ms(now)
	var dups []dup
	q := k
	if len(prepared) > 0 {
		q = k.named(prepared[0].Queue)
	}
	chunkLen := s.cfg.EnqueueChunk
	if idem != nil {
		chunkLen = max(len(prepared), 1)
	}
	for start := 0; start < len(prepared) || (idem != nil && start == 0); start += chunkLen {
		chunk := prepared[start:min(start+chunkLen, len(prepared))]
		keys := make([]string, 0, 8+len(chunk))
		keys = append(keys, k.stateIndex(task.StatePending), k.scheduled(), k.events(), q.wake(),
			q.primary(task.PriorityHigh), q.primary(task.PriorityNormal), q.primary(task.PriorityLow))
		args := make([]any, 0, 8+len(chunk)*16)
		args = append(args, nowMS, s.cfg.EventStreamMaxLen, len(chunk), call, s.cfg.SessionIndexTTL.Milliseconds())
		if idem != nil {
			args = append(args, idem.fp, idem.ttl.Milliseconds(), idem.extra)
		} else {
			args = append(args, "")
		}
		for _, r := range chunk {
			keys = append(keys, k.task(r.ID))
		}
		for _, r := range chunk {
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
			uq := ""
			if r.UniqueKey != "" {
				ufor := r.UniqueFor.Milliseconds()
				hold := max(ufor, s.cfg.UniqueHold.Milliseconds()+max(runAt-nowMS, 0), 1)
				uq = strconv.FormatInt(hold, 10) + ":" + strconv.FormatInt(ufor, 10)
			}
			args = append(args, r.ID, string(r.Priority), runAt, r.Type, r.SessionID, uq, len(fields)/2)
			args = append(args, fields...)
			// the session's task index and the unique key's record,
			// written with the task
			if r.SessionID != "" {
				keys = append(keys, k.sessionTasks(r.SessionID))
			}
			if r.UniqueKey != "" {
				keys = append(keys, k.unique(r.SessionID, r.UniqueKey))
			}
		}
		if idem != nil {
			keys = append(keys, idem.key)
		}
		v, err := scriptEnqueue.Run(ctx, s.rdb, keys, args...).Result()
		if err != nil {
			if strings.Contains(err.Error(), "IDEMPOTENCY_MISMATCH") {
				return dups, nil, ErrIdempotencyMismatch
			}
			return dups, nil, scriptErr("", err)
		}
		arr, ok := v.([]any)
		if !ok {
			continue // every task created
		}
		if len(arr) == 3 && str(arr[0]) == "replay" {
			return nil, &replay{res: str(arr[1]), extra: str(arr[2])}, nil
		}
		for j := 0; j+2 < len(arr); j += 3 {
			i, _ := arr[j].(int64)
			dups = append(dups, dup{i: start + int(i) - 1, id: str(arr[j+1]), state: task.State(str(arr[j+2]))})
		}
	}
	return dups, nil, nil
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

// ErrIdempotencyMismatch: an idempotency key's record was written by a
// request with another fingerprint (the key was reused for another body).
var ErrIdempotencyMismatch = errors.New("store: idempotency key used before with another request")

// Idempotency names the record an idempotent enqueue checks and writes
// (EnqueueIdempotent).
type Idempotency struct {
	// Scope is the caller the key belongs to (a session id, or a
	// deployment-wide caller's name); one caller cannot see another's keys.
	Scope string
	// Key is the caller's idempotency key (1..255 bytes).
	Key string
	// Fingerprint identifies the request (a hash of what was asked); a
	// later call with the key and another fingerprint fails with
	// ErrIdempotencyMismatch.
	Fingerprint string
	// TTL is how long the record is kept. Required.
	TTL time.Duration
	// Extra is stored with the record and answered on a replay (what the
	// caller answered besides the tasks, e.g. the items it refused).
	Extra string
}

// IdempotentResult is the outcome of EnqueueIdempotent.
type IdempotentResult struct {
	// Results has one entry per request: created, or answered by the
	// unique key's holder. On a replay the tasks carry only ID and State
	// (PENDING for a created one: the state the first call answered).
	Results []Enqueued
	// Extra is the record's Extra (the first call's, on a replay).
	Extra string
	// Replayed says the record existed: nothing was written, Results are
	// those of the first call.
	Replayed bool
}

// EnqueueIdempotent is EnqueueResults under an idempotency record: one
// script call checks the record and, when there is none, writes the tasks
// and the record together, so a caller that dies after the call and
// resends the request with the key finds the record and creates nothing
// again. Every request must fall in one partition (with several, a request
// without a partition or unique key is placed in the key's); the record
// lives there. All of reqs are written in one call (keep them within a
// few thousand).
func (s *Store) EnqueueIdempotent(ctx context.Context, reqs []EnqueueRequest, idem Idempotency) (IdempotentResult, error) {
	if idem.Key == "" || len(idem.Key) > 255 || idem.Fingerprint == "" || idem.TTL <= 0 {
		return IdempotentResult{}, &ValidationError{Field: "idempotency_key", Reason: "needs a key of 1 to 255 bytes, a fingerprint and a TTL"}
	}
	place := "idem:" + idem.Scope + ":" + idem.Key
	rs := make([]EnqueueRequest, len(reqs))
	for i, r := range reqs {
		r.place = place
		rs[i] = r
	}
	prepared := rs
	if len(rs) > 0 {
		var err error
		if prepared, err = s.prepareAll(rs); err != nil {
			return IdempotentResult{}, err
		}
	}
	pn := PartitionOf(place, len(s.parts))
	if len(prepared) > 0 {
		pn = s.PartitionOf(prepared[0].ID)
	}
	for i, r := range prepared {
		if got := s.PartitionOf(r.ID); got != pn {
			return IdempotentResult{}, &ValidationError{Field: fmt.Sprintf("[%d].partition_key", i),
				Reason: fmt.Sprintf("places the task in partition %d and the first task in %d: the tasks of one idempotent call must share a partition", got, pn)}
		}
	}
	k := s.parts[pn]
	now := s.cfg.Clock.Now()
	ic := &idemCall{key: k.idempotency(idem.Scope, idem.Key), fp: idem.Fingerprint, extra: idem.Extra, ttl: idem.TTL}
	var dups []dup
	var rep *replay
	write := func(ctx context.Context) error {
		var err error
		dups, rep, err = s.enqueueIn(ctx, k, prepared, now, s.enqueueCallID(), ic)
		return err
	}
	var err error
	if len(s.parts) == 1 {
		err = write(ctx)
	} else {
		err = s.onPartition(ctx, pn, write)
	}
	if err != nil {
		return IdempotentResult{}, err
	}
	if rep != nil {
		out, err := parseReplay(rep.res)
		if err != nil {
			return IdempotentResult{}, err
		}
		return IdempotentResult{Results: out, Extra: rep.extra, Replayed: true}, nil
	}
	out := make([]Enqueued, len(prepared))
	for i, r := range prepared {
		out[i] = Enqueued{Task: s.created(r, now)}
	}
	for _, d := range dups {
		out[d.i] = Enqueued{Task: &task.Task{ID: d.id, State: d.state}, Duplicate: true}
	}
	return IdempotentResult{Results: out, Extra: idem.Extra}, nil
}

// parseReplay reads an idempotency record's results ("c:ID" created,
// "d:ID:STATE" answered by the holder, ";"-separated).
func parseReplay(res string) ([]Enqueued, error) {
	if res == "" {
		return []Enqueued{}, nil
	}
	parts := strings.Split(res, ";")
	out := make([]Enqueued, len(parts))
	for i, p := range parts {
		switch {
		case strings.HasPrefix(p, "c:") && len(p) > 2:
			out[i] = Enqueued{Task: &task.Task{ID: p[2:], State: task.StatePending}}
		case strings.HasPrefix(p, "d:"):
			j := strings.LastIndexByte(p, ':')
			if j <= 2 {
				return nil, fmt.Errorf("store: idempotency record: bad entry %q", p)
			}
			out[i] = Enqueued{Task: &task.Task{ID: p[2:j], State: task.State(p[j+1:])}, Duplicate: true}
		default:
			return nil, fmt.Errorf("store: idempotency record: bad entry %q", p)
		}
	}
	return out, nil
}

// byQueue splits the positions of reqs by named queue, keeping their order
// within each.
func byQueue(reqs []EnqueueRequest) [][]int {
	if len(reqs) == 0 {
		return nil
	}
	var order []string
	groups := map[string][]int{}
	for i, r := range reqs {
		if _, ok := groups[r.Queue]; !ok {
			order = append(order, r.Queue)
		}
		groups[r.Queue] = append(groups[r.Queue], i)
	}
	out := make([][]int, len(order))
	for i, q := range order {
		out[i] = groups[q]
	}
	return out
}
