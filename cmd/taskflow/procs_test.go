package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestSchedulerAndWorkerCommands: the production processes as separate
// commands on one Redis. `taskflow worker --concurrency 3 --scheduler=false`
// shows concurrency 3 in GET /api/v1/workers and runs tasks, but neither
// promotes a due retry nor reaps an expired lease; `taskflow scheduler`,
// started next to it, does both: the failed task is retried (and, failing
// again, dead-lettered) and the task of a worker that died is returned to
// its queue and completed.
func TestSchedulerAndWorkerCommands(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	const admin = "procs-admin-key-0123456789abcdef"
	env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin,
		"TASKFLOW_RETRY_SCALE": "0.001", "TASKFLOW_SCHEDULER_INTERVAL": "20ms"}
	type proc struct {
		cancel context.CancelFunc
		done   chan error
	}
	var procs []proc
	start := func(args ...string) {
		ctx, cancel := context.WithCancel(context.Background())
		p := proc{cancel, make(chan error, 1)}
		go func() { p.done <- testMain(env, io.Discard).Run(ctx, args) }()
		procs = append(procs, p)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.cancel()
		}
		for _, p := range procs {
			select {
			case err := <-p.done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Error("a command did not stop")
			}
		}
	})
	ctx := context.Background()
	cfg, err := app.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	st, err := store.New(rdb, cfg.Engine.Store) // the namespace: TASKFLOW_NAMESPACE
	require.NoError(t, err)
	state := func(id string) task.State {
		tk, err := st.Get(ctx, id)
		require.NoError(t, err)
		return tk.State
	}

	// A task whose worker died: taken with a 50 ms lease, never finished.
	orphan, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "noop"})
	require.NoError(t, err)
	held, err := st.Fetch(ctx, store.FetchRequest{N: 1, WorkerID: "dead-worker", TokenPrefix: "dead", Lease: 50 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, held, 1)
	// A task that fails transiently once and may retry once.
	one := 1
	failing, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "sleep", Params: json.RawMessage(`{"fail":"transient"}`), MaxRetries: &one})
	require.NoError(t, err)

	apiAddr := freeAddr(t)
	start("api", "--addr", apiAddr)
	start("worker", "--concurrency", "3", "--scheduler=false", "--id", "procs-worker")
	var workers struct {
		Workers []struct {
			ID          string `json:"worker_id"`
			Concurrency int    `json:"concurrency"`
		} `json:"workers"`
	}
	require.Eventually(t, func() bool {
		req, err := http.NewRequest("GET", "http://"+apiAddr+"/api/v1/workers", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+admin)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&workers) == nil && len(workers.Workers) == 1
	}, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, "procs-worker", workers.Workers[0].ID)
	require.Equal(t, 3, workers.Workers[0].Concurrency, "--concurrency 3 took effect")

	// The worker runs the failing task once; its retry is due within
	// milliseconds (TASKFLOW_RETRY_SCALE) but nothing promotes it, and the
	// expired lease is not reaped: both stay as they are. (Asserting that
	// nothing happens needs a wait: 20 scheduler intervals.)
	require.Eventually(t, func() bool { return state(failing.ID) == task.StateFailed }, 20*time.Second, 10*time.Millisecond)
	require.Never(t, func() bool {
		return state(failing.ID) != task.StateFailed || state(orphan.ID) != task.StateActive
	}, 400*time.Millisecond, 20*time.Millisecond, "a worker with --scheduler=false promoted or reaped")

	start("scheduler")
	require.Eventually(t, func() bool { return state(failing.ID) == task.StateDLQ }, 20*time.Second, 10*time.Millisecond,
		"the scheduler promoted the due retry; the worker ran it and it failed for good")
	tk, err := st.Get(ctx, failing.ID)
	require.NoError(t, err)
	require.Equal(t, 1, tk.RetryCount)
	require.Eventually(t, func() bool { return state(orphan.ID) == task.StateCompleted }, 20*time.Second, 10*time.Millisecond,
		"the scheduler reaped the expired lease; the worker completed the task")
}
