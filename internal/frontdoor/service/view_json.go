package service

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/taskflow/taskflow/task"
)

// taskViewJSON is the wire form of a TaskView. The API's task object
// shows last_error, error_type, retry_after, completed_at and result as
// null until they are known; these fields shadow the embedded task's
// (omitted when empty) so that a client finds every key, set or not.
type taskViewJSON struct {
	*task.Task
	TimeoutSeconds float64         `json:"timeout,omitempty"`
	WaitingOn      []string        `json:"waiting_on,omitempty"`
	WaitingFor     *WaitingFor     `json:"waiting_for,omitempty"`
	LastError      *string         `json:"last_error"`
	ErrorType      *string         `json:"error_type"`
	RetryAfter     *time.Time      `json:"retry_after"`
	CompletedAt    *time.Time      `json:"completed_at"`
	Result         json.RawMessage `json:"result"`
}

func (v TaskView) wire() taskViewJSON {
	w := taskViewJSON{Task: v.Task, TimeoutSeconds: v.TimeoutSeconds, WaitingOn: v.WaitingOn, WaitingFor: v.WaitingFor}
	if t := v.Task; t != nil {
		if t.LastError != "" {
			w.LastError = &t.LastError
		}
		if t.ErrorType != "" {
			w.ErrorType = &t.ErrorType
		}
		w.RetryAfter, w.CompletedAt = t.RetryAfter, t.CompletedAt
		if len(t.Result) > 0 {
			w.Result = t.Result
		}
	}
	return w
}

// MarshalJSON writes the task with nullable fields present.
func (v TaskView) MarshalJSON() ([]byte, error) {
	if v.Task == nil {
		return []byte("null"), nil
	}
	return json.Marshal(v.wire())
}

// MarshalJSON writes the task as TaskView does, plus its DLQ snapshot
// (the promoted TaskView.MarshalJSON would drop it). The snapshot's
// dlq_at (unix ms in Redis) is written as an RFC 3339 time and
// retry_count as a number, like the task's own fields.
func (d DLQItem) MarshalJSON() ([]byte, error) {
	snap := make(map[string]any, len(d.DLQ))
	for k, v := range d.DLQ {
		snap[k] = v
	}
	if ms, err := strconv.ParseInt(d.DLQ["dlq_at"], 10, 64); err == nil {
		snap["dlq_at"] = time.UnixMilli(ms).UTC()
	}
	if n, err := strconv.Atoi(d.DLQ["retry_count"]); err == nil {
		snap["retry_count"] = n
	}
	return json.Marshal(struct {
		taskViewJSON
		DLQ map[string]any `json:"dlq"`
	}{d.TaskView.wire(), snap})
}
