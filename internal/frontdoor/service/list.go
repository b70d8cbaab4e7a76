package service

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
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
	StartedAt   *time.Time    `json:"started_at,omitempty" jsonschema:"when its last attempt started"`
	CompletedAt *time.Time    `json:"completed_at,omitempty"`
	// Queue and LimitKey: as the task's, so a listing shows where each
	// task waits and what per-key limits count it against.
	Queue    string `json:"queue,omitempty"`
	LimitKey string `json:"limit_key,omitempty"`
	// WaitingOn: as TaskView.WaitingOn.
	WaitingOn []string `json:"waiting_on,omitempty" jsonschema:"submitted with depends_on and not released yet: the tasks it waits for"`
	// WaitingFor: as TaskView.WaitingFor.
	WaitingFor *WaitingFor `json:"waiting_for,omitempty"`
}

// SummaryOf is t without content and result.
func SummaryOf(t *task.Task) TaskSummary {
	return TaskSummary{ID: t.ID, Type: t.Type, State: t.State, SessionID: t.SessionID, Priority: t.Priority,
		Queue: t.Queue, LimitKey: t.LimitKey,
		RetryCount: t.RetryCount, MaxRetries: t.MaxRetries, ErrorType: t.ErrorType, LastError: t.LastError,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, StartedAt: t.StartedAt, CompletedAt: t.CompletedAt}
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
	// the services' registry is read once, and only when the page holds
	// an unfinished external task (an error leaves waiting_for unset)
	var svcs []ServiceInfo
	if slices.ContainsFunc(tasks, s.mayWaitForService) {
		svcs, _ = s.serviceRegistry(ctx)
	}
	for _, t := range tasks {
		var wf *WaitingFor
		if svcs != nil {
			wf = s.waitingForIn(svcs, t)
		}
		if q.summary {
			sm := SummaryOf(t)
			sm.WaitingOn, sm.WaitingFor = waiting[t.ID], wf
			out.Tasks = append(out.Tasks, sm)
		} else {
			v := ViewOf(t)
			v.WaitingOn, v.WaitingFor = waiting[t.ID], wf
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
			if !q.filtered() {
				// read whole: count what was read, not the size taken
				// apart from it (an entry that left the index between the
				// two, a task moving on, would be counted without a task)
				total = int64(off)
			}
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

// Page is a generic page of items.
type Page[T any] struct {
	Items  []T   `json:"tasks"`
	Total  int64 `json:"total"`
	Offset int   `json:"offset"`
	Limit  int   `json:"limit"`
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
