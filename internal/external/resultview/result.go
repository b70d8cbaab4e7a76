// Package resultview builds the answers of the retrieval tools get_task_result
// (per status: the result, the error details, progress and ETA, the queue
// position, or the timeout message; a task or result that has left Redis is
// read back from the PostgreSQL archive) and list_user_tasks (one line per
// task with a status filter). It owns the result cache and progress keys.
// Who may see what is not decided here: internal/frontdoor/service's Result and
// ListResults apply the one ownership rule and call this package.
package resultview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/task"
)

// Progress is a running task's latest report.
type Progress struct {
	Percent    float64   `json:"percent"`
	Message    string    `json:"message,omitempty"`
	ETASeconds float64   `json:"eta_seconds,omitempty" jsonschema:"seconds left, by the service's estimate"`
	ReportedBy string    `json:"reported_by,omitempty" jsonschema:"the service that reported it"`
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
	Details json.RawMessage `json:"details,omitempty" openapi:"type=object"`
}

// View is get_task_result's answer.
type View struct {
	TaskID   string `json:"task_id"`
	TaskType string `json:"task_type"`
	// Status is lowercase name: pending, processing, completed,
	// failed, timeout, cancelled (failed covers the DLQ; State says which).
	Status     string          `json:"status" openapi:"enum=pending|processing|waiting_for_service|completed|failed|timeout|cancelled" jsonschema:"failed covers the DLQ: state says which; waiting_for_service: an external task no live service takes (state PENDING or ACTIVE)"`
	State      task.State      `json:"state"`
	Result     json.RawMessage `json:"result,omitempty" jsonschema:"completed: the task's result"`
	Error      *ErrorDetails   `json:"error,omitempty" jsonschema:"failed, timeout: the error"`
	Progress   *Progress       `json:"progress,omitempty" jsonschema:"processing: the latest progress an external service reported"`
	ETASeconds *float64        `json:"eta_seconds,omitempty" jsonschema:"processing: seconds left, by the last estimate"`
	QueuePos   *int64          `json:"queue_position,omitempty" jsonschema:"pending: 1 = next"`
	// WaitingOn lists the tasks a task submitted with depends_on waits
	// for; it is pending and in no queue until they complete.
	WaitingOn   []string   `json:"waiting_on,omitempty" jsonschema:"submitted with depends_on and not released yet: the tasks it waits for"`
	Message     string     `json:"message" jsonschema:"what the status means, in words"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// Source says where the answer came from: "redis", "cache" or "archive".
	Source string `json:"source" openapi:"enum=redis|cache|archive"`
}

// Config configures a Results.
type Config struct {
	// Archive is read when a task or its result has left Redis. Optional.
	Archive *archive.Archive
	// QueueScan bounds the queue-position search. Default 10000.
	QueueScan int
	// Clock is the time ETAs count down from. Default the real clock.
	Clock clock.Clock
	// ArtifactDir is the artifact directory shared with the services
	// (TASKFLOW_ARTIFACT_DIR), where files too large for Redis are. Default
	// empty: such files cannot be served (File says so).
	ArtifactDir string
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
	if cfg.QueueScan == 0 {
		cfg.QueueScan = 10000
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Results{st: st, rdb: st.Client(), cfg: cfg, k: NewKeys(st.Namespace())}
}

// StatusWaitingForService is the status of an unfinished external task
// whose type no live service takes (its state stays PENDING or ACTIVE).
const StatusWaitingForService = "waiting_for_service"

// StatusOf maps a state to status name.
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

// Lookup reads task id from Redis, else from the archive; source says
// which ("redis" or "archive"). A task in neither is task.ErrNotFound.
func (r *Results) Lookup(ctx context.Context, id string) (*task.Task, string, error) {
	t, err := r.st.Get(ctx, id)
	if errors.Is(err, task.ErrNotFound) && r.cfg.Archive != nil {
		t, err = r.cfg.Archive.Get(ctx, id)
		if errors.Is(err, archive.ErrNotFound) {
			err = task.ErrNotFound
		}
		return t, "archive", err
	}
	return t, "redis", err
}

// Read is get_task_result's answer for task id whoever asks (Lookup, then
// View): the caller applies the ownership rule (internal/frontdoor/service does).
func (r *Results) Read(ctx context.Context, id string) (View, error) {
	t, source, err := r.Lookup(ctx, id)
	if err != nil {
		return View{}, err
	}
	return r.View(ctx, t, source), nil
}

// View is get_task_result's answer for t, read from source (Lookup's).
func (r *Results) View(ctx context.Context, t *task.Task, source string) View {
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
	return v
}

// WaitingView is get_task_result's answer for t, a task that waits for
// the tasks waitingOn and is not in the store yet.
func WaitingView(t *task.Task, waitingOn []string) View {
	return View{TaskID: t.ID, TaskType: t.Type, Status: StatusOf(t.State), State: t.State, WaitingOn: waitingOn,
		Message:   fmt.Sprintf("The task waits for %s to complete; it is queued then.", tasksPhrase(waitingOn)),
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, Source: "redis"}
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

// position finds the task in its pending queue (1 = next) — the retry
// list of its named queue (a retry, scheduled or asked for by hand, whose
// retry count is then 0 again), else its priority's list — scanning at
// most QueueScan entries of each; nil when not found (delayed, or
// deeper).
func (r *Results) position(ctx context.Context, t *task.Task) *int64 {
	list := store.QueuePrimary
	switch t.Priority {
	case task.PriorityHigh:
		list = store.QueuePrimaryHigh
	case task.PriorityLow:
		list = store.QueuePrimaryLow
	}
	for _, q := range []store.Queue{store.QueueRetry, list} {
		for off := 0; off < r.cfg.QueueScan; off += 1000 {
			n := min(1000, r.cfg.QueueScan-off)
			ids, total, err := r.st.QueueContentsOf(ctx, t.Queue, q, store.ListOptions{Offset: off, Limit: n})
			if err != nil {
				return nil
			}
			for i, id := range ids {
				if id == t.ID {
					pos := int64(off + i + 1)
					return &pos
				}
			}
			if int64(off+n) >= total {
				break
			}
		}
	}
	return nil
}

// Filter is list_user_tasks's status_filter.
type Filter string

// The filters, plus processing and timeout.
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

// States are the task states f selects (nil: all).
func (f Filter) States() []task.State {
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
	Status    string     `json:"status" openapi:"enum=pending|processing|completed|failed|timeout|cancelled"`
	State     task.State `json:"state"`
	Summary   string     `json:"summary" jsonschema:"one line, in words"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	Archived  bool       `json:"archived,omitempty" jsonschema:"read from the archive"`
	// WaitingOn: as View.WaitingOn.
	WaitingOn []string `json:"waiting_on,omitempty" jsonschema:"submitted with depends_on and not released yet: the tasks it waits for"`
}

// Summary is what a list_user_tasks line is made from.
type Summary struct {
	ID        string
	Type      string
	State     task.State
	ErrorType string
	LastError string
	WaitingOn []string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ItemOf is the list_user_tasks line of s; archived says it was read
// from the archive.
func ItemOf(s Summary, archived bool) Item {
	return Item{TaskID: s.ID, TaskType: s.Type, Status: StatusOf(s.State), State: s.State, Summary: summaryOf(s),
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Archived: archived, WaitingOn: s.WaitingOn}
}

// Archived lists up to limit of a session's archived tasks in states
// (nil: all), newest first; none without an archive.
func (r *Results) Archived(ctx context.Context, sessionID string, states []task.State, limit int) ([]*task.Task, error) {
	if r.cfg.Archive == nil {
		return nil, nil
	}
	return r.cfg.Archive.ListSession(ctx, sessionID, states, limit)
}

func summaryOf(s Summary) string {
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
