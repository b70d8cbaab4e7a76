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

// TestWorkerPartitionedFromRedis: one of two workers loses its link to
// Redis (no reset, packets just stop) for three leases while both run
// tasks; the other goes on. The reaper hands the cut worker's attempts to
// the other; when the link heals, the cut worker's completions of them are
// refused by their fencing tokens. Every task is COMPLETED once and its
// history shows the reaps.
func TestWorkerPartitionedFromRedis(t *testing.T) {
	t.Parallel()
	const n, lease = 300, 400 * time.Millisecond
	srv := testredis.StartServer(t)
	ctx := context.Background()
	open := func(url string) *store.Store {
		rdb, err := redisconn.Open(ctx, url, redisconn.Options{NoPing: true})
		require.NoError(t, err)
		t.Cleanup(func() { _ = rdb.Close() })
		st, err := store.New(rdb, store.Config{Namespace: "partition"})
		require.NoError(t, err)
		return st
	}
	direct := open(srv.URL())
	link := testredis.NewProxy(t, srv.Addr)
	behind := open(link.URL())

	var runs runCounter
	mux := NewMux()
	mux.HandleFunc("p", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		runs.add(tk.ID)
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.RawMessage(`1`), nil
	})
	reqs := make([]store.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = store.EnqueueRequest{ID: fmt.Sprintf("p%04d", i), Type: "p"}
	}
	_, err := direct.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)

	sched, err := maintenance.New(direct, maintenance.Config{Interval: 50 * time.Millisecond})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = sched.Run(runCtx) })
	var workers []*Worker
	for _, st := range []*store.Store{direct, behind} {
		w, err := New(st, mux, Config{Concurrency: 8, Lease: lease, HeartbeatInterval: 100 * time.Millisecond})
		require.NoError(t, err)
		workers = append(workers, w)
		wg.Go(func() { _ = w.Run(runCtx) })
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	// both working, then the second one is cut off for three leases
	require.Eventually(t, func() bool { return workers[1].Stats().Started >= 16 }, 10*time.Second, 5*time.Millisecond)
	link.Cut(true)
	cutAt, doneAtCut := time.Now(), workers[0].Stats().Completed
	time.Sleep(3 * lease)
	progressed := workers[0].Stats().Completed - doneAtCut
	link.Cut(false)
	healed := time.Since(cutAt)

	require.Eventually(t, func() bool {
		qs, err := direct.QueueStatus(ctx)
		return err == nil && qs.States[task.StateCompleted] == n
	}, 60*time.Second, 20*time.Millisecond, "every task completes")
	require.Positive(t, progressed, "the worker that kept its link went on while the other was cut off")

	ids := make([]string, n)
	for i := range ids {
		ids[i] = reqs[i].ID
	}
	tasks, err := direct.GetMany(ctx, ids)
	require.NoError(t, err)
	f := completedOnce(t, tasks, &runs)
	require.Positive(t, f.reapedTasks, "the cut worker's attempts were reaped")
	// no completion counted twice; fewer than n when the link was cut
	// between a completion's write and its answer: the worker tries again
	// after the heal, finds its task COMPLETED already and counts it lost
	// (the tasks' own states above say each was completed once)
	require.LessOrEqual(t, workers[0].Stats().Completed+workers[1].Stats().Completed, int64(n), "each completion acknowledged once")
	t.Logf("partition of one worker for %s (lease %s): the other completed %d meanwhile; %d tasks, each COMPLETED once; %d reaped, %d run more than once, %d stale completions refused by fencing",
		healed.Round(10*time.Millisecond), lease, progressed, n, f.reapedTasks, f.ranAgain, workers[1].Stats().LeaseLost)
}
