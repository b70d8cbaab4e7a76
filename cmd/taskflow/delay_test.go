package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestDevDelayedTask: on the real server a task submitted with delay runs
// once the delay has passed, not before (delayed execution).
func TestDevDelayedTask(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	const admin = "dev-delay-admin-key-0123456789"
	base, _ := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin})
	do := func(method, path, body string) (int, []byte) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	code, body := do("POST", "/api/v1/tasks", `{"task_type":"noop","delay":0.4}`)
	require.Equal(t, http.StatusCreated, code, string(body))
	var sub struct {
		ID string `json:"task_id"`
	}
	require.NoError(t, json.Unmarshal(body, &sub))
	var v struct {
		State     string     `json:"state"`
		CreatedAt time.Time  `json:"created_at"`
		StartedAt *time.Time `json:"started_at"`
	}
	require.Eventually(t, func() bool {
		code, body := do("GET", "/api/v1/tasks/"+sub.ID, "")
		return code == http.StatusOK && json.Unmarshal(body, &v) == nil && v.State == "COMPLETED"
	}, 20*time.Second, 20*time.Millisecond)
	require.NotNil(t, v.StartedAt)
	require.GreaterOrEqual(t, v.StartedAt.Sub(v.CreatedAt), 400*time.Millisecond, "it ran before its delay")
}
