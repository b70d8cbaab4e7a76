package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/task"
)

// Get returns the task with id, or task.ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (*task.Task, error) {
	h, err := s.rdb.HGetAll(ctx, s.keys.task(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("store: get %s: %w", id, err)
	}
	t, ok := decodeTask(h)
	if !ok {
		return nil, fmt.Errorf("task %s: %w", id, task.ErrNotFound)
	}
	return t, nil
}

// GetMany returns the tasks with ids in one round trip, in order; a missing
// task is left out.
func (s *Store) GetMany(ctx context.Context, ids []string) ([]*task.Task, error) {
	if len(ids) == 0 {
		return []*task.Task{}, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, s.keys.task(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: get tasks: %w", err)
	}
	out := make([]*task.Task, 0, len(ids))
	for _, c := range cmds {
		if t, ok := decodeTask(c.Val()); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// GetHeads returns the tasks of ids that exist, in order, with only what
// a listing sorts and filters by: id, type, state, priority, session,
// created_at and updated_at (HMGET of seven fields, not the whole hash
// with its content, result and histories). A listing scans heads and
// reads whole tasks for its page only (GetMany).
func (s *Store) GetHeads(ctx context.Context, ids []string) ([]*task.Task, error) {
	if len(ids) == 0 {
		return []*task.Task{}, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, s.keys.task(id), fID, fType, fState, fPriority, fSession, fCreated, fUpdated)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: get task heads: %w", err)
	}
	out := make([]*task.Task, 0, len(ids))
	for _, c := range cmds {
		v := c.Val()
		str := func(i int) string {
			if i < len(v) {
				if x, ok := v[i].(string); ok {
					return x
				}
			}
			return ""
		}
		if str(2) == "" {
			continue // gone
		}
		out = append(out, &task.Task{ID: str(0), Type: str(1), State: task.State(str(2)), Priority: task.Priority(str(3)),
			SessionID: str(4), CreatedAt: msTime(str(5)), UpdatedAt: msTime(str(6))})
	}
	return out, nil
}

// ListOptions pages a listing. Limit 0 means 50; at most 1000.
type ListOptions struct {
	Offset int
	Limit  int
	// Oldest lists oldest first; the default is newest first.
	Oldest bool
}

func (o ListOptions) norm() (ListOptions, error) {
	if o.Offset < 0 {
		return o, &ValidationError{Field: "offset", Reason: "must not be negative"}
	}
	if o.Limit == 0 {
		o.Limit = 50
	}
	if o.Limit < 0 || o.Limit > 1000 {
		return o, &ValidationError{Field: "limit", Reason: "must be within [1, 1000]"}
	}
	return o, nil
}

// TaskPage is one page of a listing and the total size of the listing.
type TaskPage struct {
	Tasks []*task.Task
	Total int64
}

// ListByState lists the tasks in state from the per-state index, ordered by
// the time they entered the state (ACTIVE: by lease deadline), newest
// first unless opts.Oldest. O(log N + page).
func (s *Store) ListByState(ctx context.Context, state task.State, opts ListOptions) (*TaskPage, error) {
	entries, total, err := s.StateIndex(ctx, state, opts)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	tasks, err := s.GetMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	return &TaskPage{Tasks: tasks, Total: total}, nil
}

// DLQEntry is a dead-lettered task with the snapshot taken when it entered
// the DLQ (task_id, task_type, error_type, last_error, retry_count,
// from_state, dlq_at).
type DLQEntry struct {
	Task     *task.Task
	Snapshot map[string]string
}

// ListDLQ pages dlq:tasks list (newest first) with snapshots.
func (s *Store) ListDLQ(ctx context.Context, opts ListOptions) ([]DLQEntry, int64, error) {
	opts, err := opts.norm()
	if err != nil {
		return nil, 0, err
	}
	pipe := s.rdb.Pipeline()
	ids := pipe.LRange(ctx, s.keys.dlq(), int64(opts.Offset), int64(opts.Offset+opts.Limit-1))
	total := pipe.LLen(ctx, s.keys.dlq())
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("store: list dlq: %w", err)
	}
	pipe = s.rdb.Pipeline()
	hs := make([]*redis.MapStringStringCmd, len(ids.Val()))
	ss := make([]*redis.MapStringStringCmd, len(ids.Val()))
	for i, id := range ids.Val() {
		hs[i] = pipe.HGetAll(ctx, s.keys.task(id))
		ss[i] = pipe.HGetAll(ctx, s.keys.dlqTask(id))
	}
	if len(hs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, 0, fmt.Errorf("store: list dlq: %w", err)
		}
	}
	out := make([]DLQEntry, 0, len(hs))
	for i := range hs {
		t, ok := decodeTask(hs[i].Val())
		if !ok {
			continue
		}
		out = append(out, DLQEntry{Task: t, Snapshot: ss[i].Val()})
	}
	return out, total.Val(), nil
}

// Queue names a pending queue for QueueContents.
type Queue string

const (
	QueuePrimary     Queue = "primary" // normal priority: tasks:pending:primary
	QueuePrimaryHigh Queue = "primary:high"
	QueuePrimaryLow  Queue = "primary:low"
	QueueRetry       Queue = "retry"
	QueueScheduled   Queue = "scheduled" // ordered by due time
	QueueDLQ         Queue = "dlq"
)

// ParseQueue accepts the names of the Queue constants.
func ParseQueue(s string) (Queue, error) {
	switch q := Queue(s); q {
	case QueuePrimary, QueuePrimaryHigh, QueuePrimaryLow, QueueRetry, QueueScheduled, QueueDLQ:
		return q, nil
	}
	return "", &ValidationError{Field: "queue", Reason: fmt.Sprintf("unknown queue %q (want primary, primary:high, primary:low, retry, scheduled or dlq)", s)}
}

// QueueContents pages the ids in a queue in the order they will be taken
// (scheduled: by due time; dlq: newest first), with the queue's length.
func (s *Store) QueueContents(ctx context.Context, q Queue, opts ListOptions) ([]string, int64, error) {
	opts, err := opts.norm()
	if err != nil {
		return nil, 0, err
	}
	start, stop := int64(opts.Offset), int64(opts.Offset+opts.Limit-1)
	pipe := s.rdb.Pipeline()
	var ids *redis.StringSliceCmd
	var n *redis.IntCmd
	switch q {
	case QueueScheduled:
		ids = pipe.ZRange(ctx, s.keys.scheduled(), start, stop)
		n = pipe.ZCard(ctx, s.keys.scheduled())
	default:
		key, err := s.queueKey(q)
		if err != nil {
			return nil, 0, err
		}
		ids = pipe.LRange(ctx, key, start, stop)
		n = pipe.LLen(ctx, key)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("store: queue %s: %w", q, err)
	}
	return ids.Val(), n.Val(), nil
}

func (s *Store) queueKey(q Queue) (string, error) {
	switch q {
	case QueuePrimary:
		return s.keys.primary(task.PriorityNormal), nil
	case QueuePrimaryHigh:
		return s.keys.primary(task.PriorityHigh), nil
	case QueuePrimaryLow:
		return s.keys.primary(task.PriorityLow), nil
	case QueueRetry:
		return s.keys.retry(), nil
	case QueueDLQ:
		return s.keys.dlq(), nil
	}
	_, err := ParseQueue(string(q))
	return "", err
}

// QueueStatus is queue status, answered in O(1).
type QueueStatus struct {
	// Primary is the depth of the three primary queues together.
	Primary int64 `json:"primary"`
	// PrimaryByPriority splits Primary by priority.
	PrimaryByPriority map[task.Priority]int64 `json:"primary_by_priority"`
	Retry             int64                   `json:"retry"`
	Scheduled         int64                   `json:"scheduled"`
	DLQ               int64                   `json:"dlq"`
	// States counts tasks per state (from the per-state indexes).
	States map[task.State]int64 `json:"states"`
	// RetryRatio is the share of fetches served retry-first right now.
	RetryRatio float64 `json:"retry_ratio"`
	// Pressure is normal, warning or critical (retry queue depth).
	Pressure string `json:"pressure"`
}

// QueueStatus reads every depth and per-state count in one round trip.
func (s *Store) QueueStatus(ctx context.Context) (*QueueStatus, error) {
	pipe := s.rdb.Pipeline()
	hi := pipe.LLen(ctx, s.keys.primary(task.PriorityHigh))
	no := pipe.LLen(ctx, s.keys.primary(task.PriorityNormal))
	lo := pipe.LLen(ctx, s.keys.primary(task.PriorityLow))
	re := pipe.LLen(ctx, s.keys.retry())
	sc := pipe.ZCard(ctx, s.keys.scheduled())
	dl := pipe.LLen(ctx, s.keys.dlq())
	states := make(map[task.State]*redis.IntCmd, len(task.States))
	for _, st := range task.States {
		states[st] = pipe.ZCard(ctx, s.keys.stateIndex(st))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("store: queue status: %w", err)
	}
	qs := &QueueStatus{
		Primary:           hi.Val() + no.Val() + lo.Val(),
		PrimaryByPriority: map[task.Priority]int64{task.PriorityHigh: hi.Val(), task.PriorityNormal: no.Val(), task.PriorityLow: lo.Val()},
		Retry:             re.Val(), Scheduled: sc.Val(), DLQ: dl.Val(),
		States: make(map[task.State]int64, len(states)),
	}
	for st, c := range states {
		qs.States[st] = c.Val()
	}
	qs.RetryRatio, qs.Pressure = s.RetryRatioFor(qs.Retry)
	return qs, nil
}

// RetryRatioFor is the adaptive ratio at a retry queue depth:
// RetryRatio below RetryQueueWarning, RetryRatioWarning up to
// RetryQueueCritical, RetryRatioCritical above. The fetch script applies
// the same rule.
func (s *Store) RetryRatioFor(depth int64) (float64, string) {
	switch {
	case depth > int64(s.cfg.RetryQueueCritical):
		return ratio(s.cfg.RetryRatioCritical), "critical"
	case depth >= int64(s.cfg.RetryQueueWarning):
		return ratio(s.cfg.RetryRatioWarning), "warning"
	}
	return ratio(s.cfg.RetryRatio), "normal"
}

// WorkerInfo is what a worker publishes about itself for the API's health
// and workers views.
type WorkerInfo struct {
	ID       string            `json:"id"`
	LastSeen int64             `json:"last_seen_ms"`
	Fields   map[string]string `json:"fields"`
}

// PublishWorker records the worker's fields (e.g. concurrency, breaker
// states as JSON) and its heartbeat time; the entry expires after ttl.
func (s *Store) PublishWorker(ctx context.Context, id string, fields map[string]string, ttl time.Duration) error {
	pipe := s.rdb.TxPipeline()
	pipe.ZAdd(ctx, s.keys.workers(), redis.Z{Score: float64(s.nowMS()), Member: id})
	if len(fields) > 0 {
		pipe.HSet(ctx, s.keys.worker(id), fields)
	}
	pipe.PExpire(ctx, s.keys.worker(id), ttl)
	_, err := pipe.Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: publish worker %s: %w", id, err)
	}
	return nil
}

// RemoveWorker deletes a stopping worker's entry.
func (s *Store) RemoveWorker(ctx context.Context, id string) error {
	pipe := s.rdb.TxPipeline()
	pipe.ZRem(ctx, s.keys.workers(), id)
	pipe.Del(ctx, s.keys.worker(id), s.keys.wakeWorker(id))
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("store: remove worker %s: %w", id, err)
	}
	return nil
}

// Workers lists the workers seen within the last maxAgeMS milliseconds.
func (s *Store) Workers(ctx context.Context, maxAgeMS int64) ([]WorkerInfo, error) {
	min := strconv.FormatInt(s.nowMS()-maxAgeMS, 10)
	zs, err := s.rdb.ZRangeByScoreWithScores(ctx, s.keys.workers(), &redis.ZRangeBy{Min: min, Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("store: workers: %w", err)
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(zs))
	for i, z := range zs {
		cmds[i] = pipe.HGetAll(ctx, s.keys.worker(z.Member.(string)))
	}
	if len(zs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("store: workers: %w", err)
		}
	}
	out := make([]WorkerInfo, len(zs))
	for i, z := range zs {
		out[i] = WorkerInfo{ID: z.Member.(string), LastSeen: int64(z.Score), Fields: cmds[i].Val()}
	}
	return out, nil
}
