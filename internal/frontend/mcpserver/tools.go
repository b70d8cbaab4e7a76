package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// Task types whose tools are not "{verb}_{noun}_tool".
const (
	typeSummarize = "summarize"
	typePlan      = "plan"
)

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// ToolName is the tool of a task type, {verb}_{noun}_tool: "report.generate"
// → generate_report_tool, "data.analyze" → analyze_data_tool; a type
// without a dot → {type}_task_tool; summarize → summarize_text_tool and
// plan → run_plan_tool.
func ToolName(taskType string) string {
	switch taskType {
	case typeSummarize:
		return "summarize_text_tool"
	case typePlan:
		return "run_plan_tool"
	}
	clean := func(s string) string { return strings.Trim(unsafeName.ReplaceAllString(s, "_"), "_") }
	if noun, verb, ok := strings.Cut(taskType, "."); ok && clean(noun) != "" && clean(verb) != "" {
		return clean(verb) + "_" + clean(noun) + "_tool"
	}
	return clean(taskType) + "_task_tool"
}

// The options every task tool takes besides the type's params (left out
// of a tool whose type has a param of the same name).
const (
	optPriority = "priority"
	optTimeout  = "timeout_seconds"
	optDelay    = "delay_seconds"
	optPartKey  = "partition_key"
	optIdemKey  = "idempotency_key"
	optUniqKey  = "unique_key"
	optUniqFor  = "unique_for_seconds"
)

var options = map[string]map[string]any{
	optPriority: {"type": "string", "enum": []string{"high", "normal", "low"},
		"description": "queue priority; default normal"},
	optTimeout: {"type": "number", "minimum": 1, "maximum": service.MaxTimeout.Seconds(),
		"description": "fail the attempt after this many seconds; default the deployment's"},
	optDelay: {"type": "number", "minimum": 0, "maximum": service.MaxRunAhead.Seconds(),
		"description": "start no sooner than this many seconds from now"},
	optPartKey: {"type": "string", "maxLength": service.MaxPartitionKey,
		"description": "tasks given the same key share one partition, so they keep their order (with TASKFLOW_PARTITIONS > 1); default: spread by task id"},
	optIdemKey: {"type": "string", "minLength": 1, "maxLength": service.MaxIdempotencyKey,
		"description": "a key of your choosing for this call (printable ASCII): calling the tool again with the same key and the same arguments (within 24 h) answers the task the first call created instead of creating another, so a retried call is safe. Use a new key for a new task"},
	optUniqKey: {"type": "string", "maxLength": service.MaxUniqueKey,
		"description": "while a task of this session with the same unique_key is unfinished, answer that task (duplicate: true) instead of creating one"},
	optUniqFor: {"type": "number", "minimum": 0, "maximum": service.MaxUniqueFor.Seconds(),
		"description": "with unique_key: keep the key held this many seconds after the submit, even once the task finished"},
}

// typeTool is the tool that submits tasks of t; ok is false for a type with
// no tool of this kind (plan is run_plan_tool, synchronous).
func (ss *session) typeTool(t service.TaskTypeInfo) (*mcp.Tool, mcp.ToolHandler, bool) {
	if t.Name == typePlan {
		return ss.planTool(t)
	}
	schema := maps.Clone(t.Params)
	if schema == nil {
		schema = map[string]any{}
	}
	schema["type"] = "object"
	props := map[string]any{}
	if p, ok := schema["properties"].(map[string]any); ok {
		maps.Copy(props, p)
	} else if schema["properties"] != nil { // the ordered properties of a declared schema
		if raw, err := json.Marshal(schema["properties"]); err == nil {
			_ = json.Unmarshal(raw, &props)
		}
	}
	if props == nil {
		props = map[string]any{}
	}
	var opts []string
	for name, o := range options {
		if _, taken := props[name]; !taken {
			props[name] = o
			opts = append(opts, name)
		}
	}
	schema["properties"] = props
	desc := t.Description
	if desc == "" {
		desc = "Runs a " + t.Name + " task."
	}
	desc += " Returns at once with a task_id; you are notified when it finishes (then call get_task_result_tool)."
	if t.Online != nil && !*t.Online {
		desc += " No service for it is running right now: the task waits until one starts."
	}
	tool := &mcp.Tool{Name: ToolName(t.Name), Title: t.Name, Description: desc, InputSchema: schema}
	typ := t.Name
	return tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := arguments(req.Params.Arguments)
		if err != nil {
			return ss.fail(ctx, err), nil
		}
		in := service.SubmitInput{TaskType: typ}
		idem, err := idempotencyOf(ToolName(typ), args, opts)
		if err != nil {
			return ss.fail(ctx, err), nil
		}
		for _, name := range opts {
			raw, ok := args[name]
			if !ok {
				continue
			}
			delete(args, name)
			if err := setOption(&in, name, raw); err != nil {
				return ss.fail(ctx, err), nil
			}
		}
		params, err := json.Marshal(args)
		if err != nil {
			return ss.fail(ctx, err), nil
		}
		in.Params = params
		out, replayed, err := ss.s.svc.SubmitOnce(ctx, ss.p, in, idem)
		var se *service.Error
		if errors.As(err, &se) && se.Field == service.IdempotencyField {
			// the tool's argument, not an HTTP header
			c := *se
			c.Field = optIdemKey
			c.Message = strings.ReplaceAll(c.Message, service.IdempotencyField, optIdemKey)
			err = &c
		}
		if err != nil {
			return ss.fail(ctx, err), nil
		}
		ack := Acknowledgment{TaskID: out.TaskID, TaskType: typ, State: string(out.State), Duplicate: out.Duplicate || replayed,
			AcknowledgmentMessage: fmt.Sprintf("Task %s (%s) is queued. You will be notified when it finishes; "+
				"call get_task_result_tool with this task_id to fetch the result.", out.TaskID, typ)}
		switch {
		case replayed:
			ack.AcknowledgmentMessage = fmt.Sprintf("This idempotency_key was used before: task %s (%s) is the one the first call created (it was %s then); no new task. "+
				"Call get_task_result_tool with this task_id for its result.", out.TaskID, typ, out.State)
		case out.Duplicate:
			ack.AcknowledgmentMessage = fmt.Sprintf("Task %s (%s) already holds this unique_key (it is %s); no new task. "+
				"Call get_task_result_tool with this task_id for its result.", out.TaskID, typ, out.State)
		}
		return ss.answer(ctx, ack.AcknowledgmentMessage, &ack), nil
	}, true
}

// Acknowledgment is a task tool's answer: the task id and a sentence for the model.
type Acknowledgment struct {
	TaskID   string `json:"task_id"`
	TaskType string `json:"task_type"`
	State    string `json:"state"`
	// Duplicate: no task was created; task_id is the one holding the
	// call's unique_key, or the one its idempotency_key's first call made.
	Duplicate             bool   `json:"duplicate,omitempty"`
	AcknowledgmentMessage string `json:"acknowledgment_message"`
	// Notifications are the session's unread notifications, delivered
	// with this answer (as a REST response carries them on a session's next request).
	Notifications []service.Notification `json:"notifications,omitempty"`
}

func (a *Acknowledgment) attach(ns []service.Notification) { a.Notifications = ns }

// setOption applies one of the task options to in.
func setOption(in *service.SubmitInput, name string, raw json.RawMessage) error {
	switch name {
	case optPriority:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return service.Unprocessable(name, "%s must be high, normal or low", name)
		}
		in.Priority = s
	case optPartKey:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return service.Unprocessable(name, "%s must be a string", name)
		}
		in.PartitionKey = s
	case optIdemKey:
		// read by idempotencyOf
	case optUniqKey:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return service.Unprocessable(name, "%s must be a string", name)
		}
		in.UniqueKey = s
	case optUniqFor:
		var f float64
		if json.Unmarshal(raw, &f) != nil {
			return service.Unprocessable(name, "%s must be a number of seconds", name)
		}
		in.UniqueFor = &f
	case optTimeout, optDelay:
		var f float64
		if json.Unmarshal(raw, &f) != nil {
			return service.Unprocessable(name, "%s must be a number of seconds", name)
		}
		if name == optTimeout {
			in.Timeout = &f
		} else {
			in.Delay = &f
		}
	}
	return nil
}

// idempotencyOf reads a task tool call's idempotency_key (when the tool
// takes it: opts) and fingerprints the call: the tool and its other
// arguments, each value as sent, in key order.
func idempotencyOf(tool string, args map[string]json.RawMessage, opts []string) (service.Idempotency, error) {
	raw, ok := args[optIdemKey]
	if !ok || !slices.Contains(opts, optIdemKey) {
		return service.Idempotency{}, nil
	}
	var key string
	if json.Unmarshal(raw, &key) != nil {
		return service.Idempotency{}, service.Unprocessable(optIdemKey, "%s must be a string", optIdemKey)
	}
	if err := service.ValidIdempotencyKey(key); err != nil {
		var e *service.Error
		if errors.As(err, &e) {
			e.Field = optIdemKey
		}
		return service.Idempotency{}, err
	}
	names := make([]string, 0, len(args))
	for k := range args {
		if k != optIdemKey {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	h.Write([]byte(tool))
	for _, k := range names {
		h.Write([]byte{0})
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write(bytes.TrimSpace(args[k]))
	}
	return service.Idempotency{Key: key, Fingerprint: "mcp:" + hex.EncodeToString(h.Sum(nil))}, nil
}

// arguments decodes a tool call's arguments: a JSON object (absent = {}).
func arguments(raw json.RawMessage) (map[string]json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return args, nil
	}
	if raw[0] != '{' || json.Unmarshal(raw, &args) != nil {
		return nil, service.Unprocessable("arguments", "the arguments must be a JSON object")
	}
	return args, nil
}

// planTool is run_plan_tool: a named plan run synchronously.
func (ss *session) planTool(t service.TaskTypeInfo) (*mcp.Tool, mcp.ToolHandler, bool) {
	tool := &mcp.Tool{Name: ToolName(typePlan), Title: "run a plan",
		Description: "Runs a named plan (a DAG of Redis reads and CPU steps, e.g. ranking candidates for a user) and answers with its result " +
			"within the deadline (deadline_ms, default 10 s): synchronous, no task to follow.",
		InputSchema: t.Params, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	return tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := arguments(req.Params.Arguments)
		if err != nil {
			return ss.fail(ctx, err), nil
		}
		var name string
		if raw, ok := args["plan_name"]; !ok || json.Unmarshal(raw, &name) != nil || name == "" {
			return ss.fail(ctx, service.Unprocessable("plan_name", "plan_name is required: the plan to run, e.g. complex_dag")), nil
		}
		delete(args, "plan_name")
		deadline := ss.s.cfg.PlanDeadline
		var ms float64
		if raw, ok := args["deadline_ms"]; ok && json.Unmarshal(raw, &ms) == nil && ms > 0 {
			deadline = time.Duration(ms)*time.Millisecond + time.Second
		}
		body, err := json.Marshal(args)
		if err != nil {
			return ss.fail(ctx, err), nil
		}
		rctx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		out, err := ss.s.svc.RunPlan(rctx, ss.p, service.PlanRunInput{Name: name, Request: body})
		var se *service.Error
		if errors.As(err, &se) && se.Field == "name" { // the route's path field is this tool's plan_name
			cp := *se
			cp.Field = "plan_name"
			err = &cp
		}
		if err != nil {
			return ss.fail(ctx, err), nil
		}
		var v map[string]any
		if json.Unmarshal(out, &v) != nil {
			v = map[string]any{"result": json.RawMessage(out)}
		}
		n := 0
		if c, ok := v["candidates"].([]any); ok {
			n = len(c)
		}
		return ss.answerMap(ctx, fmt.Sprintf("Plan %s answered with %d candidates.", name, n), v), nil
	}, true
}

// addFixedTools adds the tools that are not one task type's.
func (ss *session) addFixedTools(srv *mcp.Server) {
	taskID := map[string]any{"type": "string", "description": "the task_id a task tool answered with"}
	srv.AddTool(&mcp.Tool{Name: "get_task_result_tool", Title: "get a task's result",
		Description: "Status of a task of this session and, once it is done, its result or error; progress and ETA while it runs. " +
			"source says where the answer came from (redis, cache or archive). A result file is returned as a resource link.",
		InputSchema: object(map[string]any{"task_id": taskID}, "task_id"), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id, err := stringArg(req.Params.Arguments, "task_id", true)
			if err != nil {
				return ss.fail(ctx, err), nil
			}
			v, err := ss.s.svc.Result(ctx, ss.p, id)
			if err != nil {
				return ss.fail(ctx, err), nil
			}
			res := ss.answer(ctx, describe(v), &resultAnswer{ResultView: v})
			if link := fileLink(v); link != nil {
				res.Content = append(res.Content, link)
			}
			return res, nil
		})

	srv.AddTool(&mcp.Tool{Name: "list_user_tasks_tool", Title: "list this session's tasks",
		Description: "Lists this session's tasks, newest first, with their status and a one-line summary; filter by status, page with offset.",
		InputSchema: object(map[string]any{
			"status": map[string]any{"type": "string", "enum": []string{"all", "pending", "processing", "completed", "failed", "timeout"},
				"description": "default all"},
			"limit":  map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "description": "default 20"},
			"offset": map[string]any{"type": "integer", "minimum": 0, "description": "skip this many (paging); default 0"},
		}), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			status, err := stringArg(req.Params.Arguments, "status", false)
			if err != nil {
				return ss.fail(ctx, err), nil
			}
			if status == "all" {
				status = ""
			}
			limit, err := intArg(req.Params.Arguments, "limit", 20, 1, 100)
			if err != nil {
				return ss.fail(ctx, err), nil
			}
			offset, err := intArg(req.Params.Arguments, "offset", 0, 0, service.MaxResultLimit-100)
			if err != nil {
				return ss.fail(ctx, err), nil
			}
			list, err := ss.s.svc.ListResults(ctx, ss.p, service.ResultListInput{StatusFilter: status, Limit: offset + limit})
			if err != nil {
				return ss.fail(ctx, err), nil
			}
			page := listAnswer{Tasks: []service.ResultItem{}, Offset: offset, Limit: limit}
			if offset < len(list.Tasks) {
				page.Tasks = list.Tasks[offset:]
			}
			page.More = len(list.Tasks) == offset+limit
			var b strings.Builder
			fmt.Fprintf(&b, "%d tasks", len(page.Tasks))
			for _, it := range page.Tasks {
				fmt.Fprintf(&b, "\n- %s %s %s: %s", it.TaskID, it.TaskType, it.Status, it.Summary)
			}
			return ss.answer(ctx, b.String(), &page), nil
		})

	srv.AddTool(&mcp.Tool{Name: "cancel_task_tool", Title: "cancel a task",
		Description: "Cancels a task of this session that has not finished: a waiting one at once, a running one as soon as its worker stops it.",
		InputSchema: object(map[string]any{"task_id": taskID}, "task_id"), Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id, err := stringArg(req.Params.Arguments, "task_id", true)
			if err != nil {
				return ss.fail(ctx, err), nil
			}
			out, err := ss.s.svc.Cancel(ctx, ss.p, id)
			if err != nil {
				return ss.fail(ctx, err), nil
			}
			msg := "Task " + id + " is cancelled."
			if out.Outcome == "requested" {
				msg = "Task " + id + " is running: its worker stops it and it ends cancelled."
			}
			return ss.answer(ctx, msg, &cancelAnswer{CancelResult: out}), nil
		})

	srv.AddTool(&mcp.Tool{Name: "wait_for_task_tool", Title: "wait for a task",
		Description: "Waits until a task of this session finishes or timeout_seconds pass (default 30), reporting progress as it goes; " +
			"answers as get_task_result_tool does. Use it only when the user wants to wait.",
		InputSchema: object(map[string]any{"task_id": taskID,
			"timeout_seconds": map[string]any{"type": "number", "minimum": 0, "maximum": ss.s.cfg.MaxWait.Seconds(), "description": "default 30"},
		}, "task_id"), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return ss.wait(ctx, req), nil
		})
}

// wait polls the task until it finishes or the timeout passes, sending a
// progress notification whenever its progress changes (when the call asked
// for them with a progress token).
func (ss *session) wait(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	id, err := stringArg(req.Params.Arguments, "task_id", true)
	if err != nil {
		return ss.fail(ctx, err)
	}
	secs, err := floatArg(req.Params.Arguments, "timeout_seconds", 30, 0, ss.s.cfg.MaxWait.Seconds())
	if err != nil {
		return ss.fail(ctx, err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(secs*float64(time.Second)))
	defer cancel()
	token := req.Params.GetProgressToken()
	last := -1.0
	t := time.NewTicker(ss.s.cfg.WaitPoll)
	defer t.Stop()
	for {
		v, err := ss.s.svc.Result(ctx, ss.p, id)
		if err != nil {
			return ss.fail(ctx, err)
		}
		if finished(v.Status) {
			res := ss.answer(ctx, describe(v), &resultAnswer{ResultView: v})
			if link := fileLink(v); link != nil {
				res.Content = append(res.Content, link)
			}
			return res
		}
		if token != nil && v.Progress != nil && v.Progress.Percent != last {
			last = v.Progress.Percent
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: v.Progress.Percent, Total: 100, Message: v.Progress.Message})
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ss.fail(ctx, ctx.Err())
			}
			w := resultAnswer{ResultView: v, StillRunning: true}
			return ss.answer(ctx, describe(v)+fmt.Sprintf(" Still not finished after %g s: you will be notified when it is.", secs), &w)
		case <-t.C:
		}
	}
}

func finished(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

type resultAnswer struct {
	service.ResultView
	// StillRunning is set when wait_for_task_tool's timeout passed first.
	StillRunning  bool                   `json:"still_running,omitempty"`
	Notifications []service.Notification `json:"notifications,omitempty"`
}

func (a *resultAnswer) attach(ns []service.Notification) { a.Notifications = ns }

type listAnswer struct {
	Tasks         []service.ResultItem   `json:"tasks"`
	Offset        int                    `json:"offset"`
	Limit         int                    `json:"limit"`
	More          bool                   `json:"more"`
	Notifications []service.Notification `json:"notifications,omitempty"`
}

func (a *listAnswer) attach(ns []service.Notification) { a.Notifications = ns }

type cancelAnswer struct {
	service.CancelResult
	Notifications []service.Notification `json:"notifications,omitempty"`
}

func (a *cancelAnswer) attach(ns []service.Notification) { a.Notifications = ns }

// describe says a task's status in a sentence.
func describe(v service.ResultView) string {
	var b strings.Builder
	status := v.Status
	if status == service.StatusWaitingForService {
		status = "waiting for a service"
	}
	fmt.Fprintf(&b, "Task %s (%s) is %s.", v.TaskID, v.TaskType, status)
	if v.Message != "" {
		b.WriteString(" " + v.Message)
	}
	if v.Progress != nil && !finished(v.Status) {
		fmt.Fprintf(&b, " Progress %.0f%%", v.Progress.Percent)
		if v.Progress.Message != "" {
			b.WriteString(": " + v.Progress.Message)
		}
		b.WriteString(".")
	}
	if v.Error != nil {
		fmt.Fprintf(&b, " Error %s: %s", v.Error.Code, v.Error.Message)
	}
	if len(v.Result) > 0 {
		b.WriteString(" Result: ")
		b.Write(v.Result)
	}
	return b.String()
}

// fileLink is the resource link of a result's file_url, when it has one: a
// file in taskflow's artifact store is the resource
// taskflow://tasks/{id}/files/{name} (readable over any transport); any
// other URL is linked as it is.
func fileLink(v service.ResultView) *mcp.ResourceLink {
	var r struct {
		FileURL string `json:"file_url"`
	}
	if len(v.Result) == 0 || json.Unmarshal(v.Result, &r) != nil || r.FileURL == "" {
		return nil
	}
	uri, name := r.FileURL, r.FileURL
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if strings.HasPrefix(r.FileURL, "/api/v1/results/"+v.TaskID+"/files/") {
		uri = TaskURIPrefix + v.TaskID + "/files/" + name
	}
	return &mcp.ResourceLink{URI: uri, Name: name, Description: "the result file of task " + v.TaskID +
		" (also at GET " + r.FileURL + " with this session's token)"}
}

// attacher is an answer that carries the session's unread notifications.
type attacher interface{ attach([]service.Notification) }

// answer builds a successful tool result: text for the model, the same as
// structured content, with the session's unread notifications attached
// to both (and marked read: this answer delivers them).
func (ss *session) answer(ctx context.Context, text string, out attacher) *mcp.CallToolResult {
	ns := ss.unread(ctx)
	out.attach(ns)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text + notificationText(ns)}}, StructuredContent: out}
}

func (ss *session) answerMap(ctx context.Context, text string, out map[string]any) *mcp.CallToolResult {
	ns := ss.unread(ctx)
	if len(ns) > 0 {
		out["notifications"] = ns
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text + notificationText(ns)}}, StructuredContent: out}
}

func notificationText(ns []service.Notification) string {
	if len(ns) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nNotifications:")
	for _, n := range ns {
		fmt.Fprintf(&b, "\n- %s (task %s)", n.Message, n.TaskID)
	}
	return b.String()
}

// unread returns (and marks read) the session's unread notifications; the
// admin has none, and a failure to read them never fails the answer.
func (ss *session) unread(ctx context.Context) []service.Notification {
	if ss.p.SessionID == "" {
		return nil
	}
	page, err := ss.s.svc.Notifications(ctx, ss.p, service.NotificationsInput{Limit: 20})
	if err != nil {
		return nil
	}
	return page.Notifications
}

// fail is a tool error the model can act on: the service's message and
// field, as text and as structured content; an unexpected failure is
// logged and said without its detail.
func (ss *session) fail(ctx context.Context, err error) *mcp.CallToolResult {
	var se *service.Error
	if !errors.As(err, &se) || se.Kind == service.KindInternal {
		ss.s.cfg.Logger.Error("mcp tool failed", "err", err)
		se = &service.Error{Code: "internal_error", Message: "the server failed to answer; try again"}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			se = &service.Error{Code: "deadline_exceeded", Message: "the call ran out of time"}
		}
	}
	text := se.Message
	if se.Field != "" && !strings.HasPrefix(text, se.Field) {
		text = se.Field + ": " + text
	}
	detail := map[string]any{"code": se.Code, "message": se.Message}
	if se.Field != "" {
		detail["field"] = se.Field
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Error: " + text}},
		StructuredContent: map[string]any{"error": detail}}
}

// object is a JSON Schema object of props.
func object(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func stringArg(raw json.RawMessage, name string, required bool) (string, error) {
	args, err := arguments(raw)
	if err != nil {
		return "", err
	}
	for k := range args {
		if k != name && !knownArg(k) {
			return "", service.Unprocessable(k, "unknown argument %q", k)
		}
	}
	v, ok := args[name]
	if !ok {
		if required {
			return "", service.Unprocessable(name, "%s is required", name)
		}
		return "", nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil || (required && s == "") {
		return "", service.Unprocessable(name, "%s must be a non-empty string", name)
	}
	return s, nil
}

// knownArg lists the fixed tools' arguments (stringArg refuses others).
func knownArg(k string) bool {
	switch k {
	case "task_id", "status", "limit", "offset", "timeout_seconds":
		return true
	}
	return false
}

func floatArg(raw json.RawMessage, name string, def, lo, hi float64) (float64, error) {
	args, err := arguments(raw)
	if err != nil {
		return 0, err
	}
	v, ok := args[name]
	if !ok {
		return def, nil
	}
	var f float64
	if json.Unmarshal(v, &f) != nil || f < lo || f > hi {
		return 0, service.Unprocessable(name, "%s must be a number from %g to %g", name, lo, hi)
	}
	return f, nil
}

func intArg(raw json.RawMessage, name string, def, lo, hi int) (int, error) {
	f, err := floatArg(raw, name, float64(def), float64(lo), float64(hi))
	if err != nil {
		return 0, err
	}
	if f != float64(int(f)) {
		return 0, service.Unprocessable(name, "%s must be a whole number", name)
	}
	return int(f), nil
}

func ptr[T any](v T) *T { return &v }
