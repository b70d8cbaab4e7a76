package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestGoProgramTypesThroughTheAPI: a Go program's own task type, served by
// its taskflow.Worker beside `taskflow dev` on the same Redis, is known to
// the API as the built-ins are: listed with its description and schema (in
// GET /api/v1/task-types and /openapi.json),
// its params checked at submit (422 naming the field), offered as an MCP
// tool, and its tasks run by the program's worker.
func TestGoProgramTypesThroughTheAPI(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	const admin = "go-types-admin-key-0123456789abcdef"
	base, printed := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin})

	w, err := taskflow.NewWorker(taskflow.Config{RedisURL: testredis.URL(), Namespace: ns, WorkerID: "go-program",
		NoScheduler: true, ShutdownGrace: time.Second})
	require.NoError(t, err)
	w.Handle("invoice.render", taskflow.HandlerFunc(func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		_ = taskflow.ReportProgress(ctx, 100, "done")
		return json.RawMessage(`{"pages":2}`), nil
	}), taskflow.Describe("Renders an invoice."), taskflow.Notify("Your invoice is ready"),
		taskflow.Params(param.Schema{Fields: []param.Field{
			{Name: "customer", Kind: param.String, Required: true},
			{Name: "amount", Kind: param.Number, Required: true, Min: 0.01, Max: 1e6},
		}}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	api := apiCaller(t, base)
	var types struct {
		Types []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Params      map[string]any `json:"params_schema"`
			HandledBy   string         `json:"handled_by"`
		} `json:"task_types"`
	}
	require.Eventually(t, func() bool {
		if api("GET", "/api/v1/task-types", admin, nil, &types) != http.StatusOK {
			return false
		}
		for _, ty := range types.Types {
			if ty.Name == "invoice.render" {
				raw, _ := json.Marshal(ty.Params)
				return ty.Description == "Renders an invoice." && ty.HandledBy == "worker" &&
					strings.Contains(string(raw), `"customer"`)
			}
		}
		return false
	}, 15*time.Second, 50*time.Millisecond, "the program's type is never listed\n%s", printed)

	// /openapi.json's submit body has a variant for it, with its schema
	res0, err := http.Get(base + "/openapi.json")
	require.NoError(t, err)
	doc, err := io.ReadAll(res0.Body)
	res0.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(doc), `"invoice.render"`)
	require.Contains(t, string(doc), "Renders an invoice.")

	// params checked at submit, naming the field
	req, err := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(
		`{"task_type":"invoice.render","params":{"customer":"ada","amount":-3}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+admin)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var bad struct {
		Error struct {
			Field string `json:"field"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&bad))
	res.Body.Close()
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "params.amount", bad.Error.Field)

	// an MCP tool for it
	cs := mcpHTTP(t, base, newSession(t, base, admin), nil)
	lt, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var tool *mcp.Tool
	for _, tl := range lt.Tools {
		if tl.Name == "render_invoice_tool" {
			tool = tl
		}
	}
	require.NotNil(t, tool, "no MCP tool for the program's type")
	require.True(t, strings.HasPrefix(tool.Description, "Renders an invoice."), tool.Description)

	// a task submitted over HTTP runs in the program's worker
	var sub struct {
		TaskID string `json:"task_id"`
	}
	require.Equal(t, http.StatusCreated, api("POST", "/api/v1/tasks", admin,
		map[string]any{"task_type": "invoice.render", "params": map[string]any{"customer": "ada", "amount": 12.5}}, &sub))
	var got struct {
		State  string          `json:"state"`
		Worker string          `json:"worker"`
		Result json.RawMessage `json:"result"`
	}
	require.Eventually(t, func() bool {
		return api("GET", "/api/v1/tasks/"+sub.TaskID, admin, nil, &got) == http.StatusOK &&
			got.State == string(task.StateCompleted)
	}, 20*time.Second, 50*time.Millisecond, "the task never completed")
	require.Equal(t, "go-program", got.Worker)
	require.JSONEq(t, `{"pages":2}`, string(got.Result))
}
