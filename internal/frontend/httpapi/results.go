package httpapi

import (
	"mime"
	"net/http"
	"strconv"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// resultRoutes registers get_task_result and list_user_tasks.
func (s *Server) resultRoutes(add func(route)) {
	add(route{method: "GET", path: "/api/v1/results", access: principal, handler: s.listResults, doc: opDoc{
		tag: "results", summary: "list_user_tasks: the session's tasks, newest first, live then archived",
		description: "A session's call only (the admin has no session: 400).",
		params: []paramDoc{
			queryParam("status_filter", "string", "which tasks (default all)", "all", "pending", "processing", "completed", "failed", "timeout"),
			queryParam("limit", "integer", "at most this many, 1..1000 (default 100)"),
		},
		responses: map[int]string{200: "ResultList"}}})
	add(route{method: "GET", path: "/api/v1/results/{task_id}", access: principal, handler: s.getResult, doc: opDoc{
		tag: "results", summary: "get_task_result: per status the result, error, progress/ETA, queue position or timeout message",
		description: "A task that has left Redis is read back from the archive (source: archive). Another session's task is 404, as a missing one.",
		params:      []paramDoc{pathParam("task_id", "the task's id")},
		responses:   map[int]string{200: "Result"}}})
	add(route{method: "GET", path: "/api/v1/results/{task_id}/files/{name}", access: principal, handler: s.getResultFile, doc: opDoc{
		tag: "results", summary: "A task's result file (the file_url of its result), with its content type",
		description: "Services store result files in taskflow's artifact store (docs/protocol.md); they are kept 7 days. " +
			"Another session's task is 404, as a missing one; so is a name the task has no file of (file_not_found).",
		params:    []paramDoc{pathParam("task_id", "the task's id"), pathParam("name", "the file's name, as in file_url")},
		responses: map[int]string{200: "binary"}}})
}

func (s *Server) getResultFile(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if q := newQuery(r); q.err != nil {
		s.writeError(w, r, q.err)
		return
	}
	f, err := s.svc.ResultFile(r.Context(), p, r.PathValue("task_id"), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("Content-Length", strconv.Itoa(len(f.Data)))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Name}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-store")
	if f.SHA256 != "" {
		h.Set("ETag", `"`+f.SHA256+`"`)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.Data)
}

func (s *Server) getResult(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if q := newQuery(r); q.err != nil {
		s.writeError(w, r, q.err)
		return
	}
	v, err := s.svc.Result(r.Context(), p, r.PathValue("task_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) listResults(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	q := newQuery(r, "status_filter", "limit")
	in := service.ResultListInput{StatusFilter: q.str("status_filter"), Limit: q.limit()}
	if q.err != nil {
		s.writeError(w, r, q.err)
		return
	}
	out, err := s.svc.ListResults(r.Context(), p, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
