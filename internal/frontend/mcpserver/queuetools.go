package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// queueAnswer is list_queues_tool's structured answer.
type queueAnswer struct {
	service.QueueList
	Notifications []service.Notification `json:"notifications,omitempty"`
}

func (a *queueAnswer) attach(ns []service.Notification) { a.Notifications = ns }

// pauseAnswer is the pause and resume tools' structured answer.
type pauseAnswer struct {
	service.PauseState
	Notifications []service.Notification `json:"notifications,omitempty"`
}

func (a *pauseAnswer) attach(ns []service.Notification) { a.Notifications = ns }

// addQueueTools adds the operator's tools of named queues and pauses
// (issue 26): listed only for a deployment-wide caller (the admin key, an
// operator's or admin's named key); a session never sees them.
func (ss *session) addQueueTools(srv *mcp.Server) {
	if !ss.p.Admin {
		return
	}
	srv.AddTool(&mcp.Tool{Name: "list_queues_tool", Title: "list the named queues",
		Description: "Lists the deployment's named queues: tasks waiting by priority, retries, running, completed per minute, " +
			"the oldest wait, whether paused, and their limits; also the paused task types and the tasks a pause or limit holds back.",
		InputSchema: object(map[string]any{}), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			list, err := ss.s.svc.Queues(ctx, ss.p)
			if err != nil {
				return ss.fail(ctx, err), nil
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d queues", len(list.Queues))
			for _, q := range list.Queues {
				state := "running"
				if q.Paused {
					state = "paused"
				}
				fmt.Fprintf(&b, "\n- %s (%s): %d waiting, %d retrying, %d running, %.1f completed/min, oldest wait %.1fs",
					q.Name, state, q.Pending.High+q.Pending.Normal+q.Pending.Low, q.Retry, q.Active, q.CompletedPerMin, q.OldestPendingAge)
			}
			if len(list.PausedTaskTypes) > 0 {
				fmt.Fprintf(&b, "\npaused task types: %s", strings.Join(list.PausedTaskTypes, ", "))
			}
			return ss.answer(ctx, b.String(), &queueAnswer{QueueList: list}), nil
		})
	for _, pause := range []bool{true, false} {
		verb, what := "pause", "Pauses"
		if !pause {
			verb, what = "resume", "Resumes"
		}
		srv.AddTool(&mcp.Tool{Name: verb + "_queue_tool", Title: verb + " a named queue",
			Description: what + " a named queue on every worker at once: while paused no task of it starts; its tasks wait in order and running ones finish.",
			InputSchema: object(map[string]any{"queue": map[string]any{"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,63}$",
				"description": "the named queue"}}, "queue")},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				q, err := stringArg(req.Params.Arguments, "queue", true)
				if err != nil {
					return ss.fail(ctx, err), nil
				}
				out, err := ss.s.svc.PauseQueue(ctx, ss.p, q, pause)
				if err != nil {
					return ss.fail(ctx, err), nil
				}
				return ss.answer(ctx, fmt.Sprintf("Queue %s is %sd.", q, verb), &pauseAnswer{PauseState: out}), nil
			})
		srv.AddTool(&mcp.Tool{Name: verb + "_task_type_tool", Title: verb + " a task type",
			Description: what + " a task type on every worker at once, in every queue: while paused no task of it starts; its tasks wait in order, the other types' proceed.",
			InputSchema: object(map[string]any{"task_type": map[string]any{"type": "string", "description": "the task type"}}, "task_type")},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				t, err := stringArg(req.Params.Arguments, "task_type", true)
				if err != nil {
					return ss.fail(ctx, err), nil
				}
				out, err := ss.s.svc.PauseTaskType(ctx, ss.p, t, pause)
				if err != nil {
					return ss.fail(ctx, err), nil
				}
				return ss.answer(ctx, fmt.Sprintf("Task type %s is %sd.", t, verb), &pauseAnswer{PauseState: out}), nil
			})
	}
}
