package service

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/task"
)

// ListInput filters and pages a task listing. Zero values mean: every
// state, every type, page 1 of 50, newest first, full tasks.
type ListInput struct {
	Status    string // a state (PROCESSING is accepted for ACTIVE)
	TaskType  string
	Page      int // 1-based
	PageSize  int // 1..1000; limit is an alias
	SortBy    string
	SortOrder string // asc | desc
	Summary   bool   // leave out content and result
	// SessionID: only this session's tasks (the admin; a session lists
	// its own and may name only itself).
	SessionID string
	Priority  string // high, normal or low
}

// Listing limits.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
	// MaxMergeWindow bounds page*page_size of listings that merge several
	// indexes (all states) or filter by task_type.
	MaxMergeWindow = 10000
)

// TaskSummary is a task without its content and result (the summaries form).
type TaskSummary struct {
	ID          string        `json:"task_id"`
	Type        string        `json:"task_type"`
	State       task.State    `json:"state"`
	SessionID   string        `json:"session_id,omitempty"`
	Priority    task.Priority `json:"priority"`
	RetryCount  int           `json:"retry_count"`
	MaxRetries  int           `json:"max_retries"`
	ErrorType   string        `json:"error_type,omitempty"`
	LastError   string        `json:"last_error,omitempty"`
	CreatedAt   time.Time     `json:"created_at"`
	UpdatedAt   time.Time     `json:"updated_at"`
	CompletedAt *time.Time    `json:"completed_at,omitempty"`
	// WaitingOn: as TaskView.WaitingOn.
	WaitingOn []string `json:"waiting_on,omitempty" jsonschema:"submitted with depends_on and not released yet: the tasks it waits for"`
}

// SummaryOf is t without content and result.
func SummaryOf(t *task.Task) TaskSummary {
	return TaskSummary{ID: t.ID, Type: t.Type, State: t.State, SessionID: t.SessionID, Priority: t.Priority,
		RetryCount: t.RetryCount, MaxRetries: t.MaxRetries, ErrorType: t.ErrorType, LastError: t.LastError,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, CompletedAt: t.CompletedAt}
}

// TaskList is a page of tasks. Tasks holds TaskView or TaskSummary values.
type TaskList struct {
	Tasks    []any `json:"tasks" openapi:"ref=Task|TaskSummary" jsonschema:"Task values; TaskSummary values with summary=true"`
	Total    int64 `json:"total" jsonschema:"matching tasks"`
	Page     int   `json:"page"`
	PageSize int   `json:"page_size"`
	// Partial is true when a filtered listing stopped at MaxMergeWindow
	// index entries: Total counts only what was examined.
	Partial bool `json:"partial,omitempty" jsonschema:"a filtered listing stopped scanning at 10000 entries"`
}

type listQuery struct {
	state    task.State
	hasState bool
	taskType string
	priority task.Priority // "" = any
	offset   int
	size     int
	byCreate bool
	asc      bool
	summary  bool
}

func (in ListInput) parse() (listQuery, error) {
	q := listQuery{taskType: strings.TrimSpace(in.TaskType), summary: in.Summary}
	if in.Status != "" && !strings.EqualFold(in.Status, "all") {
		st, err := task.ParseState(in.Status)
		if err != nil {
			return q, Invalid("invalid_parameter", "status", "status %q is not a state (PENDING, ACTIVE, COMPLETED, FAILED, DLQ, TIMEOUT, CANCELLED)", truncate(in.Status, 40))
		}
		q.state, q.hasState = st, true
	}
	if in.Priority != "" {
		pr, err := task.ParsePriority(in.Priority)
		if err != nil {
			return q, Invalid("invalid_parameter", "priority", "priority %q is not high, normal or low", truncate(in.Priority, 40))
		}
		q.priority = pr
	}
	page := in.Page
	if page == 0 {
		page = 1
	}
	if page < 1 {
		return q, Invalid("invalid_parameter", "page", "page must be 1 or more")
	}
	q.size = in.PageSize
	if q.size == 0 {
		q.size = DefaultPageSize
	}
	if q.size < 1 || q.size > MaxPageSize {
		return q, Invalid("invalid_parameter", "page_size", "page_size (or limit) must be between 1 and %d", MaxPageSize)
	}
	if page > 1_000_000 {
		return q, Invalid("invalid_parameter", "page", "page is too large")
	}
	q.offset = (page - 1) * q.size
	switch strings.ToLower(in.SortBy) {
	case "", "updated_at":
	case "created_at":
		q.byCreate = true
	default:
		return q, Invalid("invalid_parameter", "sort_by", "sort_by must be created_at or updated_at")
	}
	switch strings.ToLower(in.SortOrder) {
	case "", "desc":
	case "asc":
		q.asc = true
	default:
		return q, Invalid("invalid_parameter", "sort_order", "sort_order must be asc or desc")
	}
	return q, nil
}

// List pages tasks. The admin lists every task; a session lists its own.
func (s *Service) List(ctx context.Context, p auth.Principal, in ListInput) (TaskList, error) {
	if err := requirePrincipal(p); err != nil {
		return TaskList{}, err
	}
	q, err := in.parse()
	if err != nil {
		return TaskList{}, err
	}
	out := TaskList{Page: q.offset/q.size + 1, PageSize: q.size, Tasks: []any{}}
	var l listing
	switch {
	case !p.Admin:
		if in.SessionID != "" && in.SessionID != p.SessionID {
			return TaskList{}, &Error{Kind: KindForbidden, Code: "forbidden", Field: "session_id", Message: "a session lists only its own tasks"}
		}
		l, err = s.listSession(ctx, p.SessionID, q)
	case in.SessionID != "":
		if len(in.SessionID) > 128 || strings.ContainsAny(in.SessionID, " {}\t\r\n") {
			return TaskList{}, Invalid("invalid_parameter", "session_id", "session_id %q is malformed", truncate(in.SessionID, 64))
		}
		l, err = s.listSession(ctx, in.SessionID, q)
	case q.hasState && !q.filtered() && q.indexOrdered(q.state):
		var pg *store.TaskPage
		pg, err = s.st.ListByState(ctx, q.state, store.ListOptions{Offset: q.offset, Limit: q.size, Oldest: q.asc})
		if err == nil {
			l = listing{tasks: pg.Tasks, total: pg.Total}
		}
	default:
		l, err = s.listMerged(ctx, q)
	}
	if err != nil {
		return TaskList{}, storeErr("", err)
	}
	tasks, waiting := l.tasks, l.waiting
	out.Total, out.Partial = l.total, l.partial
	for _, t := range tasks {
		if q.summary {
			sm := SummaryOf(t)
			sm.WaitingOn = waiting[t.ID]
			out.Tasks = append(out.Tasks, sm)
		} else {
			v := ViewOf(t)
			v.WaitingOn = waiting[t.ID]
			out.Tasks = append(out.Tasks, v)
		}
	}
	return out, nil
}

func (q listQuery) match(t *task.Task) bool {
	return (!q.hasState || t.State == q.state) && (q.taskType == "" || t.Type == q.taskType) &&
		(q.priority == "" || t.Priority == q.priority)
}

// filtered: the listing keeps only some of an index's entries (task type,
// priority), so an index's size is not the total and a walk cannot stop
// early.
func (q listQuery) filtered() bool { return q.taskType != "" || q.priority != "" }

// key is the sort key of t, in unix ms (the precision tasks are stored in).
func (q listQuery) key(t *task.Task) int64 {
	if q.byCreate {
		return t.CreatedAt.UnixMilli()
	}
	return t.UpdatedAt.UnixMilli()
}

// before orders tasks as the listing asks: by the sort key, then by id (in
// the same direction, as Redis orders equal scores), so that pages of one
// order never overlap.
func (q listQuery) before(a, b *task.Task) bool {
	ka, kb := q.key(a), q.key(b)
	if ka == kb {
		if q.asc {
			return a.ID < b.ID
		}
		return a.ID > b.ID
	}
	if q.asc {
		return ka < kb
	}
	return ka > kb
}

// indexOrdered reports whether state's index is in the listing's order, so
// that a page can be cut from it directly. A state index is scored by the
// time the task entered the state, which is its updated_at in the states a
// task leaves only by a transition that rewrites both (COMPLETED, FAILED,
// DLQ, TIMEOUT, CANCELLED). PENDING is scored by the due time of a delayed
// task and ACTIVE by the lease deadline, and no index is ordered by
// created_at.
func (q listQuery) indexOrdered(st task.State) bool {
	if q.byCreate {
		return false
	}
	switch st {
	case task.StateCompleted, task.StateFailed, task.StateDLQ, task.StateTimeout, task.StateCancelled:
		return true
	}
	return false
}

func sortTasks(ts []*task.Task, q listQuery) {
	sort.SliceStable(ts, func(i, j int) bool { return q.before(ts[i], ts[j]) })
}

// fromIndex returns the first need tasks of state st's index in the
// listing's order (fewer when the index holds fewer), the number of tasks
// the listing counts there, and whether the scan stopped at MaxMergeWindow
// entries before it could be sure of the order.
//
// Every task's created_at and updated_at are at most its index score. So,
// newest first, once the need-th best key is newer than the score of the
// last entry read, no entry further down can rank before it: the walk stops
// there, usually after about need entries. Oldest first gives no such
// bound (a task that entered its state last may have been created first),
// nor does the ACTIVE index, nor a task_type filter (whose total counts
// every match): those read the whole index, at most MaxMergeWindow entries.
func (s *Service) fromIndex(ctx context.Context, st task.State, q listQuery, need int) ([]*task.Task, int64, bool, error) {
	stopEarly := !q.asc && !q.filtered() && st != task.StateActive
	var best []*task.Task
	var total int64
	for off := 0; ; {
		n := MaxPageSize
		if stopEarly {
			n = min(MaxPageSize, need+need/4+16)
		}
		es, size, err := s.st.StateIndex(ctx, st, store.ListOptions{Offset: off, Limit: n, Oldest: q.asc})
		if err != nil {
			return nil, 0, false, err
		}
		if off == 0 && !q.filtered() {
			total = size
		}
		ids := make([]string, len(es))
		for i, e := range es {
			ids[i] = e.ID
		}
		// heads only: the scan sorts and filters; the page's whole tasks
		// are read once it is cut (listMerged)
		ts, err := s.st.GetHeads(ctx, ids)
		if err != nil {
			return nil, 0, false, err
		}
		for _, t := range ts {
			if q.match(t) {
				best = append(best, t)
				if q.filtered() {
					total++
				}
			}
		}
		sortTasks(best, q)
		best = best[:min(len(best), need)]
		off += len(es)
		switch {
		case len(es) < n || int64(off) >= size:
			return best, total, false, nil
		case stopEarly && len(best) == need && q.key(best[need-1]) > es[len(es)-1].Score:
			return best, total, false, nil
		case off >= MaxMergeWindow:
			return best, total, true, nil
		}
	}
}

// listing is one page of a listing, as the paths of List find it.
type listing struct {
	tasks []*task.Task
	// waiting: the tasks of the page that wait on others, and on what
	waiting map[string][]string
	total   int64
	// partial: the listing stopped at MaxMergeWindow entries
	partial bool
}

// listMerged serves the admin's listings that cannot be cut from one index:
// across states, by task_type, by created_at, PENDING (with the tasks
// waiting on others) and ACTIVE. It takes the first page*page_size tasks
// of each state in the listing's order (fromIndex), merges and cuts the
// page, so the order is global across pages. Bounded by MaxMergeWindow.
func (s *Service) listMerged(ctx context.Context, q listQuery) (listing, error) {
	window := q.offset + q.size
	if window > MaxMergeWindow {
		return listing{}, Invalid("invalid_parameter", "page", "page*page_size may be at most %d when listing all states, PENDING or ACTIVE, filtering by task_type or sorting by created_at; sort by updated_at with a status of COMPLETED, FAILED, DLQ, TIMEOUT or CANCELLED to page deeper", MaxMergeWindow)
	}
	states := task.States
	if q.hasState {
		states = []task.State{q.state}
	}
	var all []*task.Task
	var total int64
	partial := false
	for _, st := range states {
		ts, n, cut, err := s.fromIndex(ctx, st, q, window)
		if err != nil {
			return listing{}, err
		}
		all = append(all, ts...)
		total += n
		partial = partial || cut
	}
	// tasks waiting on others are PENDING, outside the state indexes; their
	// index is scored by when they were parked, their created_at and
	// updated_at, so its first window are the ones that can rank
	var waiting map[string][]string
	if s.cfg.Dependencies != nil && (!q.hasState || q.state == task.StatePending) {
		n := window
		if q.filtered() {
			n = MaxMergeWindow
		}
		ids, parkedTotal, err := s.cfg.Dependencies.ParkedIDs(ctx, 0, n, q.asc)
		if err != nil {
			return listing{}, err
		}
		views, err := s.parkedViews(ctx, ids)
		if err != nil {
			return listing{}, err
		}
		waiting = make(map[string][]string, len(views))
		if !q.filtered() {
			total += parkedTotal
		} else if parkedTotal > int64(n) {
			partial = true
		}
		for _, id := range ids {
			if v, ok := views[id]; ok && q.match(v.Task) {
				all = append(all, v.Task)
				waiting[id] = v.WaitingOn
				if q.filtered() {
					total++
				}
			}
		}
	}
	// The state indexes are read one after the other, so a task that moved
	// meanwhile (PENDING → ACTIVE → COMPLETED) was met in several of them:
	// keep it once, as last read, and count it once.
	if dups := dedupeByID(all); dups > 0 {
		all = all[:len(all)-dups]
		if !q.filtered() {
			total = max(total-int64(dups), int64(len(all)))
		} else {
			total -= int64(dups)
		}
	}
	sortTasks(all, q)
	if q.offset >= len(all) {
		return listing{waiting: waiting, total: total, partial: partial}, nil
	}
	page, err := s.wholeTasks(ctx, all[q.offset:min(len(all), q.offset+q.size)], waiting)
	if err != nil {
		return listing{}, err
	}
	return listing{tasks: page, waiting: waiting, total: total, partial: partial}, nil
}

// wholeTasks reads the whole tasks of a page cut from heads, in its order.
// A task waiting on others (parked) is whole already; one deleted since
// the scan is left out.
func (s *Service) wholeTasks(ctx context.Context, heads []*task.Task, parked map[string][]string) ([]*task.Task, error) {
	ids := make([]string, 0, len(heads))
	for _, h := range heads {
		if _, ok := parked[h.ID]; !ok {
			ids = append(ids, h.ID)
		}
	}
	ts, err := s.st.GetMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*task.Task, len(ts))
	for _, t := range ts {
		byID[t.ID] = t
	}
	out := make([]*task.Task, 0, len(heads))
	for _, h := range heads {
		if _, ok := parked[h.ID]; ok {
			out = append(out, h)
		} else if t := byID[h.ID]; t != nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// dedupeByID moves every task met more than once to the end of ts,
// keeping in front the copy read last (the latest updated_at; on a tie the
// later one), in the original order, and returns how many were moved.
func dedupeByID(ts []*task.Task) int {
	last := make(map[string]int, len(ts))
	for i, t := range ts {
		if j, ok := last[t.ID]; !ok || !t.UpdatedAt.Before(ts[j].UpdatedAt) {
			last[t.ID] = i
		}
	}
	if len(last) == len(ts) {
		return 0
	}
	kept := ts[:0:0]
	var dropped []*task.Task
	for i, t := range ts {
		if last[t.ID] == i {
			kept = append(kept, t)
		} else {
			dropped = append(dropped, t)
		}
	}
	copy(ts, kept)
	copy(ts[len(kept):], dropped)
	return len(dropped)
}

// sessionIndex walks a session's task index — one ZSET per partition
// (store.SessionTasksKeys; member task id, score created-at ms) — as one
// index: merged in score order, newest first (oldest first when asc),
// ties in the order ZREVRANGE (ZRANGE) gives them, an id indexed in two
// partitions once. With one partition it pages the one ZSET as before.
type sessionIndex struct {
	rdb  redis.UniversalClient
	keys []string
	asc  bool
	buf  [][]redis.Z // read, not yet taken, per key
	off  []int64     // the next offset to read, per key
	done []bool      // the key has nothing more to read
	seen map[string]bool
}

func (s *Service) sessionIndex(sessionID string, asc bool) *sessionIndex {
	keys := s.st.SessionTasksKeys(sessionID)
	return &sessionIndex{rdb: s.rdb, keys: keys, asc: asc, buf: make([][]redis.Z, len(keys)),
		off: make([]int64, len(keys)), done: make([]bool, len(keys)), seen: map[string]bool{}}
}

// next takes the next n entries of the merge: their ids (the duplicates
// of ids taken before left out), the key each is in, and whether any
// entry is left. Each key is read MaxPageSize entries at a time, all in
// one pipelined round trip (one ZRANGE per partition: a cluster has them
// in different slots).
func (x *sessionIndex) next(ctx context.Context, n int) (ids, keys []string, more bool, err error) {
	pipe := x.rdb.Pipeline()
	cmds := make([]*redis.ZSliceCmd, len(x.keys))
	for i, k := range x.keys {
		if !x.done[i] && len(x.buf[i]) < n { // then a read keeps every head in view for n takes
			if x.asc {
				cmds[i] = pipe.ZRangeWithScores(ctx, k, x.off[i], x.off[i]+MaxPageSize-1)
			} else {
				cmds[i] = pipe.ZRevRangeWithScores(ctx, k, x.off[i], x.off[i]+MaxPageSize-1)
			}
		}
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx)
		for i, c := range cmds {
			if c == nil {
				continue
			}
			zs, err := c.Result()
			if err != nil {
				return nil, nil, false, err
			}
			x.buf[i] = append(x.buf[i], zs...)
			x.off[i] += int64(len(zs))
			x.done[i] = len(zs) < MaxPageSize
		}
	}
	for taken := 0; taken < n; taken++ {
		best := -1
		for i, b := range x.buf {
			if len(b) > 0 && (best < 0 || x.before(b[0], x.buf[best][0])) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		z := x.buf[best][0]
		x.buf[best] = x.buf[best][1:]
		id, _ := z.Member.(string)
		if x.seen[id] {
			continue
		}
		x.seen[id] = true
		ids = append(ids, id)
		keys = append(keys, x.keys[best])
	}
	for i := range x.keys {
		if len(x.buf[i]) > 0 || !x.done[i] {
			more = true
		}
	}
	return ids, keys, more, nil
}

func (x *sessionIndex) before(a, b redis.Z) bool {
	am, _ := a.Member.(string)
	bm, _ := b.Member.(string)
	if x.asc {
		return a.Score < b.Score || (a.Score == b.Score && am < bm)
	}
	return a.Score > b.Score || (a.Score == b.Score && am > bm)
}

// listSession pages a session's own tasks from its task index.
func (s *Service) listSession(ctx context.Context, sessionID string, q listQuery) (listing, error) {
	idx := s.sessionIndex(sessionID, q.asc)
	var all []*task.Task
	missing := map[string][]any{} // per index key
	waiting := map[string][]string{}
	partial := false
	for read := 0; ; read += MaxPageSize {
		ids, keys, more, err := idx.next(ctx, MaxPageSize)
		if err != nil {
			return listing{}, err
		}
		ts, err := s.st.GetMany(ctx, ids)
		if err != nil {
			return listing{}, err
		}
		found := make(map[string]bool, len(ts))
		for _, t := range ts {
			found[t.ID] = true
			if q.match(t) {
				all = append(all, t)
			}
		}
		var absent []string
		keyOf := map[string]string{}
		for i, id := range ids {
			if !found[id] {
				absent = append(absent, id)
				keyOf[id] = keys[i]
			}
		}
		// tasks waiting on others are listed as PENDING, and stay indexed
		parked, err := s.parkedViews(ctx, absent)
		if err != nil {
			return listing{}, err
		}
		for _, id := range absent {
			if v, ok := parked[id]; ok {
				if q.match(v.Task) {
					all = append(all, v.Task)
					waiting[id] = v.WaitingOn
				}
				continue
			}
			missing[keyOf[id]] = append(missing[keyOf[id]], id)
		}
		if !more {
			break
		}
		if read+MaxPageSize >= MaxMergeWindow {
			partial = true
			break
		}
	}
	if len(missing) > 0 { // deleted or expired tasks: drop them from the index
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for k, ids := range missing {
				p.ZRem(ctx, k, ids...)
			}
			return nil
		})
	}
	sortTasks(all, q)
	total := int64(len(all))
	if q.offset >= len(all) {
		return listing{waiting: waiting, total: total, partial: partial}, nil
	}
	return listing{tasks: all[q.offset:min(len(all), q.offset+q.size)], waiting: waiting, total: total, partial: partial}, nil
}

// QueueStatus is GET /api/v1/queues/status answer.
type QueueStatus struct {
	Queues            QueueDepths             `json:"queues"`
	PrimaryByPriority map[task.Priority]int64 `json:"primary_by_priority"`
	States            map[task.State]int64    `json:"states"`
	RetryRatio        float64                 `json:"retry_ratio" jsonschema:"share of fetches served retry-first now"`
	Pressure          string                  `json:"pressure" openapi:"enum=normal|warning|critical"`
}

// QueueDepths are the tasks waiting in each queue.
type QueueDepths struct {
	Primary   int64 `json:"primary"`
	Retry     int64 `json:"retry"`
	Scheduled int64 `json:"scheduled"`
	DLQ       int64 `json:"dlq"`
}

// ByName is the depths by queue name (primary, retry, scheduled, dlq).
func (d QueueDepths) ByName() map[string]int64 {
	return map[string]int64{"primary": d.Primary, "retry": d.Retry, "scheduled": d.Scheduled, "dlq": d.DLQ}
}

// QueueStatus returns queue depths and per-state counts (operator).
func (s *Service) QueueStatus(ctx context.Context, p auth.Principal) (QueueStatus, error) {
	if err := requireAdmin(p); err != nil {
		return QueueStatus{}, err
	}
	return s.queueStatus(ctx)
}

func (s *Service) queueStatus(ctx context.Context) (QueueStatus, error) {
	qs, err := s.st.QueueStatus(ctx)
	if err != nil {
		return QueueStatus{}, storeErr("", err)
	}
	states := make(map[task.State]int64, len(task.States))
	for _, st := range task.States {
		states[st] = qs.States[st]
	}
	return QueueStatus{
		Queues:            QueueDepths{Primary: qs.Primary, Retry: qs.Retry, Scheduled: qs.Scheduled, DLQ: qs.DLQ},
		PrimaryByPriority: qs.PrimaryByPriority,
		States:            states,
		RetryRatio:        qs.RetryRatio,
		Pressure:          qs.Pressure,
	}, nil
}

// DLQItem is a dead-lettered task with the failure snapshot taken when it
// entered the DLQ.
type DLQItem struct {
	TaskView
	DLQ map[string]string `json:"dlq"`
}

// Page is a generic page of items.
type Page[T any] struct {
	Items  []T   `json:"tasks"`
	Total  int64 `json:"total"`
	Offset int   `json:"offset"`
	Limit  int   `json:"limit"`
}

// DLQ pages the dead-letter queue, newest first (operator).
func (s *Service) DLQ(ctx context.Context, p auth.Principal, offset, limit int) (Page[DLQItem], error) {
	if err := requireAdmin(p); err != nil {
		return Page[DLQItem]{}, err
	}
	if err := checkWindow(offset, &limit); err != nil {
		return Page[DLQItem]{}, err
	}
	es, total, err := s.st.ListDLQ(ctx, store.ListOptions{Offset: offset, Limit: limit})
	if err != nil {
		return Page[DLQItem]{}, storeErr("", err)
	}
	out := Page[DLQItem]{Items: make([]DLQItem, 0, len(es)), Total: total, Offset: offset, Limit: limit}
	for _, e := range es {
		out.Items = append(out.Items, DLQItem{TaskView: ViewOf(e.Task), DLQ: e.Snapshot})
	}
	return out, nil
}

func checkWindow(offset int, limit *int) error {
	if offset < 0 {
		return Invalid("invalid_parameter", "offset", "offset must not be negative")
	}
	if *limit == 0 {
		*limit = DefaultPageSize
	}
	if *limit < 1 || *limit > MaxPageSize {
		return Invalid("invalid_parameter", "limit", "limit must be between 1 and %d", MaxPageSize)
	}
	return nil
}

// QueueTasks pages the tasks waiting in one queue in the order they will
// be taken (operator). queue is primary, primary:high, primary:low, retry,
// scheduled or dlq.
func (s *Service) QueueTasks(ctx context.Context, p auth.Principal, queue string, offset, limit int) (Page[TaskSummary], error) {
	if err := requireAdmin(p); err != nil {
		return Page[TaskSummary]{}, err
	}
	q, err := store.ParseQueue(queue)
	if err != nil {
		return Page[TaskSummary]{}, NotFound("queue_not_found", "no queue %q (primary, primary:high, primary:low, retry, scheduled, dlq)", truncate(queue, 40))
	}
	if err := checkWindow(offset, &limit); err != nil {
		return Page[TaskSummary]{}, err
	}
	ids, total, err := s.st.QueueContents(ctx, q, store.ListOptions{Offset: offset, Limit: limit})
	if err != nil {
		return Page[TaskSummary]{}, storeErr("", err)
	}
	ts, err := s.st.GetMany(ctx, ids)
	if err != nil {
		return Page[TaskSummary]{}, storeErr("", err)
	}
	out := Page[TaskSummary]{Items: make([]TaskSummary, 0, len(ts)), Total: total, Offset: offset, Limit: limit}
	for _, t := range ts {
		out.Items = append(out.Items, SummaryOf(t))
	}
	return out, nil
}

// WorkerLiveness is how recent a heartbeat must be for a worker to count.
const WorkerLiveness = 30 * time.Second

// Workers lists live workers (operator).
func (s *Service) Workers(ctx context.Context, p auth.Principal) ([]WorkerInfo, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	return s.workers(ctx)
}

func (s *Service) workers(ctx context.Context) ([]WorkerInfo, error) {
	if s.cfg.Workers != nil {
		ws, err := s.cfg.Workers(ctx)
		if err != nil {
			return nil, storeErr("", err)
		}
		return ws, nil
	}
	raw, err := s.st.Workers(ctx, WorkerLiveness.Milliseconds())
	if err != nil {
		return nil, storeErr("", err)
	}
	now := s.cfg.Now()
	out := make([]WorkerInfo, 0, len(raw))
	counted := false
	for _, w := range raw {
		out = append(out, workerFromFields(w, now))
		if _, ok := w.Fields["in_flight"]; !ok && !counted {
			counted = true
		}
	}
	if counted { // some worker does not publish in_flight: count its ACTIVE tasks
		byWorker, err := s.activeByWorker(ctx)
		if err != nil {
			return nil, storeErr("", err)
		}
		for i, w := range raw {
			if _, ok := w.Fields["in_flight"]; !ok {
				out[i].InFlight = byWorker[w.ID]
			}
		}
	}
	return out, nil
}

// maxActiveScan bounds the ACTIVE tasks read to count in-flight tasks per
// worker (ACTIVE tasks are bounded by the fleet's total concurrency).
const maxActiveScan = 10000

// activeByWorker counts ACTIVE tasks by the worker holding them.
func (s *Service) activeByWorker(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for off := 0; off < maxActiveScan; off += MaxPageSize {
		pg, err := s.st.ListByState(ctx, task.StateActive, store.ListOptions{Offset: off, Limit: MaxPageSize})
		if err != nil {
			return nil, err
		}
		for _, t := range pg.Tasks {
			if t.State == task.StateActive {
				out[t.Worker]++
			}
		}
		if int64(off+MaxPageSize) >= pg.Total {
			break
		}
	}
	return out, nil
}

// workerFromFields reads what a worker publishes about itself (see the
// worker package): concurrency, in_flight, started_at (unix ms), host,
// types (a JSON array) and breakers (the breaker package's snapshots: a
// JSON array of {dependency, state}, or an object dependency → state).
// Unknown or missing fields are left zero.
func workerFromFields(w store.WorkerInfo, now time.Time) WorkerInfo {
	f := w.Fields
	last := time.UnixMilli(w.LastSeen).UTC()
	wi := WorkerInfo{ID: w.ID, LastHeartbeat: last, HeartbeatAge: now.Sub(last).Seconds(), Host: f["host"],
		Breakers: map[string]string{}}
	wi.Concurrency, _ = strconv.Atoi(f["concurrency"])
	wi.InFlight, _ = strconv.Atoi(firstNonEmpty(f["in_flight"], f["inflight"]))
	if ms, err := strconv.ParseInt(f["started_at"], 10, 64); err == nil {
		wi.StartedAt = time.UnixMilli(ms).UTC()
	} else if t, err := time.Parse(time.RFC3339Nano, f["started_at"]); err == nil {
		wi.StartedAt = t
	}
	if tt := firstNonEmpty(f["task_types"], f["types"]); tt != "" {
		if json.Unmarshal([]byte(tt), &wi.TaskTypes) != nil { // a JSON array, or comma-separated
			wi.TaskTypes = strings.Split(tt, ",")
		}
	}
	if b := firstNonEmpty(f["breakers"], f["breaker"]); b != "" {
		var snaps []struct {
			Dependency string `json:"dependency"`
			State      string `json:"state"`
		}
		if json.Unmarshal([]byte(b), &snaps) == nil {
			for _, sn := range snaps {
				wi.Breakers[sn.Dependency] = sn.State
			}
		}
		var m map[string]any
		if json.Unmarshal([]byte(b), &m) == nil {
			for dep, v := range m {
				switch x := v.(type) {
				case string:
					wi.Breakers[dep] = x
				case map[string]any:
					if st, ok := x["state"].(string); ok {
						wi.Breakers[dep] = st
					}
				}
			}
		}
	}
	return wi
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// Health is GET /health answer.
type Health struct {
	Status     string           `json:"status" openapi:"enum=healthy|unhealthy"`
	Components HealthComponents `json:"components"`
	Timestamp  time.Time        `json:"timestamp"`
}

// HealthComponents are the parts health looks at.
type HealthComponents struct {
	Redis bool `json:"redis"`
	// Workers is true when at least one worker heartbeated recently.
	Workers bool `json:"workers" jsonschema:"at least one live worker"`
	// WorkerCount is the number of live workers.
	WorkerCount int `json:"worker_count"`
	// CircuitBreaker is the worst state per dependency across workers
	// (OPEN > HALF_OPEN > CLOSED).
	CircuitBreaker map[string]string `json:"circuit_breaker" openapi:"enum=CLOSED|HALF_OPEN|OPEN" jsonschema:"the worst state per dependency"`
}

// Health checks Redis and the workers; anyone may ask.
func (s *Service) Health(ctx context.Context) Health {
	h := Health{Status: "healthy", Timestamp: s.cfg.Now().UTC(), Components: HealthComponents{CircuitBreaker: map[string]string{}}}
	h.Components.Redis = s.Ready(ctx) == nil
	if h.Components.Redis {
		if ws, err := s.workers(ctx); err == nil {
			h.Components.WorkerCount = len(ws)
			h.Components.Workers = len(ws) > 0
			for _, w := range ws {
				for dep, st := range w.Breakers {
					if rank(st) > rank(h.Components.CircuitBreaker[dep]) {
						h.Components.CircuitBreaker[dep] = st
					}
				}
			}
		}
	}
	if !h.Components.Redis || !h.Components.Workers {
		h.Status = "unhealthy"
	}
	return h
}

func rank(state string) int {
	switch strings.ToUpper(state) {
	case "OPEN":
		return 3
	case "HALF_OPEN":
		return 2
	case "CLOSED":
		return 1
	}
	return 0
}

// Ready reports whether the API can serve: Redis answers.
func (s *Service) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second) // within a load balancer's probe timeout
	defer cancel()
	// a write in the namespace's slot, not a PING: a replica or a cluster
	// node holding another slot answers PING and fails every transition
	if err := s.st.Probe(ctx); err != nil {
		return Unavailable(fmt.Errorf("redis: %w", err))
	}
	return nil
}

// BreakerAction resets or opens circuit breakers (operator): a forced
// open lasts d, or until a reset when d is 0.
func (s *Service) BreakerAction(ctx context.Context, p auth.Principal, open bool, dependency string, d time.Duration) (BreakerOutcome, error) {
	if err := requireAdmin(p); err != nil {
		return BreakerOutcome{}, err
	}
	if s.cfg.Breakers == nil {
		return BreakerOutcome{}, Conflict("breaker_control_unavailable", "no circuit breaker control is configured in this process")
	}
	var (
		out BreakerOutcome
		err error
	)
	if open {
		out, err = s.cfg.Breakers.Open(ctx, dependency, d)
	} else {
		out, err = s.cfg.Breakers.Reset(ctx, dependency)
	}
	if err != nil {
		return BreakerOutcome{}, storeErr("", err)
	}
	return out, nil
}
