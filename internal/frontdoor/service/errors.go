package service

import (
	"errors"
	"fmt"
	"time"
)

// Kind is the class of a service error; each front end (HTTP, MCP) maps it
// to its own status.
type Kind int

// Kinds of errors. The HTTP mapping is in internal/frontend/httpapi.
const (
	KindInternal        Kind = iota // a bug or an unexpected failure (500)
	KindInvalid                     // the request is malformed (400)
	KindUnprocessable               // well-formed but a value is not acceptable (422)
	KindUnauthenticated             // no or bad credentials (401)
	KindForbidden                   // credentials fine, not allowed (403)
	KindNotFound                    // no such thing (404)
	KindConflict                    // the thing's state forbids it (409)
	KindTooLarge                    // a body or field is too large (413)
	KindUnavailable                 // a dependency (Redis) is down (503)
	KindRateLimited                 // too many requests from the caller (429); RetryAfter says when
	KindUpstream                    // a backend the request needed failed (502), e.g. a plan's data store
	KindTimeout                     // the work did not finish within its deadline (504)
)

// Error is what every service method returns for a failure a caller can act
// on: a stable machine Code, a human Message, and the Field it concerns.
type Error struct {
	Kind    Kind
	Code    string // stable, snake_case: "validation_failed", "task_not_found", ...
	Message string
	Field   string // the request field the error concerns, when there is one
	Err     error  // the underlying cause, if any (not shown to clients)
	// RetryAfter is when to try again (KindRateLimited); 0 = unknown.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (field %s)", e.Code, e.Message, e.Field)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Sentinels for errors.Is on the common cases.
var (
	ErrNotFound  = errors.New("not found")
	ErrForbidden = errors.New("forbidden")
)

// Is lets errors.Is(err, ErrNotFound) / ErrForbidden match an *Error.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Kind == KindNotFound
	case ErrForbidden:
		return e.Kind == KindForbidden
	}
	return false
}

// Invalid returns a 400-class error about field.
func Invalid(code, field, format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Unprocessable returns a 422-class error about field.
func Unprocessable(field, format string, args ...any) *Error {
	return &Error{Kind: KindUnprocessable, Code: "validation_failed", Field: field, Message: fmt.Sprintf(format, args...)}
}

// Conflict returns a 409-class error.
func Conflict(code, format string, args ...any) *Error {
	return &Error{Kind: KindConflict, Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFound returns a 404-class error.
func NotFound(code, format string, args ...any) *Error {
	return &Error{Kind: KindNotFound, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Forbidden returns a 403-class error.
func Forbidden(format string, args ...any) *Error {
	return &Error{Kind: KindForbidden, Code: "forbidden", Message: fmt.Sprintf(format, args...)}
}

// Unauthenticated returns a 401-class error.
func Unauthenticated(format string, args ...any) *Error {
	return &Error{Kind: KindUnauthenticated, Code: "unauthenticated", Message: fmt.Sprintf(format, args...)}
}

// TooLarge returns a 413-class error about field.
func TooLarge(code, field, format string, args ...any) *Error {
	return &Error{Kind: KindTooLarge, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Internal wraps an unexpected failure; the message shown is generic.
func Internal(err error) *Error {
	return &Error{Kind: KindInternal, Code: "internal", Message: "internal error", Err: err}
}

// Unavailable wraps a dependency failure (Redis unreachable).
func Unavailable(err error) *Error {
	return &Error{Kind: KindUnavailable, Code: "unavailable", Message: "a dependency is unavailable, try again", Err: err}
}
