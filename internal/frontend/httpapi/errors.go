package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// errorBody is the one error envelope of the API:
// {"error":{"code":"...","message":"...","field":"..."}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code" jsonschema:"stable machine code, e.g. validation_failed, unknown_field, task_not_found, task_not_retryable, task_active"`
	Message string `json:"message" jsonschema:"what is wrong, in words"`
	Field   string `json:"field,omitempty" jsonschema:"the request field or parameter concerned, when there is one"`
}

// statusOf maps a service error kind to its HTTP status.
func statusOf(k service.Kind) int {
	switch k {
	case service.KindInvalid:
		return http.StatusBadRequest
	case service.KindUnprocessable:
		return http.StatusUnprocessableEntity
	case service.KindUnauthenticated:
		return http.StatusUnauthorized
	case service.KindForbidden:
		return http.StatusForbidden
	case service.KindNotFound:
		return http.StatusNotFound
	case service.KindConflict:
		return http.StatusConflict
	case service.KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case service.KindUnavailable:
		return http.StatusServiceUnavailable
	case service.KindRateLimited:
		return http.StatusTooManyRequests
	case service.KindUpstream:
		return http.StatusBadGateway
	case service.KindTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// writeError writes err in the envelope. Errors that are not *service.Error
// are internal: they are logged, and the client sees a generic message.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var se *service.Error
	if !errors.As(err, &se) {
		se = service.Internal(err)
	}
	status := statusOf(se.Kind)
	if status >= 500 {
		// the client sees the code; the log names the cause too (a
		// Redis error says which node or state, never a credential)
		args := []any{"method", r.Method, "path", r.URL.Path, "status", status, "err", err}
		if se.Err != nil {
			args = append(args, "cause", se.Err)
		}
		s.log.ErrorContext(r.Context(), "request failed", args...)
	}
	if se.Kind == service.KindUnauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="taskflow"`)
	}
	if se.RetryAfter > 0 { // whole seconds, rounded up
		w.Header().Set("Retry-After", strconv.FormatInt(int64((se.RetryAfter+time.Second-1)/time.Second), 10))
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Code: se.Code, Message: se.Message, Field: se.Field}})
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":{"code":"internal","message":"response encoding failed"}}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
