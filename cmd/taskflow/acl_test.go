package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/acl"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestDevUnderACLUsers: the program itself — `taskflow dev` (API, workers,
// scheduler, orchestrator, cron, dependencies, metrics) and
// `taskflow service analysis` — runs on a redis-server of the test's own
// as the ACL users docs/notifications.md gives (acl.ProcessRules,
// acl.ServiceRules), through a day's work: an external task, an in-process
// one, a dependent one, a delayed one, a schedule, notifications and a
// /metrics scrape. Redis's ACL LOG must stay empty: nothing the program
// does needs more than its namespace.
func TestDevUnderACLUsers(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	root := srv.Client()
	ctx := context.Background()
	const ns = "acldev"
	setUser := func(name, pass string, rules []string) {
		args := []any{"ACL", "SETUSER", name, "reset", "on", ">" + pass}
		for _, r := range rules {
			args = append(args, r)
		}
		require.NoError(t, root.Do(ctx, args...).Err())
	}
	setUser("taskflow", "app-pw", acl.ProcessRules(keyspace.MustParse(ns), 1))
	setUser("analysis", "svc-pw", acl.ServiceRules(keyspace.MustParse(ns)))
	require.NoError(t, root.Do(ctx, "ACL", "LOG", "RESET").Err())

	const admin = "acl-dev-admin-key-0123456789"
	base, printed := startDev(t, map[string]string{"REDIS_URL": fmt.Sprintf("redis://taskflow:app-pw@%s/0", srv.Addr),
		"TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin})
	svcEnv := map[string]string{"REDIS_URL": fmt.Sprintf("redis://analysis:svc-pw@%s/0", srv.Addr), "TASKFLOW_NAMESPACE": ns}
	svcCtx, stopSvc := context.WithCancel(context.Background())
	svcDone := make(chan error, 1)
	go func() {
		svcDone <- testMain(svcEnv, io.Discard).Run(svcCtx, []string{"service", "analysis", "--output-dir", t.TempDir()})
	}()
	t.Cleanup(func() {
		stopSvc()
		select {
		case err := <-svcDone:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("the service did not stop")
		}
	})

	do := func(method, path, token, body string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := do("POST", "/api/v1/sessions", "", "")
	require.Equal(t, http.StatusCreated, code, body)
	var sess struct {
		Token string `json:"token"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &sess))
	submit := func(v map[string]any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		code, body := do("POST", "/api/v1/tasks", sess.Token, string(b))
		require.Equal(t, http.StatusCreated, code, body)
		var s struct {
			ID string `json:"task_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &s))
		return s.ID
	}
	waitCompleted := func(id string) {
		require.Eventually(t, func() bool {
			code, body := do("GET", "/api/v1/tasks/"+id, sess.Token, "")
			return code == http.StatusOK && strings.Contains(body, `"state":"COMPLETED"`)
		}, 30*time.Second, 20*time.Millisecond, "task %s\n%s", id, printed.String())
	}
	ext := submit(map[string]any{"task_type": "data.analyze", "params": map[string]any{"csv": "x\n1\n2\n"}})
	local := submit(map[string]any{"task_type": "summarize", "content": "One sentence here. Another one there. A third."})
	after := submit(map[string]any{"task_type": "noop", "depends_on": []string{ext, local}})
	delayed := submit(map[string]any{"task_type": "noop", "delay": 0.2})
	for _, id := range []string{ext, local, after, delayed} {
		waitCompleted(id)
	}
	code, body = do("POST", "/api/v1/schedules", sess.Token, `{"cron":"@every 1s","task_type":"noop"}`)
	require.Equal(t, http.StatusCreated, code, body)
	require.Eventually(t, func() bool {
		_, body := do("GET", "/api/v1/tasks?status=COMPLETED", sess.Token, "")
		var l struct {
			Total int `json:"total"`
		}
		return json.Unmarshal([]byte(body), &l) == nil && l.Total >= 5
	}, 30*time.Second, 50*time.Millisecond, "the schedule fired")
	require.Eventually(t, func() bool {
		code, body := do("GET", notify.PathPoll+"?after=0", sess.Token, "")
		return code == http.StatusOK && strings.Contains(body, ext)
	}, 10*time.Second, 20*time.Millisecond, "the session was notified")
	code, body = do("GET", "/api/v1/results/"+ext, sess.Token, "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"status":"completed"`)
	for _, probe := range []string{"/health", "/ready"} {
		code, body = do("GET", probe, "", "")
		require.Equal(t, http.StatusOK, code, "%s: %s", probe, body)
	}
	code, body = do("GET", "/metrics", admin, "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "taskflow_redis_up 1")
	require.Contains(t, body, `taskflow_stream_consumer_lag{group="analysis-service-group"`)

	entries, err := root.Do(ctx, "ACL", "LOG").Slice()
	require.NoError(t, err)
	require.Empty(t, entries, "commands or keys refused by the ACL: %v", entries)
}
