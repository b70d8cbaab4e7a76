package httpapi

import (
	"io"
	"net/http"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// planRoutes registers the plans: their list, each one's graph, and the
// synchronous run.
func (s *Server) planRoutes(add func(route)) {
	name := pathParam("name", "the plan's name (plans/<name>.plan.json)")
	add(route{method: "GET", path: "/api/v1/plans", access: principal, handler: s.listPlans, doc: opDoc{
		tag: "plans", summary: "The plans this server can run, by name, with their node and output counts",
		description: "The plans built into the binary, or those of TASKFLOW_PLAN_DIR when set. " +
			"A plan that does not compile is listed with its error instead of its counts.",
		responses: map[int]string{200: "PlanList"}}})
	add(route{method: "GET", path: "/api/v1/plans/{name}", access: principal, handler: s.planGraph, doc: opDoc{
		tag: "plans", summary: "A plan's graph: its nodes in dependency order, each with the nodes it reads",
		description: "The name is checked as a run's is (400 invalid_plan_name); an unknown plan is 404 plan_not_found; " +
			"a plan that does not compile 500 plan_invalid.",
		params:    []paramDoc{name},
		responses: map[int]string{200: "PlanGraph"}}})
	add(route{method: "POST", path: "/api/v1/plans/{name}/execute", access: principal, ownDeadline: true, readOnly: true, handler: s.runPlan, doc: opDoc{
		tag: "plans", summary: "Run a plan synchronously; body: rankd's request", request: "PlanRequest",
		description: "The body is {user_id, request_id?, param_overrides?, deadline_ms?, node_timeout_ms?}; the answer is rankd's success line, " +
			"with ?trace=1 also the run's per-node timeline (trace) and its wall time (elapsed_us). " +
			"A plan name is 1 to 128 letters, digits or _ (400 invalid_plan_name); an unknown plan is 404 plan_not_found; " +
			"an evaluation error 422 plan_failed; a run past its deadline 504; a failure of the plan's data store 502.",
		params: []paramDoc{name,
			queryParam("trace", "boolean", "true (or 1): add trace and elapsed_us to the answer")},
		responses: map[int]string{200: "PlanRun", 404: "Error", 502: "Error", 504: "Error"}}})
}

func (s *Server) listPlans(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if q := newQuery(r); q.err != nil {
		s.writeError(w, r, q.err)
		return
	}
	out, err := s.svc.Plans(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) planGraph(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if q := newQuery(r); q.err != nil {
		s.writeError(w, r, q.err)
		return
	}
	g, err := s.svc.PlanGraph(r.Context(), p, r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, g)
}

func (s *Server) runPlan(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	q := newQuery(r, "trace")
	trace := q.bool("trace")
	if q.err != nil {
		s.writeError(w, r, q.err)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
	if err != nil {
		s.writeError(w, r, service.Invalid("invalid_body", "body", "reading the request body failed: %v", err))
		return
	}
	if int64(len(body)) > s.cfg.MaxBodyBytes {
		s.writeError(w, r, service.TooLarge("body_too_large", "body", "request body exceeds %d bytes", s.cfg.MaxBodyBytes))
		return
	}
	out, err := s.svc.RunPlan(r.Context(), p, service.PlanRunInput{Name: r.PathValue("name"), Request: body, Trace: trace})
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away
		}
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(out, '\n'))
}
