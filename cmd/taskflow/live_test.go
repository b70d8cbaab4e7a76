package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestDevLiveNotifications: on the real server an external task's
// completion is pushed, in format, to the owner's WebSocket
// (token in the query, as browsers pass it) and SSE stream (token in the
// header) while they are connected; another session's WebSocket gets
// nothing, and a bad token is refused before any stream starts.
func TestDevLiveNotifications(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	const admin = "dev-live-admin-key-0123456789"
	env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin}
	base, _ := startDev(t, env)
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
	post := func(path, token, body string) []byte {
		req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		require.Equal(t, http.StatusCreated, res.StatusCode, string(b))
		return b
	}
	var a, b struct {
		Token string `json:"token"`
	}
	require.NoError(t, json.Unmarshal(post("/api/v1/sessions", "", ""), &a))
	require.NoError(t, json.Unmarshal(post("/api/v1/sessions", "", ""), &b))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(base, "http") + notify.PathWebSocket + "?access_token="
	_, res, err := websocket.Dial(ctx, wsURL+"tfs_forged", nil)
	require.Error(t, err, "a forged token is refused")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	wsA, _, err := websocket.Dial(ctx, wsURL+a.Token, nil)
	require.NoError(t, err)
	defer wsA.CloseNow()
	wsB, _, err := websocket.Dial(ctx, wsURL+b.Token, nil)
	require.NoError(t, err)
	defer wsB.CloseNow()
	req, err := http.NewRequestWithContext(ctx, "GET", base+notify.PathSSE, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+a.Token)
	sse, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer sse.Body.Close()
	require.Equal(t, "text/event-stream", sse.Header.Get("Content-Type"))
	sr := bufio.NewReader(sse.Body)
	line, err := sr.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, ": connected\n", line, "the stream is open before the task exists")

	var sub struct {
		ID string `json:"task_id"`
	}
	require.NoError(t, json.Unmarshal(post("/api/v1/tasks", a.Token, `{"task_type":"data.analyze","params":{"csv":"v\n7\n"}}`), &sub))

	check := func(raw []byte, via string) {
		t.Helper()
		var n map[string]any
		require.NoError(t, json.Unmarshal(raw, &n), via)
		for _, f := range []string{"notification_id", "type", "task_id", "task_type", "message", "action", "timestamp", "priority"} {
			require.Contains(t, n, f, "%s: notification field %s in %s", via, f, raw)
		}
		require.Equal(t, sub.ID, n["task_id"], via)
		require.Equal(t, "task_completed", n["type"], via)
		require.Equal(t, "data.analyze", n["task_type"], via)
	}
	_, raw, err := wsA.Read(ctx)
	require.NoError(t, err)
	check(raw, "websocket")
	for {
		line, err := sr.ReadString('\n')
		require.NoError(t, err)
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			check([]byte(data), "sse")
			break
		}
	}
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	_, raw, err = wsB.Read(short)
	require.Error(t, err, "another session's WebSocket got %s", raw)

	// The notification delivery latency on /metrics, observed for both live paths.
	require.Eventually(t, func() bool {
		req, err := http.NewRequest("GET", base+"/metrics", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+admin)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		m, _ := io.ReadAll(res.Body)
		return strings.Contains(string(m), `taskflow_notification_delivery_seconds_count{via="websocket"} 1`) &&
			strings.Contains(string(m), `taskflow_notification_delivery_seconds_count{via="sse"} 1`)
	}, 10*time.Second, 20*time.Millisecond)
}
