package planapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// Route is the pattern the API server mounts Handler at.
const Route = "POST /api/v1/plans/{name}/execute"

// Handler serves POST /api/v1/plans/{name}/execute: the body is rankd's
// request plus optional deadline_ms / node_timeout_ms; the answer is
// rankd's success line. Errors are {"error":{"code","message","field"}}.
func (s *Service) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, &Error{Status: 405, Code: "method_not_allowed", Message: "use POST"})
			return
		}
		name := r.PathValue("name")
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		if err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				writeError(w, &Error{Status: 413, Code: "too_large", Field: "body", Message: "request body is too large"})
				return
			}
			writeError(w, &Error{Status: 400, Code: "invalid_request", Field: "body", Message: "could not read the request body"})
			return
		}
		in, err := s.ParseInput(body)
		if err == nil {
			var out json.RawMessage
			if out, err = s.Execute(r.Context(), name, in); err == nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write(append(out, '\n'))
				return
			}
		}
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			return // the client went away
		}
		var pe *Error
		if !errors.As(err, &pe) {
			s.cfg.Logger.ErrorContext(r.Context(), "plan execute failed", "plan", name, "err", err)
			pe = &Error{Status: 500, Code: "internal", Message: "internal error"}
		} else if pe.Status >= 500 {
			s.cfg.Logger.ErrorContext(r.Context(), "plan execute failed", "plan", name, "status", pe.Status, "err", err)
		}
		writeError(w, pe)
	})
}

func writeError(w http.ResponseWriter, e *Error) {
	type detail struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field,omitempty"`
	}
	b, _ := json.Marshal(struct {
		Error detail `json:"error"`
	}{detail{e.Code, e.Message, e.Field}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(b, '\n'))
}
