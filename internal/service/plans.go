package service

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/planapi"
)

// PlanRunInput is a synchronous plan run: the plan's name and rankd's
// request ({"user_id", "request_id"?, "param_overrides"?} plus the optional
// "deadline_ms" and "node_timeout_ms").
type PlanRunInput struct {
	Name    string
	Request json.RawMessage
}

// RunPlan runs plan in.Name for in.Request and returns rankd's success line
// (a JSON object: request_id, engine_request_id, candidates). Any session
// or the admin may run a plan: plans read the shared demo data and belong
// to no session. The name is checked (planapi.CheckName) before it
// reaches the file system.
func (s *Service) RunPlan(ctx context.Context, p auth.Principal, in PlanRunInput) (json.RawMessage, error) {
	if err := requirePrincipal(p); err != nil {
		return nil, err
	}
	if s.cfg.Plans == nil {
		return nil, Conflict("plans_unavailable", "this server runs no plans")
	}
	if err := s.cfg.Plans.CheckName(in.Name); err != nil {
		return nil, planErr(ctx, err)
	}
	req, err := s.cfg.Plans.ParseInput(in.Request)
	if err != nil {
		return nil, planErr(ctx, err)
	}
	out, err := s.cfg.Plans.Execute(ctx, in.Name, req)
	if err != nil {
		return nil, planErr(ctx, err)
	}
	return out, nil
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
