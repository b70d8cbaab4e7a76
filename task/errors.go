package task

import (
	"errors"
	"fmt"
	"time"
)

// Class is how a failure is treated by the retry rules.
type Class string

const (
	// ClassTransient failures are retried on the schedule of their error type.
	ClassTransient Class = "transient"
	// ClassPermanent failures go straight to the DLQ.
	ClassPermanent Class = "permanent"
)

// Error types of RETRY_SCHEDULES, plus the permanent ones.
const (
	ErrTypeRateLimit          = "RateLimitError"
	ErrTypeServiceUnavailable = "ServiceUnavailable"
	ErrTypeNetworkTimeout     = "NetworkTimeout"
	ErrTypeDefault            = "Default"
	ErrTypeInvalidInput       = "InvalidInput"
	ErrTypeAuth               = "AuthenticationError"
	ErrTypeForbidden          = "PermissionDenied"
	ErrTypeNotFound           = "NotFound"
	ErrTypePanic              = "Panic"
	ErrTypeTaskTooOld         = "TaskTooOld"
	// ErrTypeTaskTimeout is an attempt that ran past the task's own
	// timeout (retried on the Default schedule unless one is set for it).
	ErrTypeTaskTimeout = "TaskTimeout"
	// ErrTypePermanent is a permanent failure whose handler named no
	// error type (task.Permanent(err)).
	ErrTypePermanent = "PermanentFailure"
)

// Handlers report how a failure must be treated by returning (or wrapping)
// one of the errors below; any other error is classified by the retry
// package (timeouts and connection errors transient, the rest Default).

// PermanentError marks a failure that must not be retried.
type PermanentError struct {
	Type string // error type recorded on the task; ErrTypePermanent when empty
	Err  error
}

// Error returns the wrapped error's text.
func (e *PermanentError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so the task goes to the DLQ without retrying.
func Permanent(err error) error { return &PermanentError{Err: err} }

// TransientError marks a failure to retry on the schedule of Type, or after
// exactly After when After > 0 (a 429's Retry-After, a handler's snooze).
type TransientError struct {
	Type  string
	After time.Duration
	Err   error
}

// Error returns the wrapped error's text.
func (e *TransientError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *TransientError) Unwrap() error { return e.Err }

// RetryAfter wraps err so the task is retried after d (counting a retry).
func RetryAfter(err error, d time.Duration) error {
	return &TransientError{Type: ErrTypeDefault, After: d, Err: err}
}

// Transient wraps err as a transient failure of the given error type.
func Transient(errType string, err error) error {
	return &TransientError{Type: errType, Err: err}
}

// CancelError tells the engine the task is cancelled: it ends CANCELLED.
type CancelError struct{ Err error }

// Error says the task was cancelled, and why.
func (e *CancelError) Error() string { return "cancelled: " + e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *CancelError) Unwrap() error { return e.Err }

// Cancel wraps err so the task ends CANCELLED, not retried.
func Cancel(err error) error { return &CancelError{Err: err} }

// DependencyUnavailableError says an outside dependency cannot be used now
// (its circuit breaker is open, or a fleet-wide rate limit is reached): the
// task waits (rescheduled) without spending a retry.
type DependencyUnavailableError struct {
	Dependency string
	Wait       time.Duration
	// Reason says why; "circuit open" when empty.
	Reason string
}

// Error names the dependency, why it cannot be used and the wait.
func (e *DependencyUnavailableError) Error() string {
	reason := e.Reason
	if reason == "" {
		reason = "circuit open"
	}
	return fmt.Sprintf("dependency %q unavailable (%s), retry in %s", e.Dependency, reason, e.Wait)
}

// Causes of a handler's context ending early (context.Cause), besides
// the attempt's own deadline (context.DeadlineExceeded) and ErrLeaseLost.
var (
	// ErrCancelRequested: the task was cancelled while it ran.
	ErrCancelRequested = errors.New("task cancel requested")
	// ErrShutdown: the worker is stopping and its shutdown grace is over;
	// the task goes back to its queue without spending a retry.
	ErrShutdown = errors.New("worker shutting down")
)

// Sentinels returned by the store's transitions.
var (
	ErrNotFound        = errors.New("task not found")
	ErrWrongState      = errors.New("task is not in the state this transition starts from")
	ErrLeaseLost       = errors.New("task lease lost: another worker owns the task now")
	ErrDuplicateTaskID = errors.New("a task with this id already exists")
)

// StateError says which state a task was in when a transition refused it.
type StateError struct {
	TaskID string
	Have   State
	Want   []State
}

// Error says which state the task was in and which the transition needs.
func (e *StateError) Error() string {
	return fmt.Sprintf("task %s is %s; this needs %v", e.TaskID, e.Have, e.Want)
}

// Unwrap makes errors.Is(err, ErrWrongState) true.
func (e *StateError) Unwrap() error { return ErrWrongState }
