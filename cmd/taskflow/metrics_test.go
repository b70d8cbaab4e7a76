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

	"github.com/taskflow/taskflow/internal/notify"
	"github.com/taskflow/taskflow/internal/testredis"
)

// TestAPIMetricsNotificationDelivery: `taskflow api` observes notification
// delivery latency (spec 003 §9) on its /metrics, for a poll and for the
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
	n, err := notify.New(rdb, notify.Config{Namespace: ns})
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
