package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// bearer adds a token to every request of an HTTP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpInbox gathers what the server pushes to a client.
type mcpInbox struct {
	mu       sync.Mutex
	logs     []string
	updated  []string
	progress []float64
}

func (b *mcpInbox) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			raw, _ := json.Marshal(r.Params.Data)
			b.mu.Lock()
			b.logs = append(b.logs, string(raw))
			b.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			b.mu.Lock()
			b.updated = append(b.updated, r.Params.URI)
			b.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			b.mu.Lock()
			b.progress = append(b.progress, r.Params.Progress)
			b.mu.Unlock()
		},
	}
}

func (b *mcpInbox) snapshot() (logs, updated []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.logs...), append([]string(nil), b.updated...)
}

func mcpHTTP(t testing.TB, base, token string, inbox *mcpInbox) *mcp.ClientSession {
	t.Helper()
	var opts *mcp.ClientOptions
	if inbox != nil {
		opts = inbox.options()
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "taskflow-test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool and returns its result, its text and its structured
// content as a map.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, string, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var out map[string]any
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	_ = json.Unmarshal(raw, &out)
	return res, text.String(), out
}

func newSession(t testing.TB, base, admin string) string {
	t.Helper()
	req, err := http.NewRequest("POST", base+"/api/v1/sessions", nil)
	require.NoError(t, err)
	if admin != "" {
		req.Header.Set("Authorization", "Bearer "+admin)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var s struct {
		Token string `json:"token"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&s))
	require.NotEmpty(t, s.Token)
	return s.Token
}

// TestMCPOverHTTP: the Go SDK's client against the real server's /mcp:
// a tool per task type with the type's params schema, a report delegated,
// the agent told when it is ready (pushed and in the next answer), the
// result fetched with its file; bad arguments are tool errors naming the
// field; sessions see only their own tasks; a wrong token is refused.
func TestMCPOverHTTP(t *testing.T) {
	t.Parallel()
	const admin = "mcp-http-admin-key-0123456789abcdef"
	_, ns := testredis.Client(t)
	base, printed := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin},
		"--services", "all", "--output-dir", t.TempDir())
	ctx := context.Background()
	tok := newSession(t, base, "")
	inbox := &mcpInbox{}
	cs := mcpHTTP(t, base, tok, inbox)

	// The report service published its spec when it registered: wait for
	// it, then a new MCP session lists the tool with its schema.
	var tools map[string]*mcp.Tool
	require.Eventually(t, func() bool {
		c := mcpHTTP(t, base, tok, nil)
		lt, err := c.ListTools(ctx, nil)
		require.NoError(t, err)
		tools = map[string]*mcp.Tool{}
		for _, tl := range lt.Tools {
			tools[tl.Name] = tl
		}
		raw, _ := json.Marshal(tools["generate_report_tool"].InputSchema)
		return strings.Contains(string(raw), `"quarter"`)
	}, 15*time.Second, 100*time.Millisecond, "%s", printed)
	for _, n := range []string{"generate_report_tool", "analyze_data_tool", "process_document_tool", "export_data_tool",
		"summarize_text_tool", "run_plan_tool", "noop_task_tool", "sleep_task_tool", "wordcount_text_tool",
		"get_task_result_tool", "list_user_tasks_tool", "cancel_task_tool", "wait_for_task_tool"} {
		require.Contains(t, tools, n)
		sch, ok := tools[n].InputSchema.(map[string]any)
		require.True(t, ok, n)
		require.Equal(t, "object", sch["type"], n)
		require.NotEmpty(t, tools[n].Description, n)
		// a valid JSON Schema (2020-12, as the SDKs read it)
		raw, err := json.Marshal(sch)
		require.NoError(t, err)
		var js jsonschema.Schema
		require.NoError(t, json.Unmarshal(raw, &js), n)
		_, err = js.Resolve(nil)
		require.NoError(t, err, "%s: %s", n, raw)
	}
	// and it checks what the server checks
	repSchema, _ := json.Marshal(tools["generate_report_tool"].InputSchema)
	var js jsonschema.Schema
	require.NoError(t, json.Unmarshal(repSchema, &js))
	resolved, err := js.Resolve(nil)
	require.NoError(t, err)
	require.NoError(t, resolved.Validate(map[string]any{"quarter": "Q1", "year": 2024.0, "data": map[string]any{}}))
	require.Error(t, resolved.Validate(map[string]any{"quarter": "Q1"}), "year and data are required")
	rep := tools["generate_report_tool"].InputSchema.(map[string]any)
	require.ElementsMatch(t, []any{"quarter", "year", "data"}, rep["required"])
	require.Contains(t, rep["properties"], "priority", "the task options ride along the params")

	// Bad arguments: a tool error naming the field, nothing created.
	res, text, out := call(t, cs, "generate_report_tool", map[string]any{"quarter": "Q5", "year": 2024, "data": map[string]any{}})
	require.True(t, res.IsError)
	require.Contains(t, text, "params.quarter")
	require.Equal(t, "params.quarter", out["error"].(map[string]any)["field"])
	res, text, _ = call(t, cs, "generate_report_tool", map[string]any{"quarter": "Q4", "year": 2024, "data": map[string]any{}, "priority": "urgent"})
	require.True(t, res.IsError)
	require.Contains(t, text, "priority")
	res, text, _ = call(t, cs, "get_task_result_tool", map[string]any{"task_id": 7})
	require.True(t, res.IsError)
	require.Contains(t, text, "task_id")

	// Subscribe: finished tasks are pushed.
	require.NoError(t, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "taskflow://notifications"}))

	// Delegate a report: the answer comes at once with the task id.
	// (delayed a second: the test subscribes to the task before it runs)
	res, text, out = call(t, cs, "generate_report_tool", map[string]any{"quarter": "Q4", "year": 2024, "format": "csv",
		"data": map[string]any{"revenue": []int{10, 20, 30}}, "delay_seconds": 1})
	require.False(t, res.IsError, text)
	id, _ := out["task_id"].(string)
	require.NotEmpty(t, id, text)
	require.Contains(t, out["acknowledgment_message"], id)
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "taskflow://tasks/" + id}))

	// Another session neither sees nor cancels it.
	other := mcpHTTP(t, base, newSession(t, base, ""), nil)
	res, text, out = call(t, other, "get_task_result_tool", map[string]any{"task_id": id})
	require.True(t, res.IsError)
	require.Equal(t, "task_not_found", out["error"].(map[string]any)["code"], text)
	res, _, _ = call(t, other, "cancel_task_tool", map[string]any{"task_id": id})
	require.True(t, res.IsError)

	// Wait for it: the result carries the file as a resource link.
	res, text, out = call(t, cs, "wait_for_task_tool", map[string]any{"task_id": id, "timeout_seconds": 30})
	require.False(t, res.IsError, text)
	require.Equal(t, "completed", out["status"], text)
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			link = l
		}
	}
	require.NotNil(t, link, "the result file is a resource link: %s", text)
	require.Equal(t, "taskflow://tasks/"+id+"/files/"+id+".csv", link.URI)
	file, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
	require.NoError(t, err)
	require.Equal(t, "text/csv; charset=utf-8", file.Contents[0].MIMEType)
	require.Contains(t, file.Contents[0].Text, "revenue")
	require.Equal(t, "private", file.CacheScope, "a session's file is not for shared caches")
	_, err = other.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
	require.Error(t, err, "another session cannot read the file")
	// the same file over HTTP, for the session's token only
	fileURL := out["result"].(map[string]any)["file_url"].(string)
	require.Equal(t, "/api/v1/results/"+id+"/files/"+id+".csv", fileURL)
	req, _ := http.NewRequest("GET", base+fileURL, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	fres, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(fres.Body)
	fres.Body.Close()
	require.Equal(t, http.StatusOK, fres.StatusCode)
	require.Equal(t, file.Contents[0].Text, string(body))

	// Told without polling: a log message with the notification, and the
	// resource updated.
	require.Eventually(t, func() bool {
		logs, updated := inbox.snapshot()
		return strings.Contains(strings.Join(logs, "\n"), "Your Q4 2024 report is ready") &&
			strings.Contains(strings.Join(updated, " "), "taskflow://notifications") &&
			strings.Contains(strings.Join(updated, " "), "taskflow://tasks/"+id)
	}, 10*time.Second, 20*time.Millisecond, "%+v", inbox)

	// The task is a readable resource of its session.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "taskflow://tasks/" + id})
	require.NoError(t, err)
	require.Contains(t, rr.Contents[0].Text, `"completed"`)
	_, err = other.ReadResource(ctx, &mcp.ReadResourceParams{URI: "taskflow://tasks/" + id})
	require.Error(t, err, "another session's task is not found")

	// Cancel a long task; list this session's tasks.
	_, text, out = call(t, cs, "sleep_task_tool", map[string]any{"duration_ms": 600000, "delay_seconds": 60})
	sleepID, _ := out["task_id"].(string)
	require.NotEmpty(t, sleepID, text)
	res, text, out = call(t, cs, "cancel_task_tool", map[string]any{"task_id": sleepID})
	require.False(t, res.IsError, text)
	require.Equal(t, "CANCELLED", out["state"], text)
	_, text, out = call(t, cs, "list_user_tasks_tool", map[string]any{"limit": 10})
	require.Len(t, out["tasks"], 2, text)
	_, text, out = call(t, cs, "list_user_tasks_tool", map[string]any{"status": "completed"})
	require.Len(t, out["tasks"], 1, text)
	require.Contains(t, text, id)

	// A session that did not subscribe hears of its finished task in the
	// next tool answer.
	plain := mcpHTTP(t, base, newSession(t, base, ""), nil)
	// (a noop may finish before its own submit's answer is written: then
	// that answer carries it)
	_, seen, out := call(t, plain, "noop_task_tool", map[string]any{})
	noopID, _ := out["task_id"].(string)
	require.NotEmpty(t, noopID, seen)
	require.Eventually(t, func() bool {
		_, text, _ := call(t, plain, "list_user_tasks_tool", map[string]any{})
		seen += text
		return strings.Contains(seen, "Notifications:\n- Your noop task is ready! (task "+noopID+")")
	}, 10*time.Second, 50*time.Millisecond)

	// Every example service's tool, and summarize, end to end.
	for tool, args := range map[string]map[string]any{
		"analyze_data_tool":     {"csv": "city,temp\nOslo,3\nRome,15\n"},
		"process_document_tool": {"content": "# Title\n\nSome text here.", "format": "md"},
		"export_data_tool":      {"rows": []any{map[string]any{"a": 1}}, "format": "json"},
		"summarize_text_tool":   {"content": article, "max_sentences": 2},
	} {
		res, text, out := call(t, cs, tool, args)
		require.False(t, res.IsError, "%s: %s", tool, text)
		res, text, out = call(t, cs, "wait_for_task_tool", map[string]any{"task_id": out["task_id"], "timeout_seconds": 30})
		require.False(t, res.IsError, "%s: %s", tool, text)
		require.Equal(t, "completed", out["status"], "%s: %s", tool, text)
	}

	// run_plan_tool checks the plan's name.
	res, text, _ = call(t, cs, "run_plan_tool", map[string]any{"plan_name": "../etc", "user_id": 1})
	require.True(t, res.IsError)
	require.Contains(t, text, "plan_name")

	// A wrong token never reaches a tool.
	c := mcp.NewClient(&mcp.Implementation{Name: "intruder", Version: "1"}, nil)
	_, err = c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"tf_not-a-token"}}, MaxRetries: -1}, nil)
	require.Error(t, err)
	req, _ = http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	hres, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, hres.Body)
	hres.Body.Close()
	require.Equal(t, http.StatusUnauthorized, hres.StatusCode, "no credentials")
}

// TestMCPOverStdio: `taskflow mcp` in a process of its own, as a desktop
// agent runs it: it opens a session, lists the tools, delegates a task,
// waits for it and fetches it.
func TestMCPOverStdio(t *testing.T) {
	t.Parallel()
	const admin = "mcp-stdio-admin-key-0123456789abcdef"
	_, ns := testredis.Client(t)
	env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin}
	startDev(t, env)

	a, err := json.Marshal([]string{"mcp"})
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envHelperArgs+"="+string(a))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "taskflow-test", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, stderr.String())
	defer func() { require.NoError(t, cs.Close(), stderr.String()) }()

	lt, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, tl := range lt.Tools {
		names[tl.Name] = true
	}
	require.True(t, names["summarize_text_tool"] && names["wait_for_task_tool"], "%v", names)

	res, text, out := call(t, cs, "summarize_text_tool", map[string]any{"content": article, "max_sentences": 2})
	require.False(t, res.IsError, text)
	id, _ := out["task_id"].(string)
	require.NotEmpty(t, id, text)
	res, text, out = call(t, cs, "wait_for_task_tool", map[string]any{"task_id": id, "timeout_seconds": 30})
	require.False(t, res.IsError, text)
	require.Equal(t, "completed", out["status"], text)
	res, text, _ = call(t, cs, "summarize_text_tool", map[string]any{"max_sentences": "two"})
	require.True(t, res.IsError)
	require.Contains(t, text, "params.max_sentences")
	require.Contains(t, stderr.String(), "opened a session for this process")
}

// BenchmarkMCPToolCall: a submit tool called over streamable HTTP by the
// Go SDK's client against `taskflow dev` on the test Redis (client and
// server in this process): the cost of one agent's call.
func BenchmarkMCPToolCall(b *testing.B) {
	_, ns := testredis.Client(b)
	base, _ := startDev(b, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns})
	const sessions = 8
	var css []*mcp.ClientSession
	for range sessions {
		css = append(css, mcpHTTP(b, base, newSession(b, base, ""), nil))
	}
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		cs := css[next.Add(1)%sessions]
		for pb.Next() {
			r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "noop_task_tool", Arguments: map[string]any{}})
			if err != nil || r.IsError {
				b.Fatal(err, r)
			}
		}
	})
}

// TestMCPWaitReportsProgress: wait_for_task_tool, called with a progress
// token, sends the task's progress as MCP progress notifications while it
// runs, and answers when it ends; a tool for an external type that a
// service published shows the service's description.
func TestMCPWaitReportsProgress(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	base, _ := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns,
		"TASKFLOW_ADMIN_KEY": "mcp-progress-admin-key-0123456789", "TASKFLOW_EXTERNAL_TYPES": "slow.job"})
	reported, release := make(chan struct{}), make(chan struct{})
	svc, err := extsvc.New(rdb, extsvc.Config{Name: "slow-service", Namespace: ns, Block: 100 * time.Millisecond})
	require.NoError(t, err)
	svc.Describe("slow.job", extsvc.TypeInfo{Description: "A job that takes its time."})
	svc.HandleFunc("slow.job", func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		if err := tk.Progress(ctx, 30, "a third done", 5*time.Second); err != nil {
			return nil, err
		}
		close(reported)
		select {
		case <-release:
			return extsvc.Result("", "done", nil), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	svcCtx, stopSvc := context.WithCancel(context.Background())
	svcDone := make(chan error, 1)
	go func() { svcDone <- svc.Run(svcCtx) }()
	t.Cleanup(func() { stopSvc(); <-svcDone })

	tok := newSession(t, base, "")
	var tools map[string]*mcp.Tool
	require.Eventually(t, func() bool { // the service registered and published
		lt, err := mcpHTTP(t, base, tok, nil).ListTools(context.Background(), nil)
		require.NoError(t, err)
		tools = map[string]*mcp.Tool{}
		for _, tl := range lt.Tools {
			tools[tl.Name] = tl
		}
		return tools["job_slow_tool"] != nil && strings.HasPrefix(tools["job_slow_tool"].Description, "A job that takes its time.")
	}, 10*time.Second, 100*time.Millisecond)

	inbox := &mcpInbox{}
	cs := mcpHTTP(t, base, tok, inbox)
	_, text, out := call(t, cs, "job_slow_tool", map[string]any{})
	id, _ := out["task_id"].(string)
	require.NotEmpty(t, id, text)
	<-reported
	go func() {
		require.Eventually(t, func() bool {
			inbox.mu.Lock()
			defer inbox.mu.Unlock()
			return len(inbox.progress) > 0
		}, 10*time.Second, 10*time.Millisecond, "no progress notification")
		close(release)
	}()
	params := &mcp.CallToolParams{Name: "wait_for_task_tool", Arguments: map[string]any{"task_id": id, "timeout_seconds": 30}}
	params.SetProgressToken("wait-1")
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.False(t, res.IsError)
	raw, _ := json.Marshal(res.StructuredContent)
	require.Contains(t, string(raw), `"status":"completed"`)
	inbox.mu.Lock()
	defer inbox.mu.Unlock()
	require.Equal(t, []float64{30}, inbox.progress)
}

// A viewer's key reads only, and MCP's tools act: /mcp refuses it (403
// insufficient scope); an operator's key connects and lists the tools.
// The keys are made with the CLI, as an admin would.
func TestMCPRefusesAViewerKey(t *testing.T) {
	t.Parallel()
	const admin = "mcp-roles-admin-key-0123456789abcdef"
	_, ns := testredis.Client(t)
	base, _ := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin})
	key := func(name, role string) string {
		out, errOut, err := client(t, base, "", "keys", "create", name, "--role", role, "--token", admin)
		require.NoError(t, err, errOut)
		require.Contains(t, errOut, "shown this once")
		return strings.TrimSpace(out)
	}
	viewer, operator := key("dash", "viewer"), key("oncall", "operator")

	req, err := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+viewer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode, string(body))

	cs := mcpHTTP(t, base, operator, nil)
	lt, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.NotEmpty(t, lt.Tools)

	out, _, err := client(t, base, "", "keys", "list", "--token", admin)
	require.NoError(t, err)
	require.Regexp(t, `dash\s+viewer`, out)
	require.Regexp(t, `oncall\s+operator`, out)
	_, _, err = client(t, base, "", "keys", "list", "--token", operator)
	require.ErrorContains(t, err, "admin role")
	out, _, err = client(t, base, "", "audit", "--token", admin)
	require.NoError(t, err)
	require.Regexp(t, `admin\s+admin\s+POST /api/v1/keys`, out)
	out, _, err = client(t, base, "", "keys", "revoke", "dash", "--token", admin)
	require.NoError(t, err)
	require.Contains(t, out, "revoked dash (viewer)")
}
