package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/tasktypes/builtin"
)

// TestWithRealWorker: tasks submitted over HTTP are run by a real worker;
// the SSE stream shows each one go PENDING → ACTIVE → COMPLETED, the
// workers view shows the worker, and queue status agrees with the tasks.
func TestWithRealWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The worker uses the real clock (leases, deadlines); the API's store
	// a fake one: give the worker a store of its own on the same namespace.
	wst, err := store.New(b.st.Client(), store.Config{Namespace: b.ns})
	require.NoError(t, err)
	mux := taskflow.NewMux()
	builtin.Register(mux)
	w, err := worker.New(wst, mux, worker.Config{ID: "http-test-worker", Concurrency: 4, HeartbeatInterval: 50 * time.Millisecond, Lease: time.Second})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := openStream(t, b, ctx, "")
	require.Equal(t, "snapshot", next(t, ch, true).name)

	wctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { require.NoError(t, w.Run(wctx)) })
	defer func() { stop(); wg.Wait() }()

	tok := b.session().Token
	const n = 5
	ids := map[string]bool{}
	for range n {
		r := b.do("POST", "/api/v1/tasks", tok, map[string]any{"task_type": "noop"})
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
		ids[r.body["task_id"].(string)] = true
	}
	seen := map[string][]string{}
	done := 0
	for done < n {
		ev := next(t, ch, true)
		if ev.name != "task" {
			continue
		}
		var te struct {
			TaskID string `json:"task_id"`
			To     string `json:"to"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &te))
		seen[te.TaskID] = append(seen[te.TaskID], te.To)
		if te.To == "COMPLETED" {
			done++
		}
	}
	require.Len(t, seen, n, "events of exactly the submitted tasks")
	for id := range ids {
		require.Equal(t, []string{"PENDING", "ACTIVE", "COMPLETED"}, seen[id], "task %s", id)
		r := b.do("GET", "/api/v1/tasks/"+id, tok, nil)
		require.Equal(t, "COMPLETED", r.body["state"])
		require.Equal(t, "http-test-worker", r.body["worker"])
	}
	r := b.do("GET", "/api/v1/queues/status", adminKey, nil)
	require.EqualValues(t, n, r.body["states"].(map[string]any)["COMPLETED"])
	require.EqualValues(t, 0, r.body["queues"].(map[string]any)["primary"])

	require.Eventually(t, func() bool { // the worker publishes itself on its heartbeat
		r := b.do("GET", "/api/v1/workers", adminKey, nil)
		return r.body["count"].(float64) == 1
	}, 10*time.Second, 20*time.Millisecond)
	r = b.do("GET", "/api/v1/workers", adminKey, nil)
	wi := r.body["workers"].([]any)[0].(map[string]any)
	require.Equal(t, "http-test-worker", wi["worker_id"])
	require.EqualValues(t, 4, wi["concurrency"])
	require.ElementsMatch(t, []any{"noop", "sleep"}, wi["task_types"])
	started, err := time.Parse(time.RFC3339Nano, wi["started_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), started, time.Minute, "started_at is when the worker started, not zero")
	require.NotEmpty(t, wi["host"])
	h := b.do("GET", "/health", "", nil)
	require.Equal(t, http.StatusOK, h.code, string(h.raw))
}
