package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestDevCancelAndTimeoutExternal: cancellation and timeout
// through the program. On `taskflow dev`, with a service written with
// extsvc whose handler waits until told (slow.job, an external type by
// TASKFLOW_EXTERNAL_TYPES):
//   - cancelling a running task over HTTP answers "requested", the
//     service's handler sees its context cancelled, the task ends
//     CANCELLED and the session is told;
//   - a task that outlives its timeout becomes TIMEOUT, the session is told
//     it is still running, and its late completion still completes it and
//     notifies.
func TestDevCancelAndTimeoutExternal(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	const admin = "dev-cancel-admin-key-0123456789"
	base, printed := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns,
		"TASKFLOW_ADMIN_KEY": admin, "TASKFLOW_EXTERNAL_TYPES": "slow.job"})

	started := make(chan string, 4)
	cancelled := make(chan string, 4)
	release := make(chan struct{})
	svc, err := extsvc.New(rdb, extsvc.Config{Name: "slow-service", Namespace: ns, Block: 100 * time.Millisecond})
	require.NoError(t, err)
	svc.HandleFunc("slow.job", func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		started <- tk.ID
		select {
		case <-ctx.Done():
			cancelled <- tk.ID
			return nil, ctx.Err()
		case <-release:
			return extsvc.Result("", "done late", nil), nil
		}
	})
	svcCtx, stopSvc := context.WithCancel(context.Background())
	svcDone := make(chan error, 1)
	go func() { svcDone <- svc.Run(svcCtx) }()
	t.Cleanup(func() {
		stopSvc()
		select {
		case err := <-svcDone:
			if !errors.Is(err, context.Canceled) {
				require.NoError(t, err)
			}
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
	submit := func(body string) string {
		code, out := do("POST", "/api/v1/tasks", sess.Token, body)
		require.Equal(t, http.StatusCreated, code, out)
		var s struct {
			ID string `json:"task_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &s))
		return s.ID
	}
	waitFor := func(ch chan string, id, what string) {
		t.Helper()
		select {
		case got := <-ch:
			require.Equal(t, id, got, what)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: never happened\n%s", what, printed.String())
		}
	}
	state := func(id string) string {
		_, out := do("GET", "/api/v1/tasks/"+id, sess.Token, "")
		var v struct {
			State string `json:"state"`
		}
		_ = json.Unmarshal([]byte(out), &v)
		return v.State
	}
	notified := func(id string, kind notify.Kind) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, out := do("GET", notify.PathPoll+"?after=0", sess.Token, "")
			var l struct {
				Notifications []notify.Notification `json:"notifications"`
			}
			if json.Unmarshal([]byte(out), &l) != nil {
				return false
			}
			for _, n := range l.Notifications {
				if n.TaskID == id && n.Type == kind {
					return true
				}
			}
			return false
		}, 20*time.Second, 20*time.Millisecond, "%s for %s\n%s", kind, id, printed.String())
	}

	// Cancel a running task.
	id := submit(`{"task_type":"slow.job","timeout":60}`)
	waitFor(started, id, "the service starts the task")
	code, body = do("POST", "/api/v1/tasks/"+id+"/cancel", sess.Token, "")
	require.Equal(t, http.StatusAccepted, code, body)
	require.Contains(t, body, `"outcome":"requested"`)
	waitFor(cancelled, id, "the handler's context is cancelled")
	require.Eventually(t, func() bool { return state(id) == "CANCELLED" }, 20*time.Second, 20*time.Millisecond)
	notified(id, notify.KindCancelled)

	// Outlive the timeout, then complete late.
	id = submit(`{"task_type":"slow.job","timeout":1}`)
	waitFor(started, id, "the service starts the task")
	require.Eventually(t, func() bool { return state(id) == "TIMEOUT" }, 20*time.Second, 20*time.Millisecond)
	notified(id, notify.KindTimeout)
	_, out := do("GET", "/api/v1/results/"+id, sess.Token, "")
	require.Contains(t, out, "still running", "get_task_result's timeout message")
	close(release)
	require.Eventually(t, func() bool { return state(id) == "COMPLETED" }, 20*time.Second, 20*time.Millisecond)
	notified(id, notify.KindCompleted)
	_, out = do("GET", "/api/v1/results/"+id, sess.Token, "")
	require.Contains(t, out, "done late")
}
