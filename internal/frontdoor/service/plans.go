package service

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/plan/planapi"
)

// PlanRunInput is a synchronous plan run: the plan's name and rankd's
// request ({"user_id", "request_id"?, "param_overrides"?} plus the optional
// "deadline_ms" and "node_timeout_ms").
type PlanRunInput struct {
	Name    string
	Request json.RawMessage
	// Trace adds the run's per-node timeline to the answer
	// (planapi.ExecuteTraced). Off, the answer is rankd's line unchanged.
	Trace bool
}

// RunPlan runs plan in.Name for in.Request and returns rankd's success line
// (a JSON object: request_id, engine_request_id, candidates; with in.Trace
// also trace and elapsed_us). Any session or the admin may run a plan:
// plans read the shared demo data and belong to no session. The name is
// checked (planapi.CheckName) before it reaches the file system.
func (s *Service) RunPlan(ctx context.Context, p auth.Principal, in PlanRunInput) (json.RawMessage, error) {
	if err := s.plansFor(p); err != nil {
		return nil, err
	}
	if err := s.cfg.Plans.CheckName(in.Name); err != nil {
		return nil, planErr(ctx, err)
	}
	req, err := s.cfg.Plans.ParseInput(in.Request)
	if err != nil {
		return nil, planErr(ctx, err)
	}
	run := s.cfg.Plans.Execute
	if in.Trace {
		run = s.cfg.Plans.ExecuteTraced
	}
	out, err := run(ctx, in.Name, req)
	if err != nil {
		return nil, planErr(ctx, err)
	}
	return out, nil
}

// plansFor refuses p when it may not use plans, or when this server has
// none. Plans belong to no session: any session or the admin may list,
// read and run them.
func (s *Service) plansFor(p auth.Principal) error {
	if err := requirePrincipal(p); err != nil {
		return err
	}
	if s.cfg.Plans == nil {
		return Conflict("plans_unavailable", "this server runs no plans")
	}
	return nil
}

// PlanInfo is one plan this server can run: its size, or why it cannot
// run (Error, the plan_invalid message a run would answer).
type PlanInfo struct {
	Name    string
	Nodes   int
	Outputs int
	Error   string
}

// planInfoJSON is a PlanInfo on the wire.
type planInfoJSON struct {
	Name    string `json:"name" jsonschema:"the plan's name, as in /api/v1/plans/{name}"`
	Nodes   *int   `json:"nodes,omitempty" jsonschema:"its nodes (absent when error is set)"`
	Outputs *int   `json:"outputs,omitempty" jsonschema:"its output nodes (absent when error is set)"`
	Error   string `json:"error,omitempty" jsonschema:"the plan does not compile: why (a run of it is 500 plan_invalid)"`
}

// MarshalJSON writes {name, nodes, outputs}, or {name, error} for a plan
// that does not compile: its counts would be zeros that mean nothing.
func (i PlanInfo) MarshalJSON() ([]byte, error) {
	if i.Error != "" {
		return json.Marshal(planInfoJSON{Name: i.Name, Error: i.Error})
	}
	return json.Marshal(planInfoJSON{Name: i.Name, Nodes: &i.Nodes, Outputs: &i.Outputs})
}

// WireForm is a value of the struct MarshalJSON writes.
func (PlanInfo) WireForm() any { return planInfoJSON{} }

// PlanList is the plans this server can run, by name.
type PlanList struct {
	Plans []PlanInfo `json:"plans"`
}

// Plans lists the plans this server can run, sorted by name: the built-in
// ones, or those of the plan directory. Each is compiled (as a run would,
// through the same cache), so a plan that does not compile is listed with
// its error rather than failing the whole list; one removed meanwhile is
// left out.
func (s *Service) Plans(ctx context.Context, p auth.Principal) (*PlanList, error) {
	if err := s.plansFor(p); err != nil {
		return nil, err
	}
	names, err := s.cfg.Plans.Names()
	if err != nil {
		return nil, planErr(ctx, err)
	}
	out := &PlanList{Plans: make([]PlanInfo, 0, len(names))}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, planErr(ctx, err)
		}
		g, err := s.cfg.Plans.Graph(name)
		var pe *planapi.Error
		switch {
		case err == nil:
			out.Plans = append(out.Plans, PlanInfo{Name: name, Nodes: len(g.Nodes), Outputs: len(g.Outputs)})
		case errors.As(err, &pe) && pe.Kind == planapi.KindNotFound:
		case errors.As(err, &pe):
			out.Plans = append(out.Plans, PlanInfo{Name: name, Error: pe.Message})
		default: // the file could not be read: its path is the server's own business
			out.Plans = append(out.Plans, PlanInfo{Name: name, Error: "the plan could not be read"})
		}
	}
	return out, nil
}

// PlanGraph is a plan's DAG for drawing (planapi.Graph).
type PlanGraph = planapi.Graph

// The JSON of plans over the API (described by planapi).
type (
	// PlanNode is one node of a PlanGraph.
	PlanNode = planapi.GraphNode
	// PlanRequest is the body of a plan run (RunPlan's Request).
	PlanRequest = planapi.RunRequest
	// PlanAnswer is RunPlan's answer.
	PlanAnswer = planapi.Answer
	// PlanTraceLine is one node's line of a traced run.
	PlanTraceLine = planapi.TraceLine
)

// PlanGraph returns the DAG of plan name, with the errors a run of it
// would have for the name and the plan (invalid_plan_name,
// plan_not_found, plan_invalid).
func (s *Service) PlanGraph(ctx context.Context, p auth.Principal, name string) (*PlanGraph, error) {
	if err := s.plansFor(p); err != nil {
		return nil, err
	}
	g, err := s.cfg.Plans.Graph(name)
	if err != nil {
		return nil, planErr(ctx, err)
	}
	return g, nil
}

// planErr maps a planapi failure to the service's kinds; the codes stay
// planapi's (invalid_plan_name, plan_not_found, deadline_exceeded, ...).
func planErr(ctx context.Context, err error) error {
	if (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() != nil { // the caller went away
		return Unavailable(err)
	}
	var pe *planapi.Error
	if !errors.As(err, &pe) {
		return Internal(err)
	}
	var k Kind
	switch pe.Kind {
	case planapi.KindInvalid:
		k = KindInvalid
	case planapi.KindNotFound:
		k = KindNotFound
	case planapi.KindEvaluation:
		k = KindUnprocessable
	case planapi.KindUpstream:
		k = KindUpstream
	case planapi.KindTimeout:
		k = KindTimeout
	case planapi.KindPlanInvalid: // the operator's to fix: said as is (a 500 is logged by the front end)
		k = KindInternal
	default:
		return Internal(err)
	}
	return &Error{Kind: k, Code: pe.Code, Field: pe.Field, Message: pe.Message, Err: err}
}
