package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/task"
)

// Get returns the task with id, or task.ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (*task.Task, error) {
	if err := s.readDown([]string{id}); err != nil {
		return nil, err
	}
	h, err := s.rdb.HGetAll(ctx, s.part(id).task(id)).Result()
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
	if err := s.readDown(ids); err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, s.part(id).task(id))
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
	rows, err := s.fieldsOf(ctx, ids, "get task heads", fID, fType, fState, fPriority, fSession, fCreated, fUpdated)
	if err != nil {
		return nil, err
	}
	out := make([]*task.Task, 0, len(rows))
	for _, v := range rows {
		out = append(out, &task.Task{ID: v[0], Type: v[1], State: task.State(v[2]), Priority: task.Priority(v[3]),
			SessionID: v[4], CreatedAt: msTime(v[5]), UpdatedAt: msTime(v[6])})
	}
	return out, nil
}

// GetNotices returns the tasks of ids that exist, in order, with what
// announcing a finished task takes: id, type, state, priority, session,
// params and result (HMGET of seven fields, not the whole hash with its
// content and histories; the external path's outcome consumer notifies
// and caches a batch of completions with it).
func (s *Store) GetNotices(ctx context.Context, ids []string) ([]*task.Task, error) {
	rows, err := s.fieldsOf(ctx, ids, "get tasks", fID, fType, fState, fPriority, fSession, fParams, fResult)
	if err != nil {
		return nil, err
	}
	out := make([]*task.Task, 0, len(rows))
	for _, v := range rows {
		t := &task.Task{ID: v[0], Type: v[1], State: task.State(v[2]), Priority: task.Priority(v[3]), SessionID: v[4]}
		if v[5] != "" {
			t.Params = json.RawMessage(v[5])
		}
		if v[6] != "" {
			t.Result = json.RawMessage(v[6])
		}
		out = append(out, t)
	}
	return out, nil
}

// fieldsOf reads fields (fState third) of the tasks of ids in one pipeline
// and returns, in order, the values of each task that exists ("" for a
// field it lacks); a task without a state is gone and left out. what names
// the read in its error.
func (s *Store) fieldsOf(ctx context.Context, ids []string, what string, fields ...string) ([][]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if err := s.readDown(ids); err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, s.part(id).task(id), fields...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	out := make([][]string, 0, len(ids))
	for _, c := range cmds {
		row := make([]string, len(fields))
		for i, x := range c.Val() {
			if i < len(row) {
				row[i], _ = x.(string)
			}
		}
		if row[2] == "" {
			continue // gone
		}
		out = append(out, row)
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
	var ids []string
	var total int64
	if len(s.parts) == 1 {
		k := s.parts[0]
		pipe := s.rdb.Pipeline()
		l := pipe.LRange(ctx, k.dlq(), int64(opts.Offset), int64(opts.Offset+opts.Limit-1))
		n := pipe.LLen(ctx, k.dlq())
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, 0, fmt.Errorf("store: list dlq: %w", err)
		}
		ids, total = l.Val(), n.Val()
	} else {
		// each partition's DLQ list is newest first; across partitions
		// the DLQ index (by the time each entered it) orders them
		es, n, err := s.StateIndex(ctx, task.StateDLQ, opts)
		if err != nil {
			return nil, 0, fmt.Errorf("store: list dlq: %w", err)
		}
		for _, e := range es {
			ids = append(ids, e.ID)
		}
		total = n
	}
	pipe := s.rdb.Pipeline()
	hs := make([]*redis.MapStringStringCmd, len(ids))
	ss := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		k := s.part(id)
		hs[i] = pipe.HGetAll(ctx, k.task(id))
		ss[i] = pipe.HGetAll(ctx, k.dlqTask(id))
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
	return out, total, nil
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
// With several partitions each has its own queue: the listing interleaves
// them one id from each in turn (scheduled and dlq: merged by time), as
// the workers' fetches go round the partitions.
func (s *Store) QueueContents(ctx context.Context, q Queue, opts ListOptions) ([]string, int64, error) {
	return s.QueueContentsOf(ctx, DefaultQueue, q, opts)
}

// QueueContentsOf is QueueContents of the named queue name ("" or
// DefaultQueue: the default one). A named queue has its own primary and
// retry lists; the scheduled set and the DLQ are the deployment's (asked
// of another queue than the default, they are an error).
func (s *Store) QueueContentsOf(ctx context.Context, name string, q Queue, opts ListOptions) ([]string, int64, error) {
	opts, err := opts.norm()
	if err != nil {
		return nil, 0, err
	}
	if _, err := ParseQueue(string(q)); err != nil {
		return nil, 0, err
	}
	if name == "" {
		name = DefaultQueue
	} else if err := ValidQueueName(name); err != nil {
		return nil, 0, err
	}
	if name != DefaultQueue && (q == QueueScheduled || q == QueueDLQ) {
		return nil, 0, &ValidationError{Field: "queue", Reason: fmt.Sprintf("%s is the deployment's, not queue %q's", q, name)}
	}
	if q == QueueDLQ && len(s.parts) > 1 {
		es, n, err := s.StateIndex(ctx, task.StateDLQ, opts)
		ids := make([]string, len(es))
		for i, e := range es {
			ids[i] = e.ID
		}
		return ids, n, err
	}
	if err := s.readDown(nil); err != nil {
		return nil, 0, err
	}
	// each partition's first Offset+Limit entries: enough for the page
	start, stop := int64(0), int64(opts.Offset+opts.Limit-1)
	if len(s.parts) == 1 {
		start, stop = int64(opts.Offset), int64(opts.Offset+opts.Limit-1)
	}
	pipe := s.rdb.Pipeline()
	ids := make([]*redis.StringSliceCmd, len(s.parts))
	zs := make([]*redis.ZSliceCmd, len(s.parts))
	ns := make([]*redis.IntCmd, len(s.parts))
	for p, k := range s.parts {
		switch q {
		case QueueScheduled:
			zs[p] = pipe.ZRangeWithScores(ctx, k.scheduled(), start, stop)
			ns[p] = pipe.ZCard(ctx, k.scheduled())
		default:
			key := k.named(name).queue(q)
			ids[p] = pipe.LRange(ctx, key, start, stop)
			ns[p] = pipe.LLen(ctx, key)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("store: queue %s: %w", q, err)
	}
	var total int64
	for _, n := range ns {
		total += n.Val()
	}
	if len(s.parts) == 1 {
		if q == QueueScheduled {
			out := make([]string, 0, len(zs[0].Val()))
			for _, z := range zs[0].Val() {
				out = append(out, z.Member.(string))
			}
			return out, total, nil
		}
		return ids[0].Val(), total, nil
	}
	var all []string
	if q == QueueScheduled {
		var merged []redis.Z
		for _, c := range zs {
			merged = append(merged, c.Val()...)
		}
		sort.SliceStable(merged, func(i, j int) bool { return merged[i].Score < merged[j].Score })
		for _, z := range merged {
			all = append(all, z.Member.(string))
		}
	} else {
		for i := 0; ; i++ { // one from each partition in turn
			more := false
			for _, c := range ids {
				if v := c.Val(); i < len(v) {
					all = append(all, v[i])
					more = true
				}
			}
			if !more {
				break
			}
		}
	}
	if opts.Offset >= len(all) {
		return []string{}, total, nil
	}
	return all[opts.Offset:min(len(all), opts.Offset+opts.Limit)], total, nil
}

// queue is the list of a pending queue or the DLQ in partition k.
func (k keys) queue(q Queue) string {
	switch q {
	case QueuePrimaryHigh:
		return k.primary(task.PriorityHigh)
	case QueuePrimaryLow:
		return k.primary(task.PriorityLow)
	case QueueRetry:
		return k.retry()
	case QueueDLQ:
		return k.dlq()
	}
	return k.primary(task.PriorityNormal)
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
	type counts struct {
		hi, no, lo, re, sc, dl *redis.IntCmd
		states                 map[task.State]*redis.IntCmd
	}
	if err := s.readDown(nil); err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	cs := make([]counts, len(s.parts))
	for p, k := range s.parts {
		c := counts{
			hi: pipe.LLen(ctx, k.primary(task.PriorityHigh)), no: pipe.LLen(ctx, k.primary(task.PriorityNormal)),
			lo: pipe.LLen(ctx, k.primary(task.PriorityLow)), re: pipe.LLen(ctx, k.retry()),
			sc: pipe.ZCard(ctx, k.scheduled()), dl: pipe.LLen(ctx, k.dlq()),
			states: make(map[task.State]*redis.IntCmd, len(task.States)),
		}
		for _, st := range task.States {
			c.states[st] = pipe.ZCard(ctx, k.stateIndex(st))
		}
		cs[p] = c
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("store: queue status: %w", err)
	}
	qs := &QueueStatus{
		PrimaryByPriority: map[task.Priority]int64{task.PriorityHigh: 0, task.PriorityNormal: 0, task.PriorityLow: 0},
		States:            make(map[task.State]int64, len(task.States)),
	}
	for _, c := range cs {
		qs.PrimaryByPriority[task.PriorityHigh] += c.hi.Val()
		qs.PrimaryByPriority[task.PriorityNormal] += c.no.Val()
		qs.PrimaryByPriority[task.PriorityLow] += c.lo.Val()
		qs.Primary += c.hi.Val() + c.no.Val() + c.lo.Val()
		qs.Retry += c.re.Val()
		qs.Scheduled += c.sc.Val()
		qs.DLQ += c.dl.Val()
		for st, n := range c.states {
			qs.States[st] += n.Val()
		}
	}
	// the ratio each partition's fetch applies follows its own retry
	// queue; with several, this is the ratio at their mean depth
	qs.RetryRatio, qs.Pressure = s.RetryRatioFor(qs.Retry / int64(len(s.parts)))
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
	pipe.ZAdd(ctx, s.global.workers(), redis.Z{Score: float64(s.nowMS()), Member: id})
	if len(fields) > 0 {
		pipe.HSet(ctx, s.global.worker(id), fields)
	}
	pipe.PExpire(ctx, s.global.worker(id), ttl)
	_, err := pipe.Exec(ctx)
	if err != nil {
		return fmt.Errorf("store: publish worker %s: %w", id, err)
	}
	return nil
}

// WorkerTypesKeyOf is the hash of the task types the workers of namespace
// ns serve in process (type → spec JSON, PublishWorkerTypes), for the
// task-type registry to read.
func WorkerTypesKeyOf(ns keyspace.Namespace) string {
	return globalKeys{p: ns.Prefix()}.workerTypes()
}

// PublishWorkerTypes records the specs of the task types a worker serves
// in process (type → spec JSON), replacing what an earlier worker wrote
// for the same types.
func (s *Store) PublishWorkerTypes(ctx context.Context, specs map[string]string) error {
	if len(specs) == 0 {
		return nil
	}
	if err := s.rdb.HSet(ctx, s.global.workerTypes(), specs).Err(); err != nil {
		return fmt.Errorf("store: publish worker task types: %w", err)
	}
	return nil
}

// RemoveWorker deletes a stopping worker's entry.
func (s *Store) RemoveWorker(ctx context.Context, id string) error {
	pipe := s.rdb.Pipeline() // the wake-up lists are in the partitions' slots
	pipe.ZRem(ctx, s.global.workers(), id)
	pipe.Del(ctx, s.global.worker(id))
	for _, k := range s.parts {
		pipe.Del(ctx, k.wakeWorker(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("store: remove worker %s: %w", id, err)
	}
	return nil
}

// Workers lists the workers seen within the last maxAgeMS milliseconds.
func (s *Store) Workers(ctx context.Context, maxAgeMS int64) ([]WorkerInfo, error) {
	min := strconv.FormatInt(s.nowMS()-maxAgeMS, 10)
	zs, err := s.rdb.ZRangeByScoreWithScores(ctx, s.global.workers(), &redis.ZRangeBy{Min: min, Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("store: workers: %w", err)
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(zs))
	for i, z := range zs {
		cmds[i] = pipe.HGetAll(ctx, s.global.worker(z.Member.(string)))
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
