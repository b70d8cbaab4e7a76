package llm

import (
	"errors"
	"fmt"
	"time"
)

// ErrMalformedResponse says a 2xx answer was not a chat-completions body.
var ErrMalformedResponse = errors.New("llm: malformed response")

// APIError is a non-2xx answer (or a 2xx body carrying an error object).
// Message comes from the body's error.message, shortened, key redacted.
type APIError struct {
	StatusCode int
	Message    string
	// RetryAfter is the server's Retry-After (0 when absent or unreadable).
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("llm: HTTP %d: %s (retry after %s)", e.StatusCode, e.Message, e.RetryAfter)
	}
	return fmt.Sprintf("llm: HTTP %d: %s", e.StatusCode, e.Message)
}

// TransportError is a call that got no complete answer: connection refused
// or reset, or no answer within the timeout (Timeout true).
type TransportError struct {
	Op      string // "send" or "read response"
	Timeout bool
	Message string
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("llm: %s: %s", e.Op, e.Message)
}
