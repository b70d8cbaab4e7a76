package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestDevServesPlans: the real server (`taskflow dev` on a Redis of the
// test's own namespace) runs complex_dag from plans/ over
// POST /api/v1/plans/{name}/execute and as a task of type "plan", on the
// data `taskflow seed-demo` loads. complex_dag's answer: the media of
// follow:1 (ids 1001..1006, recommendation:1's users have no media) scored
// id × coalesce(P.weight, 0.1), best first.
func TestDevServesPlans(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	prefix := ns + ":demo:"
	plansDir, err := filepath.Abs("../../plans")
	require.NoError(t, err)
	key := "dev-admin-key-plans-0123456789"
	env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": key,
		"TASKFLOW_PLAN_DIR": plansDir, "RANKD_KEY_PREFIX": prefix}

	var seeded bytes.Buffer
	require.NoError(t, testMain(env, &seeded).Run(context.Background(), []string{"seed-demo"}))
	require.Contains(t, seeded.String(), `seeded 31 demo keys`)
	require.Contains(t, seeded.String(), `key prefix "`+prefix+`"`, "seed-demo reads RANKD_KEY_PREFIX like the server")

	base, _ := startDev(t, env)
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, raw
	}
	type cand struct {
		ID     int64              `json:"id"`
		Fields map[string]float64 `json:"fields"`
	}
	var want []cand
	for id := int64(1006); id >= 1001; id-- {
		want = append(want, cand{id, map[string]float64{"score": float64(id) * 0.1}})
	}
	check := func(raw []byte, requestID string) {
		t.Helper()
		var out struct {
			RequestID  string `json:"request_id"`
			EngineID   string `json:"engine_request_id"`
			Candidates []cand `json:"candidates"`
		}
		require.NoError(t, json.Unmarshal(raw, &out), string(raw))
		require.Equal(t, requestID, out.RequestID)
		require.Len(t, out.EngineID, 36)
		require.Equal(t, want, out.Candidates)
	}

	code, raw := call("POST", "/api/v1/plans/complex_dag/execute", `{"user_id":1,"request_id":"http-1","deadline_ms":5000}`)
	require.Equal(t, http.StatusOK, code, string(raw))
	check(raw, "http-1")

	code, raw = call("POST", "/api/v1/plans/no_such_plan/execute", `{"user_id":1}`)
	require.Equal(t, http.StatusNotFound, code, string(raw))
	require.Contains(t, string(raw), `"plan_not_found"`)
	code, raw = call("POST", "/api/v1/plans/complex_dag/execute", `{"user_id":1,"param_overrides":{"nope":1}}`)
	require.Equal(t, http.StatusBadRequest, code, string(raw))
	require.Contains(t, string(raw), `"field":"param_overrides.nope"`)

	// The same plan as an asynchronous task; its result is stored like any task's.
	code, raw = call("POST", "/api/v1/tasks", `{"task_type":"plan","params":{"plan_name":"complex_dag","user_id":1,"request_id":"task-1"}}`)
	require.Equal(t, http.StatusCreated, code, string(raw))
	var created struct {
		TaskID string `json:"task_id"`
	}
	require.NoError(t, json.Unmarshal(raw, &created))
	var got struct {
		State     string          `json:"state"`
		Result    json.RawMessage `json:"result"`
		Retries   int             `json:"retry_count"`
		LastError string          `json:"last_error"`
	}
	require.Eventually(t, func() bool {
		code, raw := call("GET", "/api/v1/tasks/"+created.TaskID, "")
		require.Equal(t, http.StatusOK, code, string(raw))
		require.NoError(t, json.Unmarshal(raw, &got))
		require.NotContains(t, []string{"FAILED", "DLQ", "CANCELLED"}, got.State, string(raw))
		return got.State == "COMPLETED"
	}, 30*time.Second, 20*time.Millisecond)
	check(got.Result, "task-1")

	// A task that could only fail is refused at submit, as the route
	// refuses its run: a plan that does not exist, a name no plan can have
	// (the worker's handler fails such a task permanently: planapi's tests).
	code, raw = call("POST", "/api/v1/tasks", `{"task_type":"plan","max_retries":3,"params":{"plan_name":"no_such_plan","user_id":1}}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, string(raw))
	require.Contains(t, string(raw), `"field":"params.plan_name"`)
	require.Contains(t, string(raw), "no_such_plan")
	code, raw = call("POST", "/api/v1/tasks", `{"task_type":"plan","params":{"plan_name":"`+strings.Repeat("p", 300)+`","user_id":1}}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, string(raw))
	require.Contains(t, string(raw), `"field":"params.plan_name"`)
	code, raw = call("POST", "/api/v1/plans/"+strings.Repeat("p", 300)+"/execute", `{"user_id":1}`)
	require.Equal(t, http.StatusBadRequest, code, string(raw))
	require.Contains(t, string(raw), `"invalid_plan_name"`)
}
