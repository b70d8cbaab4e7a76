package planapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/task"
)

// TaskType is the task_type whose tasks run a plan.
const TaskType = "plan"

// TaskHandler runs tasks of type "plan". The task's params are the HTTP
// body plus the plan's name: {"plan_name": "...", "user_id": ...,
// "request_id"?, "param_overrides"?, "deadline_ms"?, "node_timeout_ms"?};
// the result is rankd's success line. Bad params and bad plans fail
// permanently; timeouts and Redis failures are retried.
func (s *Service) TaskHandler() worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		var head struct {
			PlanName string `json:"plan_name"`
		}
		if len(t.Params) == 0 || json.Unmarshal(t.Params, &head) != nil {
			return nil, task.Permanent(errors.New("plan task: params must be a JSON object with plan_name and user_id"))
		}
		if head.PlanName == "" {
			return nil, task.Permanent(errors.New("plan task: params.plan_name is required"))
		}
		in, err := s.parseInput(t.Params, "plan_name")
		if err != nil {
			return nil, task.Permanent(fmt.Errorf("plan task: %w", err))
		}
		out, err := s.Execute(ctx, head.PlanName, in)
		if err == nil {
			return out, nil
		}
		var pe *Error
		if errors.As(err, &pe) {
			switch {
			case pe.Kind == KindTimeout:
				return nil, task.Transient(task.ErrTypeNetworkTimeout, err)
			case pe.Kind == KindUpstream:
				return nil, task.Transient(task.ErrTypeServiceUnavailable, err)
			case pe.CallersFault() || pe.Kind == KindPlanInvalid:
				return nil, task.Permanent(err)
			}
		}
		return nil, err
	})
}

// Type declares the plan task type for the deployment's registry: with s
// (the plans this deployment has), a submit naming a plan that does not
// exist or does not compile is refused (CheckTask); with a nil s only the
// params' shape is described.
func Type(s *Service) tasktypes.Type {
	t := tasktypes.Type{Name: TaskType, JSONSchema: ParamsJSONSchema(),
		Description: "Runs a named plan (a DAG of Redis reads and CPU steps) for a user; the result is its candidates.",
		Notify:      "Your {plan_name} results are ready"}
	if s != nil {
		t.Check = s.CheckTask
	}
	return t
}

// ParamsJSONSchema is a plan task's params as a JSON Schema (the body of
// the plan endpoint plus plan_name), for GET /api/v1/task-types.
func ParamsJSONSchema() map[string]any {
	num := func(d string) map[string]any {
		return map[string]any{"type": "integer", "minimum": 1, "description": d}
	}
	return map[string]any{
		"type":     "object",
		"required": []string{"plan_name", "user_id"},
		"properties": map[string]any{
			"plan_name":       map[string]any{"type": "string", "pattern": "^[A-Za-z0-9_]{1,128}$", "description": "a named plan, e.g. complex_dag"},
			"user_id":         map[string]any{"type": []string{"integer", "string"}, "description": "the user the plan ranks for (a positive integer, or its decimal string)"},
			"request_id":      map[string]any{"type": "string"},
			"param_overrides": map[string]any{"type": "object", "description": "plan params by name"},
			"deadline_ms":     num("the whole run's deadline in ms (at most 30000)"),
			"node_timeout_ms": num("each node's timeout in ms"),
		},
		"additionalProperties": false,
	}
}
