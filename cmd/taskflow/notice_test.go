package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestDevInProcessTaskNotifies: on the assembled `taskflow dev`, a session
// that submits a summarize task (run by the in-process handler) is told
// when it finishes, as for an external task: by polling its notifications
// (fields) and on its next API response; a cancelled
// in-process task is announced too, and another session hears nothing.
func TestDevInProcessTaskNotifies(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	const admin = "dev-notice-admin-key-0123456789"
	base, _ := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin})
	do := func(method, path, token, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
		return res.StatusCode, out
	}
	session := func() string {
		code, s := do("POST", "/api/v1/sessions", "", "")
		require.Equal(t, http.StatusCreated, code, "%v", s)
		return s["token"].(string)
	}
	tok, other := session(), session()
	// (delay: the task runs after the submit's response is written;
	// otherwise, on a loaded machine, its notification could ride on that
	// response as the session's next interaction and be read before the
	// poll below looks for it)
	code, sub := do("POST", "/api/v1/tasks", tok, `{"task_type":"summarize","delay":0.3,"content":"`+strings.ReplaceAll(article, "\n", " ")+`"}`)
	require.Equal(t, http.StatusCreated, code, "%v", sub)
	id := sub["task_id"].(string)
	notes := func(out map[string]any) []map[string]any {
		raw, _ := json.Marshal(out["notifications"])
		var ns []map[string]any
		require.NoError(t, json.Unmarshal(raw, &ns))
		return ns
	}

	// Polling (left unread, so the next response carries it too).
	var polled []map[string]any
	require.Eventually(t, func() bool {
		code, out := do("GET", notify.PathPoll+"?mark_read=false", tok, "")
		require.Equal(t, http.StatusOK, code, "%v", out)
		polled = notes(out)
		return len(polled) > 0
	}, 20*time.Second, 20*time.Millisecond)
	require.Len(t, polled, 1, "%v", polled)
	n := polled[0]
	for _, f := range []string{"notification_id", "type", "task_id", "task_type", "message", "action", "timestamp", "priority"} {
		require.Contains(t, n, f, "notification field %s (docs/notifications.md)", f)
	}
	require.Equal(t, id, n["task_id"])
	require.Equal(t, "task_completed", n["type"])
	require.Equal(t, "summarize", n["task_type"])
	require.Equal(t, "Your summary is ready", n["message"])
	require.Equal(t, "retrieve_result", n["action"])
	code, task := do("GET", "/api/v1/tasks/"+id, admin, "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "COMPLETED", task["state"], "notified once finished")

	// The next interaction carries it, once.
	code, out := do("GET", "/api/v1/results/"+id, tok, "")
	require.Equal(t, http.StatusOK, code, "%v", out)
	next := notes(out)
	require.Len(t, next, 1, "%v", out)
	require.Equal(t, n["notification_id"], next[0]["notification_id"])
	_, out = do("GET", "/api/v1/results/"+id, tok, "")
	require.NotContains(t, out, "notifications", "delivered once")

	// A cancelled in-process task (scheduled for later, cancelled while
	// PENDING) is announced as cancelled.
	code, sub = do("POST", "/api/v1/tasks", tok, `{"task_type":"noop","delay":3600}`)
	require.Equal(t, http.StatusCreated, code, "%v", sub)
	later := sub["task_id"].(string)
	code, out = do("POST", "/api/v1/tasks/"+later+"/cancel", tok, "")
	require.Less(t, code, 300, "%v", out)
	require.Eventually(t, func() bool {
		_, out := do("GET", notify.PathPoll+"?after=0&mark_read=false", tok, "")
		for _, n := range notes(out) {
			if n["task_id"] == later {
				return n["type"] == "task_cancelled" && n["message"] == "Your noop task was cancelled."
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond)
	_, out = do("GET", notify.PathPoll+"?after=0", tok, "")
	require.Len(t, notes(out), 2, "one notification per finished task: %v", out)

	_, out = do("GET", notify.PathPoll+"?after=0", other, "")
	require.Empty(t, notes(out), "another session hears nothing")
}
