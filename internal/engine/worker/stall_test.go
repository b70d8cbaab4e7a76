package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/maintenance"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestRedisStallLongerThanLease: Redis stops answering (SIGSTOP) for three
// leases while two workers run tasks, then goes on. Every lease has
// expired by then, so the reaper hands tasks whose handlers are still
// running to the other worker: a task may run twice (at least once), but
// the stale holder's completion is refused by its fencing token, so each
// task is COMPLETED once, its history shows the reap, and every task
// completes.
func TestRedisStallLongerThanLease(t *testing.T) {
	t.Parallel()
	const n, lease = 200, 400 * time.Millisecond
	srv := testredis.StartServer(t)
	ctx := context.Background()
	rdb, err := redisconn.Open(ctx, srv.URL(), redisconn.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	st, err := store.New(rdb, store.Config{Namespace: "stall"})
	require.NoError(t, err)

	var runs runCounter
	mux := NewMux()
	mux.HandleFunc("slow", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		runs.add(tk.ID)
		select { // longer than a lease: some are running when Redis stalls
		case <-time.After(150 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.RawMessage(`1`), nil
	})
	reqs := make([]store.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = store.EnqueueRequest{ID: fmt.Sprintf("s%04d", i), Type: "slow"}
	}
	_, err = st.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)

	sched, err := maintenance.New(st, maintenance.Config{Interval: 50 * time.Millisecond})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = sched.Run(runCtx) })
	var workers []*Worker
	for range 2 {
		w, err := New(st, mux, Config{Concurrency: 8, Lease: lease, HeartbeatInterval: 100 * time.Millisecond})
		require.NoError(t, err)
		workers = append(workers, w)
		wg.Go(func() { _ = w.Run(runCtx) })
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	// let some complete, then stall Redis for three leases
	require.Eventually(t, func() bool {
		qs, err := st.QueueStatus(ctx)
		return err == nil && qs.States[task.StateCompleted] >= 20
	}, 10*time.Second, 10*time.Millisecond)
	srv.Pause()
	time.Sleep(3 * lease)
	srv.Resume()

	require.Eventually(t, func() bool {
		qs, err := st.QueueStatus(ctx)
		return err == nil && qs.States[task.StateCompleted] == n
	}, 60*time.Second, 20*time.Millisecond, "every task completes after the stall")

	ids := make([]string, n)
	for i := range ids {
		ids[i] = reqs[i].ID
	}
	tasks, err := st.GetMany(ctx, ids)
	require.NoError(t, err)
	require.Len(t, tasks, n)
	f := completedOnce(t, tasks, &runs)
	var lost, completed int64
	for _, w := range workers {
		lost += w.Stats().LeaseLost
		completed += w.Stats().Completed
	}
	require.Equal(t, int64(n), completed, "each completion acknowledged once")
	t.Logf("stall of %s (lease %s): %d tasks, each COMPLETED once; %d reaps of %d tasks in the histories, %d tasks run more than once, %d stale completions refused by fencing",
		3*lease, lease, n, f.reaps, f.reapedTasks, f.ranAgain, lost)
}
