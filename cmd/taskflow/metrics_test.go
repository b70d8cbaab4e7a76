package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestAPIMetricsNotificationDelivery: `taskflow api` observes notification
// delivery latency on its /metrics, for a poll and for the
// next-interaction path, and serves the streams' gauges.
func TestAPIMetricsNotificationDelivery(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	const admin = "metrics-test-admin-key-0123456789"
	m := testMain(map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin}, io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	go func() { done <- m.Run(ctx, []string{"api", "--addr", strings.TrimPrefix(base, "http://")}) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Fatal("api did not stop")
		}
	}()
	do := func(method, path, token string) (int, []byte) {
		req, err := http.NewRequest(method, base+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	require.Eventually(t, func() bool { c, _ := do("GET", "/live", ""); return c == http.StatusOK }, 20*time.Second, 20*time.Millisecond)
	metrics := func() string {
		c, b := do("GET", "/metrics", admin)
		require.Equal(t, http.StatusOK, c, string(b))
		return string(b)
	}
	require.NotContains(t, metrics(), `taskflow_notification_delivery_seconds_count{via="poll"}`)
	require.Contains(t, metrics(), "taskflow_stream_dlq_size")

	code, body := do("POST", "/api/v1/sessions", "")
	require.Equal(t, http.StatusCreated, code, string(body))
	var sess struct {
		ID    string `json:"session_id"`
		Token string `json:"token"`
	}
	require.NoError(t, json.Unmarshal(body, &sess))
	n, err := notify.New(rdb, notify.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	note := notify.Notification{Type: notify.KindCompleted, TaskID: "t1", TaskType: "report.generate", Message: "done", Action: "view_result", Priority: "normal"}

	// Polled.
	_, err = n.Notify(context.Background(), sess.ID, note)
	require.NoError(t, err)
	code, body = do("GET", notify.PathPoll, sess.Token)
	require.Equal(t, http.StatusOK, code, string(body))
	require.Contains(t, metrics(), `taskflow_notification_delivery_seconds_count{via="poll"} 1`)

	// Riding on the session's next response.
	_, err = n.Notify(context.Background(), sess.ID, note)
	require.NoError(t, err)
	code, body = do("GET", "/api/v1/tasks", sess.Token)
	require.Equal(t, http.StatusOK, code, string(body))
	require.Contains(t, string(body), "view_result", "the unread notification rides on the response")
	require.Contains(t, metrics(), `taskflow_notification_delivery_seconds_count{via="next_interaction"} 1`)
}

// TestDevMetricsExternalOutcomes: `taskflow dev` runs the orchestrator in
// the API's process, so its /metrics carries every series docs/notifications.md lists once tasks
// went through an external service (here `taskflow service analysis`,
// in this process): created, completed and failed (dead-lettered) counts,
// the services' durations, consumer lag, the DLQ stream's size and the
// notification delivery latency.
func TestDevMetricsExternalOutcomes(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	const admin = "dev-metrics-admin-key-0123456789"
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

	do := func(method, path, token, body string) (int, []byte) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	metrics := func() string {
		c, b := do("GET", "/metrics", admin, "")
		require.Equal(t, http.StatusOK, c, string(b))
		return string(b)
	}
	require.NotContains(t, metrics(), `taskflow_external_task_outcomes_total{`)

	code, body := do("POST", "/api/v1/sessions", "", "")
	require.Equal(t, http.StatusCreated, code, string(body))
	var sess struct {
		Token string `json:"token"`
	}
	require.NoError(t, json.Unmarshal(body, &sess))
	submit := func(csv string) string {
		b, err := json.Marshal(map[string]any{"task_type": "data.analyze", "params": map[string]any{"csv": csv}})
		require.NoError(t, err)
		code, body := do("POST", "/api/v1/tasks", sess.Token, string(b))
		require.Equal(t, http.StatusCreated, code, string(body))
		var s struct {
			ID string `json:"task_id"`
		}
		require.NoError(t, json.Unmarshal(body, &s))
		return s.ID
	}
	waitState := func(id, want string) {
		require.Eventually(t, func() bool {
			code, body := do("GET", "/api/v1/tasks/"+id, sess.Token, "")
			var v struct {
				State string `json:"state"`
			}
			return code == http.StatusOK && json.Unmarshal(body, &v) == nil && v.State == want
		}, 30*time.Second, 20*time.Millisecond, "task %s never %s\n%s", id, want, printed.String())
	}
	good := submit("x,y\n1,2\n3,4\n")
	bad := submit("x,y\n\"1,2\n") // unterminated quote: a permanent failure
	waitState(good, "COMPLETED")
	waitState(bad, "DLQ")

	// The two outcome notifications, polled from the oldest (the status
	// reads above may have carried them already).
	require.Eventually(t, func() bool {
		code, body := do("GET", notify.PathPoll+"?after=0", sess.Token, "")
		return code == http.StatusOK && strings.Contains(string(body), bad) && strings.Contains(string(body), good)
	}, 10*time.Second, 20*time.Millisecond)

	var ours []string // the taskflow series, for a readable failure
	for _, l := range strings.Split(metrics(), "\n") {
		if strings.HasPrefix(l, "taskflow_") && !strings.Contains(l, "_bucket{") {
			ours = append(ours, l)
		}
	}
	m := strings.Join(ours, "\n")
	for _, want := range []string{
		// created / completed / failed per minute: rate() of these
		`taskflow_task_transitions_total{from="",task_type="data.analyze",to="PENDING"} 2`,
		`taskflow_external_task_outcomes_total{outcome="completed",task_type="data.analyze"} 1`,
		`taskflow_external_task_outcomes_total{outcome="dead_lettered",task_type="data.analyze"} 1`,
		// durations as the service reported them
		`taskflow_external_task_duration_seconds_count{outcome="completed",task_type="data.analyze"} 1`,
		// consumer lag of the agent's and the service's groups
		`taskflow_stream_consumer_lag{group="agent-group",stream=`,
		`taskflow_stream_consumer_lag{group="analysis-service-group",stream=`,
		"taskflow_stream_dlq_size 1",
		`taskflow_notification_delivery_seconds_count{via="poll"}`,
		// lifecycle events trimmed before the archiver / notifier read them
		`taskflow_event_stream_gaps_total{follower="archiver"} 0`,
		`taskflow_event_stream_gaps_total{follower="notifier"} 0`,
	} {
		require.Contains(t, m, want)
	}
}

// TestNextInteractionOnMountedRoutes: unread notifications ride on a
// session's next response from the mounted packages too — get_task_result,
// list_user_tasks and the plan API — not only from the core's routes; once
// delivered they are read. The admin's responses never carry them.
func TestNextInteractionOnMountedRoutes(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	const admin = "next-interaction-admin-key-0123456789"
	base, _ := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin})
	do := func(method, path, token, body string) (int, map[string]any) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
		return res.StatusCode, out
	}
	code, s := do("POST", "/api/v1/sessions", "", "")
	require.Equal(t, http.StatusCreated, code)
	sid, tok := s["session_id"].(string), s["token"].(string)
	code, sub := do("POST", "/api/v1/tasks", tok, `{"task_type":"noop"}`)
	require.Equal(t, http.StatusCreated, code)
	id := sub["task_id"].(string)
	// The noop's own completion notification (in-process tasks notify
	// too) is read first by polling, so each response below carries only
	// the notification written for it.
	// It may also ride on the submit's own response, when the noop
	// finished before that response was written (seen under load).
	onlyTheNoop := func(out map[string]any) bool {
		got, _ := out["notifications"].([]any)
		return len(got) == 1 && got[0].(map[string]any)["task_id"] == id
	}
	if !onlyTheNoop(sub) {
		require.Eventually(t, func() bool {
			_, out := do("GET", "/api/v1/notifications", tok, "")
			return onlyTheNoop(out)
		}, 20*time.Second, 20*time.Millisecond)
	}
	n, err := notify.New(rdb, notify.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	for _, c := range []struct {
		method, path, body string
		code               int
	}{
		{"GET", "/api/v1/results/" + id, "", http.StatusOK},
		{"GET", "/api/v1/results", "", http.StatusOK},
		{"POST", "/api/v1/plans/no_such_plan/execute", `{}`, http.StatusBadRequest},
	} {
		note := notify.Notification{Type: notify.KindCompleted, TaskID: "note-for-" + c.path, TaskType: "noop",
			Message: "done", Action: "retrieve_result", Priority: "normal"}
		_, err := n.Notify(context.Background(), sid, note)
		require.NoError(t, err)
		code, _ := do(c.method, c.path, admin, c.body)
		require.NotContains(t, []int{401, 403}, code)
		code, out := do(c.method, c.path, tok, c.body)
		require.Equal(t, c.code, code, "%s %s: %v", c.method, c.path, out)
		got, _ := out["notifications"].([]any)
		require.Len(t, got, 1, "%s %s carries the unread notification: %v", c.method, c.path, out)
		require.Equal(t, note.TaskID, got[0].(map[string]any)["task_id"])
		_, out = do(c.method, c.path, tok, c.body)
		require.NotContains(t, out, "notifications", "%s %s: delivered once", c.method, c.path)
	}
}
