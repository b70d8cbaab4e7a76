package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// routes registers every endpoint with its documentation.
func (s *Server) routes() {
	taskID := pathParam("task_id", "the task's id")
	pageParams := []paramDoc{
		queryParam("limit", "integer", "page size, 1..1000 (default 50)"),
		queryParam("offset", "integer", "entries to skip (default 0)"),
	}
	add := s.router.add

	add(route{method: "POST", path: "/api/v1/sessions", access: public, handler: s.createSession, doc: opDoc{
		tag: "sessions", summary: "Open a session",
		description: "Returns a session id and a bearer token (shown once). Tasks created with the token belong to the session; only it and the admin may read, retry, cancel or delete them. Rate-limited per client address (429 rate_limited with Retry-After).",
		responses:   map[int]string{201: "Session", 429: "Error"}}})

	add(route{method: "GET", path: "/api/v1/sessions", access: admin, handler: s.listSessions, doc: opDoc{
		tag: "sessions", summary: "List the live sessions (operators)",
		description: "The newest first, each with when it started and ends and the size of its task index; total counts every live session. Tokens are never stored, so never listed. What the dashboard's session picker offers.",
		params:      []paramDoc{queryParam("limit", "integer", "sessions to list, 1..1000 (default 100)")},
		responses:   map[int]string{200: "SessionList"}}})

	add(route{method: "DELETE", path: "/api/v1/sessions/current", access: principal, handler: s.endSession, doc: opDoc{
		tag: "sessions", summary: "End the caller's session (its token stops working; its tasks stay)",
		responses: map[int]string{200: "SessionEnded"}}})

	idemKey := paramDoc{name: service.IdempotencyField, in: "header", typ: "string",
		description: "1 to 255 printable ASCII characters: a resend with the same key and the same body (same caller) within TASKFLOW_IDEMPOTENCY_TTL (24 h) is answered the first response again, with Idempotent-Replayed: true, and creates nothing; the same key with another body is refused (422 idempotency_key_reused); while the first request with the key is still being processed, 409 idempotency_key_in_use. Holds across an API process that died between writing the task and answering."}
	add(route{method: "POST", path: "/api/v1/tasks/summarize", access: principal, handler: s.submitSummarize, doc: opDoc{
		tag: "tasks", summary: "Submit a summarization task", request: "SummarizeRequest", params: []paramDoc{idemKey},
		responses: map[int]string{201: "Submitted", 409: "Error"}}})
	add(route{method: "POST", path: "/api/v1/tasks", access: principal, handler: s.submit, doc: opDoc{
		tag: "tasks", summary: "Submit a task of any registered type", request: "SubmitRequest", params: []paramDoc{idemKey},
		description: "201 with the new task. With unique_key: while a task of the caller's with the key is unfinished (or within unique_for seconds of its submit), 200 with that task and duplicate: true, and nothing is created.",
		responses:   map[int]string{201: "Submitted", 200: "Submitted", 409: "Error"}}})
	add(route{method: "POST", path: "/api/v1/tasks/batch", access: principal, handler: s.submitBatch, doc: opDoc{
		tag: "tasks", summary: "Submit up to 1000 tasks, each answered on its own", request: "BatchSubmitRequest", params: []paramDoc{idemKey},
		description: "Each item is a SubmitRequest, validated on its own: one result per item, in order: created (with task_id and state), duplicate (its unique_key is held: the holder's task_id and state) or invalid (its error, the field named tasks[i].<field>); an invalid item does not stop the others. The valid items are written together (one Redis script call per 500 tasks and partition; with an Idempotency-Key, one call with the key's record).",
		responses:   map[int]string{200: "BatchResult", 409: "Error"}}})
	add(route{method: "GET", path: "/api/v1/tasks", access: principal, handler: s.list, doc: opDoc{
		tag: "tasks", summary: "List tasks",
		description: "The admin lists every task; a session lists its own. The order is global across pages. page*page_size is at most 10000, except with sort_by=updated_at and a status of COMPLETED, FAILED, DLQ, TIMEOUT or CANCELLED (cut straight from that state's index). partial: true when a scan stopped at 10000 entries.",
		params: []paramDoc{
			queryParam("status", "string", "only tasks in this state (PROCESSING = ACTIVE)", "PENDING", "ACTIVE", "COMPLETED", "FAILED", "DLQ", "TIMEOUT", "CANCELLED"),
			queryParam("limit", "integer", "page size (the same as page_size)"),
			queryParam("page", "integer", "1-based page (default 1)"),
			queryParam("page_size", "integer", "page size, 1..1000 (default 50)"),
			queryParam("task_type", "string", "only tasks of this type"),
			queryParam("session_id", "string", "only this session's tasks (the admin; a session may name only itself)"),
			queryParam("priority", "string", "only tasks of this priority", "high", "normal", "low"),
			queryParam("sort_by", "string", "created_at or updated_at (default updated_at)", "created_at", "updated_at"),
			queryParam("sort_order", "string", "asc or desc (default desc)", "asc", "desc"),
			queryParam("summary", "boolean", "true: leave out content and result"),
		},
		responses: map[int]string{200: "TaskList"}}})
	add(route{method: "POST", path: "/api/v1/tasks/requeue-orphaned", access: admin, audit: true, handler: s.requeueOrphaned, doc: opDoc{
		tag: "tasks", summary: "Requeue ACTIVE tasks whose lease expired",
		description: "The scheduler does this continuously; this is the operator's manual trigger.",
		responses:   map[int]string{200: "Requeued"}}})
	add(route{method: "GET", path: "/api/v1/tasks/{task_id}", access: principal, handler: s.get, doc: opDoc{
		tag: "tasks", summary: "Get a task with its result and histories", params: []paramDoc{taskID},
		responses: map[int]string{200: "Task"}}})
	add(route{method: "DELETE", path: "/api/v1/tasks/{task_id}", access: principal, audit: true, handler: s.delete, doc: opDoc{
		tag: "tasks", summary: "Delete a task",
		description: "Refused with 409 task_active while the task is ACTIVE (a worker holds it): cancel it first.",
		params:      []paramDoc{taskID}, responses: map[int]string{200: "Deleted", 409: "Error"}}})
	add(route{method: "POST", path: "/api/v1/tasks/{task_id}/retry", access: principal, audit: true, handler: s.retry, doc: opDoc{
		tag: "tasks", summary: "Retry a FAILED or DLQ task",
		description: "Any other state is refused with 409 task_not_retryable, saying which state the task is in.",
		params:      []paramDoc{taskID}, responses: map[int]string{200: "Submitted", 409: "Error"}}})
	add(route{method: "POST", path: "/api/v1/tasks/{task_id}/cancel", access: principal, audit: true, handler: s.cancel, doc: opDoc{
		tag: "tasks", summary: "Cancel a PENDING, ACTIVE or TIMEOUT task",
		description: "PENDING/TIMEOUT end CANCELLED at once (200); an ACTIVE task's worker is told and ends it CANCELLED (202, outcome requested).",
		params:      []paramDoc{taskID}, responses: map[int]string{200: "Cancelled", 202: "Cancelled", 409: "Error"}}})

	s.scheduleRoutes(add)
	s.planRoutes(add)
	s.keyRoutes(add)
	s.statsRoutes(add)
	s.resultRoutes(add)
	s.notificationRoutes(add)
	s.queueRoutes(add)

	add(route{method: "GET", path: "/api/v1/queues/status", access: admin, handler: s.queueStatus, doc: opDoc{
		tag: "queues", summary: "Queue depths, tasks per state and the retry ratio",
		responses: map[int]string{200: "QueueStatus"}}})
	add(route{method: "GET", path: "/api/v1/queues/status/stream", access: admin, queryToken: true, handler: s.statusStream, doc: opDoc{
		tag: "queues", summary: "Live status over Server-Sent Events",
		description: "event: snapshot (QueueStatus) first; then event: task (a TaskEvent, id = event id) for every state change, event: queues (QueueStatus) at most every 250 ms while tasks move, and a comment heartbeat every 15 s. Resume with Last-Event-ID. The admin key goes in Authorization: Bearer, or in ?access_token= for a browser's EventSource (which cannot set headers).",
		params: []paramDoc{
			queryParam("access_token", "string", "the admin key, when the Authorization header cannot be set (EventSource); never logged"),
			queryParam("after", "string", "resume after this event id (as Last-Event-ID)"),
		},
		stream: true, responses: map[int]string{200: ""}}})
	add(route{method: "GET", path: "/api/v1/queues/dlq", access: admin, handler: s.dlq, doc: opDoc{
		tag: "queues", summary: "Dead-letter queue, newest first, with failure snapshots",
		description: "With task_type or error_type, the dead letters matching them (among the newest 10000).",
		params: append(append([]paramDoc{}, pageParams...), queryParam("task_type", "string", "only dead letters of this task type"),
			queryParam("error_type", "string", "only dead letters that failed with this error type")),
		responses: map[int]string{200: "DLQPage"}}})
	for _, action := range []string{service.BulkRetry, service.BulkDelete} {
		summary := "Retry many dead letters at once (back to the retry queue, retry count 0)"
		if action == service.BulkDelete {
			summary = "Delete many dead letters at once"
		}
		add(route{method: "POST", path: "/api/v1/queues/dlq/" + action, access: admin, audit: true, handler: s.dlqBulk(action), doc: opDoc{
			tag: "queues", summary: summary, request: "BulkRequest",
			description: "Names the tasks (task_ids, at most 10000) or all dead letters matching filter (all: true). Each task moves by its own transition; one that left the DLQ meanwhile is listed in failed.",
			responses:   map[int]string{200: "BulkResult"}}})
	}
	add(route{method: "GET", path: "/api/v1/queues/{queue}/tasks", access: admin, handler: s.queueTasks, doc: opDoc{
		tag: "queues", summary: "Tasks waiting in a queue, in the order they will be taken",
		params: append([]paramDoc{{name: "queue", in: "path", typ: "string", required: true, description: "queue name",
			enum: []string{"primary", "primary:high", "primary:low", "retry", "scheduled", "dlq"}}}, pageParams...),
		responses: map[int]string{200: "QueuePage"}}})

	add(route{method: "GET", path: "/api/v1/task-types", access: principal, handler: s.taskTypes, doc: opDoc{
		tag: "tasks", summary: "The task types this deployment accepts: description, params JSON Schema, who runs each and whether a service for it is online",
		responses: map[int]string{200: "TaskTypes"}}})
	add(route{method: "GET", path: "/api/v1/services", access: principal, handler: s.services, doc: opDoc{
		tag: "workers", summary: "External services: their registrations, and whether a live service takes each external task type",
		description: "A task of an external type that no live service takes waits PENDING; its view says so (waiting_for).",
		responses:   map[int]string{200: "Services"}}})
	add(route{method: "GET", path: "/api/v1/workers", access: admin, handler: s.workers, doc: opDoc{
		tag: "workers", summary: "Live workers: heartbeat age, concurrency, in-flight tasks, breaker state per dependency",
		responses: map[int]string{200: "Workers"}}})
	add(route{method: "POST", path: "/api/v1/workers/reset-circuit-breaker", access: admin, audit: true, handler: s.breaker(false), doc: opDoc{
		tag: "workers", summary: "Close a dependency's circuit breaker (all when dependency is empty)", request: "BreakerRequest",
		responses: map[int]string{200: "BreakerResult", 202: "BreakerResult", 409: "Error"}}})
	add(route{method: "POST", path: "/api/v1/workers/open-circuit-breaker", access: admin, audit: true, handler: s.breaker(true), doc: opDoc{
		tag: "workers", summary: "Force a dependency's circuit breaker open for duration_seconds, or until a reset", request: "BreakerRequest",
		responses: map[int]string{200: "BreakerResult", 202: "BreakerResult", 409: "Error"}}})

	add(route{method: "GET", path: "/health", access: public, handler: s.health, doc: opDoc{
		tag: "health", summary: "Health of Redis, workers and circuit breakers; 503 when unhealthy",
		responses: map[int]string{200: "Health", 503: "Health"}}})
	add(route{method: "GET", path: "/live", access: public, handler: s.live, doc: opDoc{
		tag: "health", summary: "Liveness: the process serves HTTP", responses: map[int]string{200: "Probe"}}})
	add(route{method: "GET", path: "/ready", access: public, handler: s.ready, doc: opDoc{
		tag: "health", summary: "Readiness: Redis answers; 503 otherwise", responses: map[int]string{200: "Probe", 503: "Error"}}})
	add(route{method: "GET", path: "/metrics", access: admin, handler: s.promMetrics, doc: opDoc{
		tag: "health", summary: "Prometheus metrics (text exposition format)", responses: map[int]string{200: ""}}})
	add(route{method: "GET", path: "/openapi.json", access: public, handler: s.openapiDoc, doc: opDoc{
		tag: "docs", summary: "This OpenAPI 3 document", responses: map[int]string{200: ""}}})
	add(route{method: "GET", path: "/docs", access: public, handler: s.docsPage, doc: opDoc{
		tag: "docs", summary: "API documentation page (works offline)", responses: map[int]string{200: ""}}})
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request, _ identity.Principal) {
	sess, err := s.svc.CreateSession(r.Context(), s.clientAddr(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sess)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	q := newQuery(r, "limit")
	limit := q.int("limit")
	if q.err == nil && q.str("limit") == "0" {
		q.err = service.Invalid("invalid_parameter", "limit", "limit must be between 1 and %d", service.MaxSessionList)
	}
	if q.err != nil {
		s.writeError(w, r, q.err)
		return
	}
	out, err := s.svc.Sessions(r.Context(), p, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) endSession(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	tok, _ := identity.BearerToken(r) // authenticated already: well-formed
	if err := s.svc.EndSession(r.Context(), p, tok); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sessionEnded{SessionID: p.SessionID, Ended: true})
}

// summarizeRequest is body {content} plus the optional knobs of
// the generic form.
type summarizeRequest struct {
	Content    *string  `json:"content" openapi:"required;example=Redis is an in-memory data store. It is used as a cache and a message broker." jsonschema:"text to summarize"`
	Priority   string   `json:"priority,omitempty" openapi:"enum=high|normal|low"`
	Timeout    *float64 `json:"timeout,omitempty" jsonschema:"seconds one attempt may run"`
	MaxRetries *int     `json:"max_retries,omitempty" jsonschema:"0..100; default 3"`
	RunAt      *string  `json:"run_at,omitempty" openapi:"format=date-time" jsonschema:"delay the first run until this time"`
	Delay      *float64 `json:"delay,omitempty" jsonschema:"seconds from now to the first run (instead of run_at)"`
}

func (s *Server) submitSummarize(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	idem, err := idempotencyOf(r, s.cfg.MaxBodyBytes)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in summarizeRequest
	if err := decodeBody(r, s.cfg.MaxBodyBytes, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.Content == nil {
		s.writeError(w, r, service.Unprocessable("content", "content is required: the text to summarize"))
		return
	}
	s.doSubmit(w, r, p, service.SubmitInput{TaskType: service.TaskTypeSummarize, Content: in.Content,
		Priority: in.Priority, Timeout: in.Timeout, MaxRetries: in.MaxRetries, RunAt: in.RunAt, Delay: in.Delay}, idem)
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	idem, err := idempotencyOf(r, s.cfg.MaxBodyBytes)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in service.SubmitInput
	if err := decodeBody(r, s.cfg.MaxBodyBytes, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.doSubmit(w, r, p, in, idem)
}

// doSubmit answers a submit: 201 created, 200 a duplicate of the task
// holding its unique_key; a replay of an idempotency key's first answer
// carries Idempotent-Replayed: true.
func (s *Server) doSubmit(w http.ResponseWriter, r *http.Request, p identity.Principal, in service.SubmitInput, idem service.Idempotency) {
	out, replayed, err := s.svc.SubmitOnce(r.Context(), p, in, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if replayed {
		w.Header().Set(replayedHeader, "true")
	}
	w.Header().Set("Location", "/api/v1/tasks/"+out.TaskID)
	if out.Duplicate {
		writeJSON(w, http.StatusOK, out)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

// batchRequest is the body of POST /api/v1/tasks/batch.
type batchRequest struct {
	Tasks []service.SubmitInput `json:"tasks" openapi:"required;maxItems=1000" jsonschema:"1 to 1000 tasks, each a SubmitRequest"`
}

func (s *Server) submitBatch(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	idem, err := idempotencyOf(r, s.cfg.MaxBodyBytes)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in batchRequest
	if err := decodeBody(r, s.cfg.MaxBodyBytes, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, replayed, err := s.svc.SubmitBatch(r.Context(), p, in.Tasks, idem)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if replayed {
		w.Header().Set(replayedHeader, "true")
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	t, err := s.svc.Get(r.Context(), p, r.PathValue("task_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	id := r.PathValue("task_id")
	if err := s.svc.Delete(r.Context(), p, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, taskDeleted{TaskID: id, Deleted: true})
}

func (s *Server) retry(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	out, err := s.svc.Retry(r.Context(), p, r.PathValue("task_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	out, err := s.svc.Cancel(r.Context(), p, r.PathValue("task_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	code := http.StatusOK
	if out.Outcome == "requested" {
		code = http.StatusAccepted
	}
	writeJSON(w, code, out)
}

func (s *Server) requeueOrphaned(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	ids, err := s.svc.RequeueOrphaned(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if ids == nil {
		ids = []string{}
	}
	writeJSON(w, http.StatusOK, requeued{Requeued: len(ids), TaskIDs: ids})
}

// query reads the query string strictly: unknown parameters and repeated
// ones are errors naming the parameter.
type query struct {
	r   *http.Request
	err error
}

func newQuery(r *http.Request, allowed ...string) *query {
	q := &query{r: r}
	vals := r.URL.Query()
	for k, v := range vals {
		known := false
		for _, a := range allowed {
			known = known || a == k
		}
		if !known {
			field := k
			if field == "" {
				field = "query" // "?=x" names no parameter: blame the query string
			}
			q.err = service.Invalid("unknown_parameter", field, "unknown query parameter %q (allowed: %s)", k, strings.Join(allowed, ", "))
			return q
		}
		if len(v) > 1 {
			q.err = service.Invalid("invalid_parameter", k, "query parameter %q is given %d times", k, len(v))
			return q
		}
	}
	return q
}

func (q *query) str(name string) string { return q.r.URL.Query().Get(name) }

func (q *query) int(name string) int {
	v := q.r.URL.Query().Get(name)
	if v == "" || q.err != nil {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		q.err = service.Invalid("invalid_parameter", name, "%s must be a non-negative integer (got %q)", name, truncate(v, 40))
	}
	return n
}

// limit reads ?limit= for a service whose 0 means "the default": an
// explicit 0 is passed on as -1, out of range, so the service refuses it
// with the range in the message.
func (q *query) limit() int {
	n := q.int("limit")
	if q.err == nil && q.str("limit") != "" && n == 0 {
		return -1
	}
	return n
}

func (q *query) bool(name string) bool {
	v := q.r.URL.Query().Get(name)
	if v == "" || q.err != nil {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		q.err = service.Invalid("invalid_parameter", name, "%s must be true or false (got %q)", name, truncate(v, 40))
	}
	return b
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	q := newQuery(r, "status", "limit", "page", "page_size", "task_type", "sort_by", "sort_order", "summary", "session_id", "priority")
	in := service.ListInput{Status: q.str("status"), TaskType: q.str("task_type"), SessionID: q.str("session_id"), Priority: q.str("priority"), SortBy: q.str("sort_by"),
		SortOrder: q.str("sort_order"), Page: q.int("page"), PageSize: q.int("page_size"), Summary: q.bool("summary")}
	limit, hasLimit, hasSize := q.int("limit"), q.str("limit") != "", q.str("page_size") != ""
	switch {
	case q.err != nil:
	case hasLimit && hasSize && limit != in.PageSize:
		q.err = service.Invalid("invalid_parameter", "limit", "limit (%d) and page_size (%d) are the same thing: give one", limit, in.PageSize)
	case hasLimit && limit == 0:
		q.err = service.Invalid("invalid_parameter", "limit", "limit must be between 1 and %d", service.MaxPageSize)
	case hasLimit:
		in.PageSize = limit
	}
	// an explicit 0 is invalid, not "default"
	if q.str("page") == "0" {
		in.Page = -1
	}
	if hasSize && in.PageSize == 0 {
		in.PageSize = -1
	}
	if q.err != nil {
		s.writeError(w, r, q.err)
		return
	}
	out, err := s.svc.List(r.Context(), p, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) queueStatus(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	qs, err := s.svc.QueueStatus(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, qs)
}

func (s *Server) dlq(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	q := newQuery(r, "limit", "offset", "task_type", "error_type")
	limit, offset := q.int("limit"), q.int("offset")
	f := service.DLQFilter{TaskType: q.str("task_type"), ErrorType: q.str("error_type")}
	if q.err == nil && q.str("limit") == "0" {
		limit = -1
	}
	if q.err != nil {
		s.writeError(w, r, q.err)
		return
	}
	out, err := s.svc.DLQMatching(r.Context(), p, f, offset, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) dlqBulk(action string) func(http.ResponseWriter, *http.Request, identity.Principal) {
	return func(w http.ResponseWriter, r *http.Request, p identity.Principal) {
		var in service.BulkInput
		if err := decodeBody(r, s.cfg.MaxBodyBytes, &in); err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := s.svc.DLQBulk(r.Context(), p, action, in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func (s *Server) queueTasks(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	q := newQuery(r, "limit", "offset")
	limit, offset := q.int("limit"), q.int("offset")
	if q.err == nil && q.str("limit") == "0" {
		limit = -1
	}
	if q.err != nil {
		s.writeError(w, r, q.err)
		return
	}
	name := r.PathValue("queue")
	out, err := s.svc.QueueTasks(r.Context(), p, name, offset, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if out.Items == nil {
		out.Items = []service.TaskSummary{}
	}
	writeJSON(w, http.StatusOK, queuePage{Queue: name, Tasks: out.Items, Total: out.Total, Offset: out.Offset, Limit: out.Limit})
}

func (s *Server) taskTypes(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	ts, err := s.svc.TaskTypes(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if ts == nil {
		ts = []service.TaskTypeInfo{}
	}
	writeJSON(w, http.StatusOK, taskTypes{TaskTypes: ts, Count: len(ts)})
}

func (s *Server) services(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	v, err := s.svc.Services(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) workers(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	ws, err := s.svc.Workers(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if ws == nil {
		ws = []service.WorkerInfo{}
	}
	writeJSON(w, http.StatusOK, workersView{Workers: ws, Count: len(ws)})
}

type breakerRequest struct {
	Dependency      string   `json:"dependency" openapi:"example=openrouter" jsonschema:"e.g. openrouter; empty = every dependency"`
	DurationSeconds *float64 `json:"duration_seconds,omitempty" jsonschema:"open-circuit-breaker only: how long to hold it open; absent = until a reset"`
}

func (s *Server) breaker(open bool) func(http.ResponseWriter, *http.Request, identity.Principal) {
	return func(w http.ResponseWriter, r *http.Request, p identity.Principal) {
		var in breakerRequest
		if r.ContentLength != 0 {
			if err := decodeBody(r, s.cfg.MaxBodyBytes, &in); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		var d time.Duration
		if in.DurationSeconds != nil {
			if !open {
				s.writeError(w, r, service.Unprocessable("duration_seconds", "duration_seconds applies only to open-circuit-breaker"))
				return
			}
			if *in.DurationSeconds <= 0 || *in.DurationSeconds > 86400 {
				s.writeError(w, r, service.Unprocessable("duration_seconds", "duration_seconds must be between 0 and 86400"))
				return
			}
			d = time.Duration(*in.DurationSeconds * float64(time.Second))
		}
		out, err := s.svc.BreakerAction(r.Context(), p, open, in.Dependency, d)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		status := http.StatusOK
		if out.Workers == 0 { // recorded; workers apply it when they start
			status = http.StatusAccepted
		}
		writeJSON(w, status, out)
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request, _ identity.Principal) {
	h := s.svc.Health(r.Context())
	code := http.StatusOK
	if h.Status != "healthy" {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, h)
}

func (s *Server) live(w http.ResponseWriter, _ *http.Request, _ identity.Principal) {
	writeJSON(w, http.StatusOK, probe{Status: "ok"})
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request, _ identity.Principal) {
	if err := s.svc.Ready(r.Context()); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, probe{Status: "ready"})
}

func (s *Server) promMetrics(w http.ResponseWriter, r *http.Request, _ identity.Principal) {
	promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}
