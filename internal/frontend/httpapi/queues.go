package httpapi

import (
	"net/http"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// limitDeleted answers DELETE /api/v1/limits/{scope}/{name}.
type limitDeleted struct {
	Scope   string `json:"scope"`
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

// queueRoutes are the named queues', pauses' and limits' endpoints
// (issue 26; operator or admin, a viewer reads).
func (s *Server) queueRoutes(add func(route)) {
	queue := pathParam("queue", "the named queue (^[a-z0-9][a-z0-9._-]{0,63}$)")
	add(route{method: "GET", path: "/api/v1/queues", access: admin, handler: s.queues, doc: opDoc{
		tag: "queues", summary: "Named queues: depth by priority, retry, running, completed per minute, oldest waiting age, pause and limits",
		description: "Also the paused task types and the tasks held back (parked) by a paused type or a limit, by scope.",
		responses:   map[int]string{200: "QueueList"}}})
	add(route{method: "GET", path: "/api/v1/queues/{queue}", access: admin, handler: s.queue, doc: opDoc{
		tag: "queues", summary: "One named queue",
		params: []paramDoc{queue}, responses: map[int]string{200: "QueueView", 404: "Error"}}})
	for _, pause := range []bool{true, false} {
		verb, summary := "pause", "Pause a queue fleet-wide: no worker starts its tasks once this answers; they stay queued in order, running ones finish"
		tsummary := "Pause a task type fleet-wide, in every queue: its tasks wait in order, the others proceed"
		if !pause {
			verb, summary, tsummary = "resume", "Resume a paused queue", "Resume a paused task type: its waiting tasks go back to the head of their queues, in order"
		}
		add(route{method: "POST", path: "/api/v1/queues/{queue}/" + verb, access: admin, audit: true, handler: s.pauseQueue(pause), doc: opDoc{
			tag: "queues", summary: summary, description: "The pause is kept in Redis: it survives restarts of every process. A queue may be paused before its first task.",
			params: []paramDoc{queue}, responses: map[int]string{200: "PauseState"}}})
		add(route{method: "POST", path: "/api/v1/task-types/{task_type}/" + verb, access: admin, audit: true, handler: s.pauseTaskType(pause), doc: opDoc{
			tag: "queues", summary: tsummary,
			params: []paramDoc{pathParam("task_type", "the task type")}, responses: map[int]string{200: "PauseState"}}})
	}
	add(route{method: "GET", path: "/api/v1/limits", access: admin, handler: s.limits, doc: opDoc{
		tag: "queues", summary: "Fleet-wide limits: a rate and/or a concurrency per task type, queue or limit key",
		responses: map[int]string{200: "LimitList"}}})
	add(route{method: "PUT", path: "/api/v1/limits", access: admin, audit: true, handler: s.setLimit, doc: opDoc{
		tag: "queues", summary: "Create or replace the limit of a scope and name; it applies at once on every worker",
		description: "A task over a limit waits, keeping its place and priority; it is not failed and spends no retry. rate: at most limit starts per `per` seconds (bursts up to limit); concurrency: at most that many running at once. Scope key with name * limits every limit key apart.",
		request:     "LimitInput", responses: map[int]string{200: "LimitView"}}})
	add(route{method: "DELETE", path: "/api/v1/limits/{scope}/{name}", access: admin, audit: true, handler: s.deleteLimit, doc: opDoc{
		tag: "queues", summary: "Remove a limit; the tasks it held back go",
		description: "Idempotent: deleted is false when there was no such limit.",
		params: []paramDoc{{name: "scope", in: "path", typ: "string", required: true, description: "the limit's scope",
			enum: []string{"task_type", "queue", "key"}}, pathParam("name", "the task type, queue or limit key")},
		responses: map[int]string{200: "LimitDeleted"}}})
}

func (s *Server) queues(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	out, err := s.svc.Queues(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) queue(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	out, err := s.svc.Queue(r.Context(), p, r.PathValue("queue"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) pauseQueue(pause bool) func(http.ResponseWriter, *http.Request, identity.Principal) {
	return func(w http.ResponseWriter, r *http.Request, p identity.Principal) {
		out, err := s.svc.PauseQueue(r.Context(), p, r.PathValue("queue"), pause)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func (s *Server) pauseTaskType(pause bool) func(http.ResponseWriter, *http.Request, identity.Principal) {
	return func(w http.ResponseWriter, r *http.Request, p identity.Principal) {
		out, err := s.svc.PauseTaskType(r.Context(), p, r.PathValue("task_type"), pause)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func (s *Server) limits(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	out, err := s.svc.Limits(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) setLimit(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in service.LimitInput
	if err := decodeBody(r, s.cfg.MaxBodyBytes, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.svc.SetLimit(r.Context(), p, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteLimit(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	scope, name := r.PathValue("scope"), r.PathValue("name")
	deleted, err := s.svc.DeleteLimit(r.Context(), p, scope, name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, limitDeleted{Scope: scope, Name: name, Deleted: deleted})
}
