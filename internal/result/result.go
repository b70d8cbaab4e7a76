// Package result answers spec 003 §8's retrieval tools over HTTP:
// get_task_result (per status: the result, the error details, progress and
// ETA, the queue position, or the timeout message; a result older than the
// Redis cache is read back from the PostgreSQL archive) and
// list_user_tasks (a session's tasks with a status filter). A session sees
// only its own tasks; the admin sees every task.
package result

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/archive"
	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/clock"
	"github.com/taskflow/taskflow/internal/service"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/task"
)

// Sentinels of Get.
var (
	// ErrNotFound: no such task, or not the caller's (a session is never
	// told that another session's task exists).
	ErrNotFound = errors.New("task not found")
	// ErrUnauthenticated: no principal.
	ErrUnauthenticated = errors.New("authentication required")
)

// Progress is a running task's latest report.
type Progress struct {
	Percent    float64   `json:"percent"`
	Message    string    `json:"message,omitempty"`
	ETASeconds float64   `json:"eta_seconds,omitempty"`
	ReportedBy string    `json:"reported_by,omitempty"`
	At         time.Time `json:"at"`
}

// ErrorDetails are a failed task's error.
type ErrorDetails struct {
	Code       string             `json:"code"`
	Message    string             `json:"message"`
	RetryCount int                `json:"retry_count"`
	MaxRetries int                `json:"max_retries"`
	WillRetry  bool               `json:"will_retry"`
	RetryAt    *time.Time         `json:"retry_at,omitempty"`
	History    []task.ErrorRecord `json:"history"`
	// Details is the last error's structured detail (an external
	// service's error.details), when it reported any.
	Details json.RawMessage `json:"details,omitempty"`
}

// View is get_task_result's answer.
type View struct {
	TaskID   string `json:"task_id"`
	TaskType string `json:"task_type"`
	// Status is spec 003's lowercase name: pending, processing, completed,
	// failed, timeout, cancelled (failed covers the DLQ; State says which).
	Status     string          `json:"status"`
	State      task.State      `json:"state"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *ErrorDetails   `json:"error,omitempty"`
	Progress   *Progress       `json:"progress,omitempty"`
	ETASeconds *float64        `json:"eta_seconds,omitempty"`
	QueuePos   *int64          `json:"queue_position,omitempty"`
	// WaitingOn lists the tasks a task submitted with depends_on waits
	// for; it is pending and in no queue until they complete.
	WaitingOn   []string   `json:"waiting_on,omitempty"`
	Message     string     `json:"message"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// Source says where the answer came from: "redis", "cache" or "archive".
	Source string `json:"source"`
}

// Lister lists a principal's tasks (service.Service does).
type Lister interface {
	List(ctx context.Context, p auth.Principal, in service.ListInput) (service.TaskList, error)
}

// Getter shows one task, including one that waits on other tasks and is
// not in the store yet (service.Service does). When the Lister is also a
// Getter, get_task_result answers for such tasks instead of 404.
type Getter interface {
	Get(ctx context.Context, p auth.Principal, id string) (service.TaskView, error)
}

// Config configures a Results.
type Config struct {
	// Namespace is the deployment's key namespace. Default "taskflow".
	Namespace string
	// Archive is read when a task or its result has left Redis. Optional.
	Archive *archive.Archive
	// Lister lists a session's tasks in Redis. Required for List.
	Lister Lister
	// QueueScan bounds the queue-position search. Default 10000.
	QueueScan int
	// Clock is the time ETAs count down from. Default the real clock.
	Clock clock.Clock
}

// Results answers the retrieval tools.
type Results struct {
	st  *store.Store
	rdb redis.UniversalClient
	cfg Config
	k   Keys
}

// New returns a Results over st.
func New(st *store.Store, cfg Config) *Results {
	if cfg.Namespace == "" {
		cfg.Namespace = "taskflow"
	}
	if cfg.QueueScan == 0 {
		cfg.QueueScan = 10000
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Results{st: st, rdb: st.Client(), cfg: cfg, k: NewKeys(cfg.Namespace)}
}

// StatusOf maps a state to spec 003's status name.
func StatusOf(s task.State) string {
	switch s {
	case task.StatePending:
		return "pending"
	case task.StateActive:
		return "processing"
	case task.StateCompleted:
		return "completed"
	case task.StateFailed, task.StateDLQ:
		return "failed"
	case task.StateTimeout:
		return "timeout"
	case task.StateCancelled:
		return "cancelled"
	}
	return string(s)
}

func allowed(p auth.Principal, t *task.Task) bool {
	return p.Admin || (p.SessionID != "" && t.SessionID == p.SessionID)
}

// Get is get_task_result.
func (r *Results) Get(ctx context.Context, p auth.Principal, id string) (View, error) {
	if p.Anonymous() {
		return View{}, ErrUnauthenticated
	}
	t, err := r.st.Get(ctx, id)
	source := "redis"
	if errors.Is(err, task.ErrNotFound) && r.cfg.Archive != nil {
		t, err = r.cfg.Archive.Get(ctx, id)
		source = "archive"
		if errors.Is(err, archive.ErrNotFound) {
			err = task.ErrNotFound
		}
	}
	if errors.Is(err, task.ErrNotFound) {
		return r.waiting(ctx, p, id)
	}
	if err != nil {
		return View{}, err
	}
	if !allowed(p, t) {
		return View{}, ErrNotFound
	}
	v := View{TaskID: t.ID, TaskType: t.Type, Status: StatusOf(t.State), State: t.State, CreatedAt: t.CreatedAt,
		UpdatedAt: t.UpdatedAt, CompletedAt: t.CompletedAt, Source: source}
	switch t.State {
	case task.StateCompleted:
		v.Result = t.Result
		if len(v.Result) == 0 || string(v.Result) == "null" {
			v.Result, v.Source = r.cachedResult(ctx, t.ID)
		}
		v.Message = "The task is complete."
	case task.StateFailed, task.StateDLQ:
		d := &ErrorDetails{Code: t.ErrorType, Message: t.LastError, RetryCount: t.RetryCount, MaxRetries: t.MaxRetries,
			WillRetry: t.State == task.StateFailed, RetryAt: t.RetryAfter, History: t.ErrorHistory}
		if n := len(t.ErrorHistory); n > 0 {
			d.Details = t.ErrorHistory[n-1].Details
		}
		if d.History == nil {
			d.History = []task.ErrorRecord{}
		}
		v.Error = d
		if t.State == task.StateFailed {
			v.Message = "The task failed and will be retried."
		} else {
			v.Message = "The task failed for good."
		}
	case task.StateActive:
		v.Progress = r.progress(ctx, t.ID)
		v.Message = "The task is being processed."
		if v.Progress != nil && v.Progress.ETASeconds > 0 {
			eta := v.Progress.ETASeconds - r.cfg.Clock.Now().Sub(v.Progress.At).Seconds()
			if eta < 0 {
				eta = 0
			}
			v.ETASeconds = &eta
		} else if t.StartedAt != nil && t.Timeout > 0 {
			eta := t.Timeout.Seconds() - r.cfg.Clock.Now().Sub(*t.StartedAt).Seconds()
			if eta > 0 {
				v.ETASeconds = &eta
			}
		}
	case task.StatePending:
		v.QueuePos = r.position(ctx, t)
		v.Message = "The task is waiting to be picked up."
	case task.StateTimeout:
		v.Progress = r.progress(ctx, t.ID)
		v.Message = fmt.Sprintf("Your %s task is taking longer than expected. The task is still running. "+
			"I'll notify you when it completes, or you can check status with: 'Show task status for %s'", t.Type, t.ID)
	case task.StateCancelled:
		v.Message = "The task was cancelled."
	}
	return v, nil
}

// waiting answers for id when it waits on other tasks (not in the store
// yet), else ErrNotFound.
func (r *Results) waiting(ctx context.Context, p auth.Principal, id string) (View, error) {
	g, ok := r.cfg.Lister.(Getter)
	if !ok {
		return View{}, ErrNotFound
	}
	tv, err := g.Get(ctx, p, id)
	if errors.Is(err, service.ErrNotFound) || errors.Is(err, service.ErrForbidden) {
		return View{}, ErrNotFound
	}
	if err != nil {
		return View{}, err
	}
	if len(tv.WaitingOn) == 0 || !allowed(p, tv.Task) {
		// created between the two reads, or not the caller's
		return View{}, ErrNotFound
	}
	t := tv.Task
	return View{TaskID: t.ID, TaskType: t.Type, Status: StatusOf(t.State), State: t.State, WaitingOn: tv.WaitingOn,
		Message:   fmt.Sprintf("The task waits for %s to complete; it is queued then.", tasksPhrase(tv.WaitingOn)),
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, Source: "redis"}, nil
}

func tasksPhrase(ids []string) string {
	if len(ids) == 1 {
		return "task " + ids[0]
	}
	return fmt.Sprintf("%d other tasks", len(ids))
}

func (r *Results) cachedResult(ctx context.Context, id string) (json.RawMessage, string) {
	raw, err := r.rdb.Get(ctx, r.k.Cache(id)).Bytes()
	if err == nil {
		var c struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(raw, &c) == nil && len(c.Result) > 0 {
			return c.Result, "cache"
		}
	}
	if r.cfg.Archive != nil {
		if t, err := r.cfg.Archive.Get(ctx, id); err == nil {
			return t.Result, "archive"
		}
	}
	return nil, "redis"
}

func (r *Results) progress(ctx context.Context, id string) *Progress {
	m, err := r.rdb.HGetAll(ctx, r.k.Progress(id)).Result()
	if err != nil || len(m) == 0 {
		return nil
	}
	p := &Progress{Message: m["message"], ReportedBy: m["reported_by"]}
	p.Percent, _ = strconv.ParseFloat(m["percent"], 64)
	p.ETASeconds, _ = strconv.ParseFloat(m["eta_seconds"], 64)
	if ms, err := strconv.ParseInt(m["at_ms"], 10, 64); err == nil {
		p.At = time.UnixMilli(ms).UTC()
	}
	return p
}

// position finds the task in its pending queue (1 = next), scanning at
// most QueueScan entries; nil when not found (delayed, or deeper).
func (r *Results) position(ctx context.Context, t *task.Task) *int64 {
	queues := []store.Queue{store.QueuePrimary}
	switch t.Priority {
	case task.PriorityHigh:
		queues = []store.Queue{store.QueuePrimaryHigh}
	case task.PriorityLow:
		queues = []store.Queue{store.QueuePrimaryLow}
	}
	if t.RetryCount > 0 {
		queues = append([]store.Queue{store.QueueRetry}, queues...)
	}
	for _, q := range queues {
		for off := 0; off < r.cfg.QueueScan; off += 1000 {
			ids, total, err := r.st.QueueContents(ctx, q, store.ListOptions{Offset: off, Limit: 1000})
			if err != nil {
				return nil
			}
			for i, id := range ids {
				if id == t.ID {
					pos := int64(off + i + 1)
					return &pos
				}
			}
			if int64(off+1000) >= total {
				break
			}
		}
	}
	return nil
}

// Filter is list_user_tasks's status_filter.
type Filter string

// The filters of spec 003 §8, plus processing and timeout.
const (
	FilterAll        Filter = "all"
	FilterPending    Filter = "pending"
	FilterProcessing Filter = "processing"
	FilterCompleted  Filter = "completed"
	FilterFailed     Filter = "failed"
	FilterTimeout    Filter = "timeout"
)

// ParseFilter accepts the filters ("" is all).
func ParseFilter(s string) (Filter, error) {
	switch f := Filter(s); f {
	case "":
		return FilterAll, nil
	case FilterAll, FilterPending, FilterProcessing, FilterCompleted, FilterFailed, FilterTimeout:
		return f, nil
	}
	return "", fmt.Errorf("status_filter %q: want all, pending, processing, completed, failed or timeout", s)
}

func (f Filter) states() []task.State {
	switch f {
	case FilterPending:
		return []task.State{task.StatePending}
	case FilterProcessing:
		return []task.State{task.StateActive}
	case FilterCompleted:
		return []task.State{task.StateCompleted}
	case FilterFailed:
		return []task.State{task.StateFailed, task.StateDLQ}
	case FilterTimeout:
		return []task.State{task.StateTimeout}
	}
	return nil
}

// Item is one task of list_user_tasks.
type Item struct {
	TaskID    string     `json:"task_id"`
	TaskType  string     `json:"task_type"`
	Status    string     `json:"status"`
	State     task.State `json:"state"`
	Summary   string     `json:"summary"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	Archived  bool       `json:"archived,omitempty"`
	// WaitingOn: as View.WaitingOn.
	WaitingOn []string `json:"waiting_on,omitempty"`
}

// List is list_user_tasks: the session's tasks (newest first, at most
// limit), live ones from Redis and older ones from the archive.
func (r *Results) List(ctx context.Context, p auth.Principal, f Filter, limit int) ([]Item, error) {
	if p.SessionID == "" {
		return nil, ErrUnauthenticated
	}
	if r.cfg.Lister == nil {
		return nil, errors.New("result: no Lister configured")
	}
	if limit < 1 || limit > 1000 {
		limit = 100
	}
	states := f.states()
	seen := map[string]bool{}
	var out []Item
	add := func(s service.TaskSummary, archived bool) {
		if seen[s.ID] || len(out) >= limit {
			return
		}
		seen[s.ID] = true
		out = append(out, Item{TaskID: s.ID, TaskType: s.Type, Status: StatusOf(s.State), State: s.State,
			Summary: summaryOf(s), CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Archived: archived, WaitingOn: s.WaitingOn})
	}
	lists := []string{""}
	if len(states) > 0 {
		lists = lists[:0]
		for _, s := range states {
			lists = append(lists, string(s))
		}
	}
	for _, st := range lists {
		tl, err := r.cfg.Lister.List(ctx, p, service.ListInput{Status: st, PageSize: limit, Summary: true})
		if err != nil {
			return nil, err
		}
		for _, x := range tl.Tasks {
			if s, ok := x.(service.TaskSummary); ok {
				add(s, false)
			}
		}
	}
	if r.cfg.Archive != nil && len(out) < limit {
		ts, err := r.cfg.Archive.ListSession(ctx, p.SessionID, states, limit)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			add(service.SummaryOf(t), true)
		}
	}
	return out, nil
}

func summaryOf(s service.TaskSummary) string {
	switch s.State {
	case task.StateCompleted:
		return "completed; retrieve the result"
	case task.StateFailed:
		return fmt.Sprintf("failed (%s), will retry", s.ErrorType)
	case task.StateDLQ:
		return fmt.Sprintf("failed for good (%s): %s", s.ErrorType, s.LastError)
	case task.StateActive:
		return "processing"
	case task.StatePending:
		if len(s.WaitingOn) > 0 {
			return "waiting for " + tasksPhrase(s.WaitingOn) + " to complete"
		}
		return "waiting in the queue"
	case task.StateTimeout:
		return "taking longer than expected; still running"
	case task.StateCancelled:
		return "cancelled"
	}
	return string(s.State)
}
