package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestCrossSessionEveryRoute: on the assembled server (`taskflow dev`, so
// every mounted package is there: tasks, schedules, results, notifications
// over poll / WebSocket / SSE, plans), session B tries every route that
// /openapi.json lists with session A's ids — a completed external task, a
// scheduled one, one waiting on it, a schedule — and is refused each time
// (404, as for ids that do not exist), never shown A's data, and changes nothing of A's. Routes
// without ids answer B with B's own data only. The rule: a session sees
// only its own tasks, results and notifications.
func TestCrossSessionEveryRoute(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	const admin = "cross-session-admin-key-0123456789"
	env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin}
	base, printed := startDev(t, env)
	svcCtx, stopSvc := context.WithCancel(context.Background())
	svcDone := make(chan error, 1)
	go func() {
		svcDone <- testMain(env, io.Discard).Run(svcCtx, []string{"service", "analysis", "--output-dir", t.TempDir()})
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

	// do sends a request; streaming answers (SSE) are read for 300 ms.
	do := func(method, path, token, body string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err, "%s %s", method, path)
		defer res.Body.Close()
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			var got strings.Builder
			done := make(chan struct{})
			go func() {
				defer close(done)
				buf := make([]byte, 4096)
				for {
					n, err := res.Body.Read(buf)
					got.Write(buf[:n])
					if err != nil {
						return
					}
				}
			}()
			time.Sleep(300 * time.Millisecond)
			cancel()
			<-done
			return res.StatusCode, got.String()
		}
		raw, err := io.ReadAll(res.Body)
		if err != nil && !errors.Is(err, context.Canceled) {
			require.NoError(t, err)
		}
		return res.StatusCode, string(raw)
	}
	session := func() (id, token string) {
		code, body := do("POST", "/api/v1/sessions", "", "")
		require.Equal(t, http.StatusCreated, code, body)
		var s struct {
			ID    string `json:"session_id"`
			Token string `json:"token"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &s))
		return s.ID, s.Token
	}
	aID, aTok := session()
	_, bTok := session()
	const secret = "secretcolumnofa"
	post := func(token, path string, v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		code, body := do("POST", path, token, string(b))
		require.Equal(t, http.StatusCreated, code, body)
		var out struct {
			TaskID     string `json:"task_id"`
			ScheduleID string `json:"schedule_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &out))
		return out.TaskID + out.ScheduleID
	}
	state := func(token, id string) string {
		code, body := do("GET", "/api/v1/tasks/"+id, token, "")
		require.Equal(t, http.StatusOK, code, body)
		var v struct {
			State string `json:"state"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &v))
		return v.State
	}
	params := map[string]any{"csv": secret + ",y\n1,2\n"}
	done := post(aTok, "/api/v1/tasks", map[string]any{"task_type": "data.analyze", "params": params})
	require.Eventually(t, func() bool { return state(aTok, done) == "COMPLETED" }, 30*time.Second, 20*time.Millisecond, printed.String())
	later := post(aTok, "/api/v1/tasks", map[string]any{"task_type": "data.analyze", "params": params,
		"run_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	waiting := post(aTok, "/api/v1/tasks", map[string]any{"task_type": "data.analyze", "params": params, "depends_on": []string{later}})
	sched := post(aTok, "/api/v1/schedules", map[string]any{"cron": "@hourly", "task_type": "data.analyze", "params": params})
	aIDs := []string{done, later, waiting, sched, aID}

	// B sees none of it; a leak is A's params, or any of A's ids that B's
	// request did not name itself, in an answer.
	leaks := func(body, asked string) string {
		for _, s := range append([]string{secret}, aIDs...) {
			if strings.Contains(body, s) && !strings.Contains(asked, s) {
				return s
			}
		}
		return ""
	}
	code, doc := do("GET", "/openapi.json", "", "")
	require.Equal(t, http.StatusOK, code)
	var spec struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal([]byte(doc), &spec))
	var routes []string
	for p, ops := range spec.Paths {
		for m := range ops {
			routes = append(routes, strings.ToUpper(m)+" "+p)
		}
	}
	sort.Strings(routes)
	for _, must := range []string{"GET /api/v1/results/{task_id}", "GET /api/v1/results", "GET /api/v1/notifications",
		"GET /api/v1/notifications/ws", "GET /api/v1/notifications/stream", "POST /api/v1/plans/{name}/execute"} {
		require.Contains(t, routes, must, "the matrix covers the mounted packages")
	}
	tried := 0
	for _, r := range routes {
		method, path, _ := strings.Cut(r, " ")
		switch r {
		case "DELETE /api/v1/sessions/current", "POST /api/v1/sessions":
			continue // B's own session
		}
		path = strings.NewReplacer("{queue}", "primary", "{name}", "diamond", "{schedule_id}", sched).Replace(path)
		targets := []string{path}
		if strings.Contains(path, "{task_id}") {
			targets = nil
			for _, id := range []string{done, later, waiting} {
				targets = append(targets, strings.ReplaceAll(path, "{task_id}", id))
			}
		}
		for _, p := range targets {
			body := ""
			switch {
			case method == "POST" && p == "/api/v1/tasks":
				body = `{"task_type":"data.analyze","params":{"csv":"a\n1\n"},"depends_on":["` + done + `"]}`
			case method == "POST" && p == "/api/v1/tasks/summarize":
				body = `{"content":"One sentence. Two sentences."}`
			case method == "POST" && p == "/api/v1/schedules":
				body = `{"cron":"@hourly","task_type":"data.analyze","params":{"csv":"a\n1\n"}}`
			case method == "POST" && strings.HasPrefix(p, "/api/v1/plans/"):
				body = `{}`
			}
			tried++
			code, got := do(method, p, bTok, body)
			require.Less(t, code, 500, "%s %s as B: %s", method, p, got)
			require.Empty(t, leaks(got, p+body), "%s %s as B shows A's data: %s", method, p, got)
			// one ownership rule: A's task or schedule is answered to B as
			// one that does not exist
			switch {
			case strings.Contains(r, "{task_id}") || strings.Contains(r, "{schedule_id}"):
				require.Equal(t, http.StatusNotFound, code, "%s %s as B: %s", method, p, got)
			case strings.Contains(body, done): // depends_on: as a missing task
				require.Equal(t, http.StatusUnprocessableEntity, code, "%s %s as B: %s", method, p, got)
				require.Contains(t, string(got), "no task "+done)
			}
			// Naming A's session: refused where the admin may name one
			// (notifications), ignored elsewhere (B gets B's own).
			if method == "GET" && (strings.HasPrefix(p, "/api/v1/notifications") || p == "/api/v1/results" || p == "/api/v1/tasks") {
				code, got = do(method, p+"?session_id="+aID, bTok, "")
				if strings.HasPrefix(p, "/api/v1/notifications") {
					require.Equal(t, http.StatusForbidden, code, "%s %s?session_id=A as B: %s", method, p, got)
				}
				require.Less(t, code, 500, "%s %s?session_id=A as B: %s", method, p, got)
				require.Empty(t, leaks(got, aID), "%s %s?session_id=A as B: %s", method, p, got)
			}
		}
	}
	require.Greater(t, tried, 30)

	// Nothing of A's changed, and A (and the admin) still see it all: the
	// refusals above were about B, not about ids that do not exist.
	require.Equal(t, "COMPLETED", state(aTok, done))
	require.Equal(t, "PENDING", state(aTok, later))
	require.Equal(t, "PENDING", state(aTok, waiting))
	for _, tok := range []string{aTok, admin} {
		for _, p := range []string{"/api/v1/results/" + done, "/api/v1/results/" + waiting, "/api/v1/schedules/" + sched} {
			code, got := do("GET", p, tok, "")
			require.Equal(t, http.StatusOK, code, "%s: %s", p, got)
		}
	}
	require.Eventually(t, func() bool {
		code, got := do("GET", "/api/v1/notifications?after=0", aTok, "")
		return code == http.StatusOK && strings.Contains(got, done)
	}, 10*time.Second, 20*time.Millisecond, "A was notified of its completed task")
}
