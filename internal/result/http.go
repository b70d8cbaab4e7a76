package result

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/taskflow/taskflow/internal/auth"
)

// Paths the handler serves (GET).
const (
	PathGet  = "/api/v1/results/{task_id}"
	PathList = "/api/v1/results"
)

// Authenticator resolves a bearer token (auth.Authenticator satisfies it).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (auth.Principal, error)
}

// Handler serves get_task_result and list_user_tasks. It takes the
// principal the API's authentication put in the request context, or
// authenticates the bearer token itself with auth.
func (r *Results) Handler(a Authenticator) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathGet, func(w http.ResponseWriter, req *http.Request) {
		p, ok := principal(w, req, a)
		if !ok {
			return
		}
		id := req.PathValue("task_id")
		if id == "" || len(id) > 200 || strings.ContainsAny(id, " {},;\t\n\r") {
			writeErr(w, http.StatusBadRequest, "invalid_parameter", "task_id", "task_id is not a valid task id")
			return
		}
		v, err := r.Get(req.Context(), p, id)
		switch {
		case errors.Is(err, ErrNotFound):
			writeErr(w, http.StatusNotFound, "task_not_found", "task_id", "no task "+id+" in this session")
		case errors.Is(err, ErrUnauthenticated):
			writeErr(w, http.StatusUnauthorized, "unauthenticated", "", err.Error())
		case err != nil:
			writeErr(w, http.StatusServiceUnavailable, "unavailable", "", "the task store is unavailable")
		default:
			writeJSON(w, http.StatusOK, v)
		}
	})
	mux.HandleFunc("GET "+PathList, func(w http.ResponseWriter, req *http.Request) {
		p, ok := principal(w, req, a)
		if !ok {
			return
		}
		if p.SessionID == "" {
			writeErr(w, http.StatusBadRequest, "invalid_request", "", "list_user_tasks lists a session's tasks: call it with a session token")
			return
		}
		q := req.URL.Query()
		f, err := ParseFilter(q.Get("status_filter"))
		if err != nil {
			writeErr(w, http.StatusBadRequest, "invalid_parameter", "status_filter", err.Error())
			return
		}
		limit := 100
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > 1000 {
				writeErr(w, http.StatusBadRequest, "invalid_parameter", "limit", "limit must be an integer 1–1000")
				return
			}
			limit = n
		}
		items, err := r.List(req.Context(), p, f, limit)
		if err != nil {
			writeErr(w, http.StatusServiceUnavailable, "unavailable", "", "the task store is unavailable")
			return
		}
		if items == nil {
			items = []Item{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"session_id": p.SessionID, "status_filter": f, "tasks": items})
	})
	return mux
}

func principal(w http.ResponseWriter, r *http.Request, a Authenticator) (auth.Principal, bool) {
	p := auth.FromContext(r.Context())
	if !p.Anonymous() {
		return p, true
	}
	tok, err := auth.BearerToken(r)
	if err == nil {
		p, err = a.Authenticate(r.Context(), tok)
	}
	if err != nil {
		if errors.Is(err, auth.ErrNoCredentials) || errors.Is(err, auth.ErrInvalidToken) || errors.Is(err, auth.ErrMalformedHeader) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="taskflow"`)
			writeErr(w, http.StatusUnauthorized, "unauthenticated", "", err.Error())
		} else {
			writeErr(w, http.StatusServiceUnavailable, "unavailable", "", "cannot check the token now")
		}
		return p, false
	}
	return p, true
}

func writeErr(w http.ResponseWriter, status int, code, field, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg, "field": field}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
