package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/maintenance"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// The SIGKILL test re-runs this test binary as a worker process (TestMain
// sees childEnv) and kills it while it holds a task.
const (
	childEnv   = "TASKFLOW_WORKER_CHILD"
	childNSEnv = "TASKFLOW_WORKER_CHILD_NS"
)

func runsKey(ns string) string { return "{" + ns + "}:test:runs" }

// runChild is the worker process: its handler counts the run and blocks.
func runChild() int {
	ns := os.Getenv(childNSEnv)
	rdb, err := testredis.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	st, err := store.New(rdb, store.Config{Namespace: ns})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	mux := NewMux()
	mux.HandleFunc("crashy", func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		rdb.HIncrBy(ctx, runsKey(ns), t.ID, 1)
		<-ctx.Done() // hold the task until the process is killed
		return nil, ctx.Err()
	})
	w, err := New(st, mux, Config{ID: "child", Concurrency: 1, Lease: time.Second, HeartbeatInterval: 200 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_ = w.Run(context.Background()) // runs until SIGKILL
	return 0
}

func TestSIGKILLedWorkerTaskRecoveredOnce(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	ctx := context.Background()
	tk, err := st.Enqueue(ctx, store.EnqueueRequest{ID: "precious", Type: "crashy"})
	require.NoError(t, err)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", childNSEnv+"="+ns)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
	})

	// wait until the child runs the task
	require.Eventually(t, func() bool {
		n, _ := rdb.HGet(ctx, runsKey(ns), tk.ID).Int()
		return n == 1
	}, 20*time.Second, 10*time.Millisecond, "the child never started the task")
	got, err := st.Get(ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateActive, got.State)
	require.Equal(t, "child", got.Worker)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_, _ = cmd.Process.Wait()
	killed = true

	// a scheduler reaps the expired lease; a new worker completes the task
	sched, err := maintenance.New(st, maintenance.Config{Interval: 100 * time.Millisecond})
	require.NoError(t, err)
	sctx, stopSched := context.WithCancel(ctx)
	schedDone := make(chan error, 1)
	go func() { schedDone <- sched.Run(sctx) }()
	defer func() { stopSched(); require.NoError(t, <-schedDone) }()

	mux := NewMux()
	mux.HandleFunc("crashy", func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		rdb.HIncrBy(ctx, runsKey(ns), t.ID, 1)
		return json.RawMessage(`"done"`), nil
	})
	b := &bundle{st: st, rdb: rdb, ctx: ctx}
	b.start(t, mux, Config{ID: "rescuer", Concurrency: 1})
	final := b.waitState(t, tk.ID, task.StateCompleted)
	require.Equal(t, "rescuer", final.Worker)
	require.JSONEq(t, `"done"`, string(final.Result))

	runs, err := rdb.HGet(ctx, runsKey(ns), tk.ID).Int()
	require.NoError(t, err)
	require.Equal(t, 2, runs, "ran once in the killed worker, once in the rescuer")
	var completed, reaped int
	for _, c := range final.StateHistory {
		if c.To == task.StateCompleted {
			completed++
		}
		if c.From == task.StateActive && c.To == task.StatePending && c.Cause == "lease_expired" {
			reaped++
		}
	}
	require.Equal(t, 1, completed, "completed exactly once")
	require.Equal(t, 1, reaped)
	require.Zero(t, final.RetryCount, "a crash spends no retry")
	qs, err := st.QueueStatus(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), qs.States[task.StateCompleted])
	require.Zero(t, qs.States[task.StateActive]+qs.States[task.StatePending])
}
