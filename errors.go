package taskflow

import (
	"errors"
	"fmt"

	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/task"
)

// Errors a Client returns, for errors.Is. Each comes wrapped in an *Error
// that says more (its Code, Field and Message).
var (
	// ErrNotFound: no such task (or not the session's).
	ErrNotFound = errors.New("taskflow: not found")
	// ErrConflict: the task's state forbids the call (retry a task that is
	// not FAILED or in the DLQ, delete an ACTIVE task, ...).
	ErrConflict = errors.New("taskflow: conflict with the task's state")
	// ErrInvalid: a value of the call is not acceptable: params that break
	// the type's schema, an unknown task type, a bad option. The *Error's
	// Field names it ("params.to", "task_type", "timeout").
	ErrInvalid = errors.New("taskflow: invalid request")
	// ErrUnavailable: Redis did not answer (or the partition holding the
	// task is down); the call may be retried.
	ErrUnavailable = errors.New("taskflow: unavailable")
	// ErrTaskFailed is what Wait returns for a task that ended in the DLQ
	// (a *TaskError with its last error).
	ErrTaskFailed = errors.New("taskflow: task failed")
	// ErrTaskCancelled is what Wait returns for a task that was cancelled
	// (a *TaskError).
	ErrTaskCancelled = errors.New("taskflow: task cancelled")
)

// Error is a Client call's failure: a stable snake_case Code
// ("task_not_found", "validation_failed", "unknown_task_type", ...), the
// Field it concerns when there is one, and a Message for people. It
// matches one of the Err* values above with errors.Is.
type Error struct {
	Code    string
	Field   string
	Message string
	kind    error
	cause   error
}

// Error says the code, the message and the field.
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("taskflow: %s: %s (field %s)", e.Code, e.Message, e.Field)
	}
	return fmt.Sprintf("taskflow: %s: %s", e.Code, e.Message)
}

// Is matches the Err* value of the error's kind.
func (e *Error) Is(target error) bool { return target == e.kind }

// Unwrap returns the cause (a Redis error, for ErrUnavailable).
func (e *Error) Unwrap() error { return e.cause }

// TaskError is what Wait returns for a task that did not complete: it
// matches ErrTaskFailed (in the DLQ) or ErrTaskCancelled.
type TaskError struct {
	// Task is the task as it ended.
	Task *task.Task
}

// Error says how the task ended.
func (e *TaskError) Error() string {
	if e.Task.State == task.StateCancelled {
		return fmt.Sprintf("taskflow: task %s was cancelled", e.Task.ID)
	}
	return fmt.Sprintf("taskflow: task %s failed (%s): %s", e.Task.ID, e.Task.ErrorType, e.Task.LastError)
}

// Is matches ErrTaskFailed or ErrTaskCancelled.
func (e *TaskError) Is(target error) bool {
	if e.Task.State == task.StateCancelled {
		return target == ErrTaskCancelled
	}
	return target == ErrTaskFailed
}

// clientErr turns the service layer's error into the public one.
func clientErr(err error) error {
	if err == nil {
		return nil
	}
	var se *service.Error
	if !errors.As(err, &se) {
		return &Error{Code: "internal", Message: err.Error(), kind: err, cause: err}
	}
	e := &Error{Code: se.Code, Field: se.Field, Message: se.Message, cause: se.Err}
	switch se.Kind {
	case service.KindNotFound:
		e.kind = ErrNotFound
	case service.KindConflict:
		e.kind = ErrConflict
	case service.KindInvalid, service.KindUnprocessable, service.KindTooLarge:
		e.kind = ErrInvalid
	case service.KindUnavailable, service.KindTimeout:
		e.kind = ErrUnavailable
	default:
		e.kind = errors.New("taskflow: " + se.Code)
	}
	return e
}
