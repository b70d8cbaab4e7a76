package main

import (
	"context"
	"encoding/json"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/engine/cron"
	"github.com/taskflow/taskflow/internal/engine/depend"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// startCommands runs taskflow commands on env until the test ends.
func startCommands(t *testing.T, env map[string]string, cmds ...[]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, len(cmds))
	for _, args := range cmds {
		go func() { done <- testMain(env, io.Discard).Run(ctx, args) }()
	}
	t.Cleanup(func() {
		cancel()
		for range cmds {
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Error("a command did not stop")
			}
		}
	})
}

// TestOrchestratorHonoursTheEngineSettings: `taskflow orchestrator` builds
// its store from the same configuration as the workers. It used to build
// one from the namespace alone, so with MAX_TASK_AGE=0 it still
// dead-lettered a failing external task older than the default hour, and
// the tasks cron fired took max_retries 3 whatever MAX_RETRIES said.
func TestOrchestratorHonoursTheEngineSettings(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns,
		"MAX_TASK_AGE": "0", "MAX_RETRIES": "7", "TASKFLOW_EXTERNAL_TYPES": "age.test",
		"TASKFLOW_EXTERNAL_BACKOFF_INITIAL": "0.01", "TASKFLOW_EXTERNAL_BACKOFF_MAX": "0.05"}
	startCommands(t, env, []string{"worker", "--concurrency", "2"}, []string{"orchestrator"})

	// a service that fails the first attempt (transient) and then succeeds
	var calls atomic.Int32
	svc, err := extsvc.New(rdb, extsvc.Config{Name: "age-test", Namespace: ns, Block: 50 * time.Millisecond})
	require.NoError(t, err)
	svc.Handle("age.test", extsvc.HandlerFunc(func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			return nil, extsvc.Fail("UPSTREAM", "try again", true)
		}
		return json.RawMessage(`{"ok":true}`), nil
	}))
	sctx, stop := context.WithCancel(context.Background())
	sdone := make(chan error, 1)
	go func() { sdone <- svc.Run(sctx) }()
	t.Cleanup(func() { stop(); <-sdone })

	cfg, err := app.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	sc := cfg.Engine.Store
	sc.Namespace = ns
	st, err := store.New(rdb, sc)
	require.NoError(t, err)
	ctx := context.Background()

	// two hours old when it fails (its creation time is moved back at
	// once; the failure comes after a dispatch and a service round trip):
	// MAX_TASK_AGE=0 means no age limit
	tk, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "age.test"})
	require.NoError(t, err)
	old := time.Now().Add(-2 * time.Hour).UnixMilli()
	require.NoError(t, rdb.HSet(ctx, "{"+ns+"}:task:"+tk.ID, "created_at", old).Err())
	var got *task.Task
	require.Eventually(t, func() bool {
		got, err = st.Get(ctx, tk.ID)
		return err == nil && (got.State == task.StateCompleted || got.State == task.StateDLQ)
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, task.StateCompleted, got.State, "retried, not dead-lettered as too old: %+v", got.ErrorHistory)
	require.Equal(t, 1, got.RetryCount)

	// a task released by the orchestrator when its dependency completes
	// takes MAX_RETRIES
	first, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "noop", RunAt: time.Now().Add(500 * time.Millisecond)})
	require.NoError(t, err)
	after, err := depend.New(st, depend.Config{}).Submit(ctx, store.EnqueueRequest{Type: "noop"}, []string{first.ID})
	require.NoError(t, err)
	var released *task.Task
	require.Eventually(t, func() bool {
		released, err = st.Get(ctx, after)
		return err == nil && released.State == task.StateCompleted
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, 7, released.MaxRetries, "the orchestrator's release reads MAX_RETRIES")

	// a cron firing by the orchestrator takes MAX_RETRIES
	require.NoError(t, cron.New(st, cron.Config{}).Put(ctx, cron.Schedule{ID: "every-second", Expr: "@every 1s", TaskType: "noop"}))
	var fired *task.Task
	require.Eventually(t, func() bool {
		ids, err := rdb.ZRange(ctx, "{"+ns+"}:tasks:state:COMPLETED", 0, -1).Result()
		if err != nil {
			return false
		}
		for _, id := range ids {
			if f, err := st.Get(ctx, id); err == nil && f.Type == "noop" && id != first.ID && id != after {
				fired = f
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, 7, fired.MaxRetries, "the orchestrator's store reads MAX_RETRIES")
}

// One process builds one store: `taskflow dev` used to build four, with two
// configurations.
func TestAppBuildsOneStore(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_SESSION_TTL": "7200"}
	cfg, err := app.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	a, err := app.Open(context.Background(), cfg, nil)
	require.NoError(t, err)
	defer a.Close()
	require.Equal(t, 1, a.Stores)
	// one session TTL, read once ("seconds or a duration"), for the
	// sessions and their task indexes alike
	require.Equal(t, 2*time.Hour, a.Config.SessionTTL)
	require.Equal(t, 2*time.Hour, a.Store.Config().SessionIndexTTL)
	env["TASKFLOW_SESSION_TTL"] = "2h"
	cfg, err = app.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, 2*time.Hour, cfg.SessionTTL)
	env["TASKFLOW_SESSION_TTL"] = "soon"
	_, err = app.Load(func(k string) string { return env[k] })
	require.ErrorContains(t, err, `TASKFLOW_SESSION_TTL: "soon" is not seconds (30, 0.5) or a duration (90s, 1h)`)
}
