package httpapi

import (
	"io"
	"net/http"

	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/service"
)

// planRoutes registers the synchronous plan run.
func (s *Server) planRoutes(add func(route)) {
	add(route{method: "POST", path: "/api/v1/plans/{name}/execute", access: principal, handler: s.runPlan, doc: opDoc{
		tag: "plans", summary: "Run a plan synchronously; body: rankd's request",
		description: "The body is {user_id, request_id?, param_overrides?, deadline_ms?, node_timeout_ms?}; the answer is rankd's success line. " +
			"A plan name is 1 to 128 letters, digits or _ (400 invalid_plan_name); an unknown plan is 404 plan_not_found; " +
			"a run past its deadline 504; a failure of the plan's data store 502.",
		params:    []paramDoc{pathParam("name", "the plan's name (plans/<name>.plan.json)")},
		responses: map[int]string{200: "", 404: "Error", 502: "Error", 504: "Error"}}})
}

func (s *Server) runPlan(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	body, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
	if err != nil {
		s.writeError(w, r, service.Invalid("invalid_body", "body", "reading the request body failed: %v", err))
		return
	}
	if int64(len(body)) > s.cfg.MaxBodyBytes {
		s.writeError(w, r, service.TooLarge("body_too_large", "body", "request body exceeds %d bytes", s.cfg.MaxBodyBytes))
		return
	}
	out, err := s.svc.RunPlan(r.Context(), p, service.PlanRunInput{Name: r.PathValue("name"), Request: body})
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
