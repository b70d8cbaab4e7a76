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
	TimeoutSeconds float64         `json:"timeout,omitempty" jsonschema:"seconds one attempt may run"`
	WaitingOn      []string        `json:"waiting_on,omitempty" jsonschema:"submitted with depends_on and not released yet: the tasks it waits for"`
	WaitingFor     *WaitingFor     `json:"waiting_for,omitempty" jsonschema:"why a PENDING task is not picked up, when no service runs for its type"`
	LastError      *string         `json:"last_error" jsonschema:"null until a failure"`
	ErrorType      *string         `json:"error_type" jsonschema:"null until a failure"`
	RetryAfter     *time.Time      `json:"retry_after" jsonschema:"null unless a retry is scheduled"`
	CompletedAt    *time.Time      `json:"completed_at" jsonschema:"null until the task is COMPLETED"`
	Result         json.RawMessage `json:"result" openapi:"type=object" jsonschema:"the handler's result (null until COMPLETED); summarize: {summary, summarizer, model}"`
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

// WireForm is a value of the struct MarshalJSON writes (the API's OpenAPI
// schema of a task is derived from it).
func (TaskView) WireForm() any { return taskViewJSON{} }

// dlqItemJSON is the wire form of a DLQItem: the task as TaskView writes
// it, plus its DLQ snapshot.
type dlqItemJSON struct {
	taskViewJSON
	DLQ dlqSnapshotJSON `json:"dlq" jsonschema:"the failure snapshot taken when it was dead-lettered"`
}

// dlqSnapshotJSON is a DLQ snapshot (store.DLQEntry.Snapshot) on the wire:
// dlq_at (unix ms in Redis) as an RFC 3339 time and retry_count as a
// number, like the task's own fields. A snapshot's missing field is
// absent.
type dlqSnapshotJSON struct {
	TaskID     string     `json:"task_id,omitempty"`
	TaskType   string     `json:"task_type,omitempty"`
	ErrorType  string     `json:"error_type,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
	RetryCount *int       `json:"retry_count,omitempty" jsonschema:"retries spent when it was dead-lettered"`
	FromState  task.State `json:"from_state,omitempty" jsonschema:"the state it left for the DLQ"`
	DLQAt      *time.Time `json:"dlq_at,omitempty" jsonschema:"when it was dead-lettered"`
}

// MarshalJSON writes the task as TaskView does, plus its DLQ snapshot
// (the promoted TaskView.MarshalJSON would drop it).
func (d DLQItem) MarshalJSON() ([]byte, error) {
	snap := dlqSnapshotJSON{TaskID: d.DLQ["task_id"], TaskType: d.DLQ["task_type"], ErrorType: d.DLQ["error_type"],
		LastError: d.DLQ["last_error"], FromState: task.State(d.DLQ["from_state"])}
	if ms, err := strconv.ParseInt(d.DLQ["dlq_at"], 10, 64); err == nil {
		at := time.UnixMilli(ms).UTC()
		snap.DLQAt = &at
	}
	if n, err := strconv.Atoi(d.DLQ["retry_count"]); err == nil {
		snap.RetryCount = &n
	}
	return json.Marshal(dlqItemJSON{d.TaskView.wire(), snap})
}

// WireForm is a value of the struct MarshalJSON writes.
func (DLQItem) WireForm() any { return dlqItemJSON{} }
