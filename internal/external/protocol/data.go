package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
)

// CreateData is the data of task.create, plus Attempt and
// Token, our extensions.
type CreateData struct {
	TaskID   string          `json:"task_id"`
	TaskType string          `json:"task_type"`
	Params   json.RawMessage `json:"params"`
	// SessionID is the owning session ("" for tasks without a session).
	SessionID string `json:"session_id"`
	// Timeout is the attempt's deadline in seconds, fractions allowed
	// (0.5): the task's own timeout, else the workers' default the agent
	// enforces. The agent never sends 0; a producer that does means none.
	Timeout   float64 `json:"timeout"`
	Priority  string  `json:"priority"`
	CreatedBy string  `json:"created_by"`
	// Attempt counts dispatches of this task, from 1 (retries add one).
	Attempt int `json:"attempt,omitempty"`
	// Token is the fencing token of this attempt; a service echoes it in
	// its completed/failed/progress events so that a stale attempt's
	// report cannot change a newer attempt.
	Token string `json:"token,omitempty"`
	// Traceparent is the W3C trace context of this dispatch (the agent's
	// "publish task.create" span), absent when the task is not traced. A
	// service may continue the trace: its handler's span a child of it.
	Traceparent string `json:"traceparent,omitempty"`
}

// CompletedData is the data of task.completed.
type CompletedData struct {
	TaskID string `json:"task_id"`
	// Status is always "success".
	Status string `json:"status"`
	// Result is a JSON object: by convention file_url, summary and
	// metadata; a service may add fields.
	Result      json.RawMessage `json:"result"`
	DurationMS  int64           `json:"duration_ms"`
	CompletedBy string          `json:"completed_by"`
	Token       string          `json:"token,omitempty"`
	// Traceparent (optional) is the trace context of the service's
	// handler span (or task.create's traceparent, echoed): the agent's
	// span applying the outcome is its child.
	Traceparent string `json:"traceparent,omitempty"`
}

// ErrorInfo is the error object of task.failed.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Details is a JSON object; empty is sent as {} (form).
	Details json.RawMessage `json:"details"`
	// Retryable overrides the classification by Code (an extension): true
	// retries with backoff, false goes straight to the DLQ.
	Retryable *bool `json:"retryable,omitempty"`
}

// MarshalJSON writes empty (or null) Details as {}, as docs/protocol.md shows.
func (e ErrorInfo) MarshalJSON() ([]byte, error) {
	type plain ErrorInfo
	if t := bytes.TrimSpace(e.Details); len(t) == 0 || string(t) == "null" {
		e.Details = json.RawMessage(`{}`)
	}
	return json.Marshal(plain(e))
}

// transientCodes are the error codes of transient category.
var transientCodes = map[string]bool{
	"TIMEOUT": true, "NETWORK_TIMEOUT": true, "NETWORK_ERROR": true,
	"SERVICE_UNAVAILABLE": true, "UNAVAILABLE": true,
	"RATE_LIMITED": true, "RATE_LIMIT_EXCEEDED": true, "TRANSIENT": true,
}

// IsTransient reports whether the failure should be retried: Retryable when
// set, else whether Code is one of transient categories
// (network timeouts, service unavailable, rate limit exceeded).
func (e ErrorInfo) IsTransient() bool {
	if e.Retryable != nil {
		return *e.Retryable
	}
	return transientCodes[strings.ToUpper(e.Code)]
}

// FailedData is the data of task.failed.
type FailedData struct {
	TaskID string `json:"task_id"`
	// Status is always "failed".
	Status     string    `json:"status"`
	Error      ErrorInfo `json:"error"`
	DurationMS int64     `json:"duration_ms"`
	FailedBy   string    `json:"failed_by"`
	Token      string    `json:"token,omitempty"`
	// Traceparent: as CompletedData's.
	Traceparent string `json:"traceparent,omitempty"`
}

// TimeoutData is the data of task.timeout.
type TimeoutData struct {
	TaskID string `json:"task_id"`
	// Status is always "timeout".
	Status    string `json:"status"`
	Message   string `json:"message"`
	ElapsedMS int64  `json:"elapsed_ms"`
}

// DLQData is the data of task.dlq: a task that failed for good.
type DLQData struct {
	TaskID    string    `json:"task_id"`
	TaskType  string    `json:"task_type"`
	SessionID string    `json:"session_id"`
	Error     ErrorInfo `json:"error"`
	Attempts  int       `json:"attempts"`
	// Reason is "permanent" or "retries_exhausted".
	Reason string `json:"reason"`
}

// ProgressData is the data of task.progress (extension): a running task's
// progress; it doubles as the service's heartbeat for the task.
type ProgressData struct {
	TaskID string `json:"task_id"`
	// Percent is 0–100.
	Percent float64 `json:"percent"`
	Message string  `json:"message,omitempty"`
	// ETASeconds estimates the time left; 0 when unknown.
	ETASeconds float64 `json:"eta_seconds,omitempty"`
	ReportedBy string  `json:"reported_by"`
	Token      string  `json:"token,omitempty"`
}

// CancelData is the data of task.cancel (extension): the service running
// the task should stop it and report it failed with code CANCELLED.
type CancelData struct {
	TaskID string `json:"task_id"`
	Reason string `json:"reason,omitempty"`
}

// Priorities accepted in task.create.
var priorities = map[string]bool{"high": true, "normal": true, "low": true}

// Unmarshal decodes e's data into the struct of its type and validates it.
// It returns *CreateData, *CompletedData, *FailedData, *TimeoutData,
// *DLQData, *ProgressData or *CancelData.
func (e Event) Unmarshal() (any, error) {
	var v interface{ validate() error }
	switch e.Type {
	case TypeCreate:
		v = &CreateData{}
	case TypeCompleted:
		v = &CompletedData{}
	case TypeFailed:
		v = &FailedData{}
	case TypeTimeout:
		v = &TimeoutData{}
	case TypeDLQ:
		v = &DLQData{}
	case TypeProgress:
		v = &ProgressData{}
	case TypeCancel:
		v = &CancelData{}
	default:
		return nil, fieldErr("event_type", "unknown type %q", truncate(string(e.Type)))
	}
	if !decodeFast(e.Data, e.valid, v) {
		if err := json.Unmarshal(e.Data, v); err != nil {
			return nil, fieldErr("data", "%v", err)
		}
	}
	if err := v.validate(); err != nil {
		return nil, err
	}
	return v, nil
}

// As decodes e into *T, failing when e is of another type.
func As[T any](e Event) (*T, error) {
	v, err := e.Unmarshal()
	if err != nil {
		return nil, err
	}
	t, ok := v.(*T)
	if !ok {
		var zero T
		return nil, fieldErr("event_type", "%s does not carry %T", e.Type, zero)
	}
	return t, nil
}

func checkObject(field string, raw json.RawMessage, allowNull bool) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		if allowNull {
			return nil
		}
		return fieldErr(field, "missing")
	}
	if t[0] != '{' {
		return fieldErr(field, "must be a JSON object")
	}
	return nil
}

func checkText(field, s string, max int) error {
	if len(s) > max {
		return fieldErr(field, "longer than %d bytes", max)
	}
	return nil
}

// ValidTaskType reports whether s is a task type name: 1–64 of a-z, 0-9,
// '.', '_' and '-', starting with a letter.
func ValidTaskType(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Validate checks d as Unmarshal checks a decoded task.create (for a
// producer that built d and need not decode what it encoded). It may fill
// in defaults (priority): call it on a copy.
func (d *CreateData) Validate() error { return d.validate() }

func (d *CreateData) validate() error {
	if err := checkID("data.task_id", d.TaskID); err != nil {
		return err
	}
	if !ValidTaskType(d.TaskType) {
		return fieldErr("data.task_type", "%q is not a task type (a-z, 0-9, '.', '_', '-')", truncate(d.TaskType))
	}
	if err := checkObject("data.params", d.Params, true); err != nil {
		return err
	}
	if d.SessionID != "" {
		if err := checkID("data.session_id", d.SessionID); err != nil {
			return err
		}
	}
	if d.Timeout < 0 {
		return fieldErr("data.timeout", "negative")
	}
	if d.Timeout > 7*24*3600 {
		return fieldErr("data.timeout", "more than 7 days")
	}
	if d.Priority == "" {
		d.Priority = "normal"
	}
	if !priorities[d.Priority] {
		return fieldErr("data.priority", "%q is not high, normal or low", truncate(d.Priority))
	}
	if d.Attempt < 0 {
		return fieldErr("data.attempt", "negative")
	}
	return checkText("data.token", d.Token, MaxIDBytes)
}

// Validate checks d as Unmarshal checks a decoded task.completed.
func (d *CompletedData) Validate() error { return d.validate() }

func (d *CompletedData) validate() error {
	if err := checkID("data.task_id", d.TaskID); err != nil {
		return err
	}
	if d.Status != "success" {
		return fieldErr("data.status", "want \"success\", got %q", truncate(d.Status))
	}
	if err := checkObject("data.result", d.Result, true); err != nil {
		return err
	}
	if d.DurationMS < 0 {
		return fieldErr("data.duration_ms", "negative")
	}
	if err := checkText("data.completed_by", d.CompletedBy, MaxIDBytes); err != nil {
		return err
	}
	return checkText("data.token", d.Token, MaxIDBytes)
}

func (e *ErrorInfo) validate(prefix string) error {
	if e.Code == "" {
		return fieldErr(prefix+".code", "empty")
	}
	if err := checkText(prefix+".code", e.Code, 64); err != nil {
		return err
	}
	if err := checkText(prefix+".message", e.Message, 4096); err != nil {
		return err
	}
	return checkObject(prefix+".details", e.Details, true)
}

func (d *FailedData) validate() error {
	if err := checkID("data.task_id", d.TaskID); err != nil {
		return err
	}
	if d.Status != "failed" {
		return fieldErr("data.status", "want \"failed\", got %q", truncate(d.Status))
	}
	if err := d.Error.validate("data.error"); err != nil {
		return err
	}
	if d.DurationMS < 0 {
		return fieldErr("data.duration_ms", "negative")
	}
	if err := checkText("data.failed_by", d.FailedBy, MaxIDBytes); err != nil {
		return err
	}
	return checkText("data.token", d.Token, MaxIDBytes)
}

func (d *TimeoutData) validate() error {
	if err := checkID("data.task_id", d.TaskID); err != nil {
		return err
	}
	if d.Status != "timeout" {
		return fieldErr("data.status", "want \"timeout\", got %q", truncate(d.Status))
	}
	if d.ElapsedMS < 0 {
		return fieldErr("data.elapsed_ms", "negative")
	}
	return checkText("data.message", d.Message, 4096)
}

func (d *DLQData) validate() error {
	if err := checkID("data.task_id", d.TaskID); err != nil {
		return err
	}
	if d.Attempts < 0 {
		return fieldErr("data.attempts", "negative")
	}
	return d.Error.validate("data.error")
}

func (d *ProgressData) validate() error {
	if err := checkID("data.task_id", d.TaskID); err != nil {
		return err
	}
	if !(d.Percent >= 0 && d.Percent <= 100) {
		return fieldErr("data.percent", "%v is outside 0–100", d.Percent)
	}
	if !(d.ETASeconds >= 0) {
		return fieldErr("data.eta_seconds", "negative")
	}
	if err := checkText("data.message", d.Message, 4096); err != nil {
		return err
	}
	return checkText("data.token", d.Token, MaxIDBytes)
}

func (d *CancelData) validate() error {
	if err := checkID("data.task_id", d.TaskID); err != nil {
		return err
	}
	return checkText("data.reason", d.Reason, 4096)
}

// String renders the data type name for logs.
func (t Type) String() string { return string(t) }
