package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/maintenance"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/task"
)

// TestChaos submits 10,000 tasks whose handlers fail at random (transient
// and permanent) while workers are stopped gracefully or crash and are
// replaced, and checks that the counts add up exactly: every task ends
// COMPLETED or DLQ, none is lost, none is completed twice.
func TestChaos(t *testing.T) {
	t.Parallel()
	const n = 10_000
	b := setup(t)
	ctx := context.Background()

	mux := NewMux()
	mux.HandleFunc("chaos", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		switch r := rand.Float64(); {
		case r < 0.04:
			return nil, &retry.StatusError{Code: 400, Err: errors.New("chaos: bad input")}
		case r < 0.20:
			return nil, &retry.StatusError{Code: 503, Err: errors.New("chaos: unavailable")}
		case r < 0.25:
			return nil, fmt.Errorf("chaos: %w", context.DeadlineExceeded)
		}
		return json.RawMessage(`1`), nil
	})

	reqs := make([]store.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = store.EnqueueRequest{ID: fmt.Sprintf("c%05d", i), Type: "chaos"}
	}
	_, err := b.st.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)

	sched, err := maintenance.New(b.st, maintenance.Config{Interval: 20 * time.Millisecond})
	require.NoError(t, err)
	sctx, stopSched := context.WithCancel(ctx)
	schedDone := make(chan error, 1)
	go func() { schedDone <- sched.Run(sctx) }()

	type live struct {
		w    *Worker
		stop context.CancelFunc
		done chan error
	}
	var mu sync.Mutex
	var all []*Worker
	startWorker := func() *live {
		w, err := New(b.st, mux, Config{Concurrency: 16, Prefetch: rand.IntN(2) * 16, Lease: 400 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond,
			ShutdownGrace: 100 * time.Millisecond, Retry: retry.Policy{Scale: 0.001}})
		require.NoError(t, err)
		wctx, cancel := context.WithCancel(ctx)
		l := &live{w: w, stop: cancel, done: make(chan error, 1)}
		go func() { l.done <- w.Run(wctx) }()
		mu.Lock()
		all = append(all, w)
		mu.Unlock()
		return l
	}
	workers := []*live{startWorker(), startWorker(), startWorker()}
	restarts, crashes := 0, 0
	deadline := time.Now().Add(3 * time.Minute)
	for {
		qs, err := b.st.QueueStatus(ctx)
		require.NoError(t, err)
		if qs.States[task.StateCompleted]+qs.States[task.StateDLQ] == n {
			break
		}
		require.True(t, time.Now().Before(deadline), "chaos did not settle: %+v", qs)
		time.Sleep(50 * time.Millisecond) // pace the restarts
		i := rand.IntN(len(workers))
		if crashes == 0 || rand.IntN(2) == 0 { // the first restart is a crash
			workers[i].w.crash()
			crashes++
		}
		workers[i].stop()
		require.NoError(t, <-workers[i].done)
		workers[i] = startWorker()
		restarts++
	}
	for _, l := range workers {
		l.stop()
		require.NoError(t, <-l.done)
	}
	stopSched()
	require.NoError(t, <-schedDone)

	qs, err := b.st.QueueStatus(ctx)
	require.NoError(t, err)
	completed, dlq := qs.States[task.StateCompleted], qs.States[task.StateDLQ]
	require.Equal(t, int64(n), completed+dlq, "completed + DLQ = submitted")
	require.Equal(t, dlq, qs.DLQ, "DLQ list matches the DLQ count")
	require.Zero(t, qs.Primary+qs.Retry+qs.Scheduled, "queues empty")
	for _, st := range []task.State{task.StatePending, task.StateActive, task.StateFailed, task.StateTimeout, task.StateCancelled} {
		require.Zero(t, qs.States[st], st)
	}
	var acked int64
	for _, w := range all {
		acked += w.Stats().Completed
	}
	require.Equal(t, completed, acked, "each completion acknowledged exactly once")

	ids := make([]string, n)
	for i := range ids {
		ids[i] = reqs[i].ID
	}
	tasks, err := b.st.GetMany(ctx, ids)
	require.NoError(t, err)
	require.Len(t, tasks, n, "no task lost")
	var seenCompleted, seenDLQ, reaped int64
	for _, tk := range tasks {
		done := 0
		prev := task.State("")
		for _, c := range tk.StateHistory {
			if c.To == task.StateCompleted {
				done++
			}
			if c.From == task.StateActive && c.To == task.StatePending && c.Cause == "lease_expired" {
				reaped++
			}
			// the history is a path through task.CanTransition's graph
			require.Equal(t, prev, c.From, "task %s history is not continuous", tk.ID)
			if c.From != "" {
				require.True(t, task.CanTransition(c.From, c.To), "task %s: %s → %s not allowed", tk.ID, c.From, c.To)
			}
			prev = c.To
		}
		switch tk.State {
		case task.StateCompleted:
			seenCompleted++
			require.Equal(t, 1, done, "task %s completed %d times", tk.ID, done)
		case task.StateDLQ:
			seenDLQ++
			require.Zero(t, done)
			require.NotEmpty(t, tk.ErrorHistory)
		default:
			t.Fatalf("task %s ended %s", tk.ID, tk.State)
		}
	}
	require.Equal(t, completed, seenCompleted)
	require.Equal(t, dlq, seenDLQ)
	require.Greater(t, dlq, int64(0), "the chaos produced dead letters")
	// the recovery path ran: workers crashed holding tasks, and the
	// scheduler's reaper handed those tasks back when their leases expired
	require.Positive(t, restarts)
	require.Positive(t, crashes)
	require.Positive(t, reaped, "no task was reaped after a crash")
	t.Logf("chaos: %d completed, %d DLQ, %d restarts (%d crashes), %d attempts reaped", completed, dlq, restarts, crashes, reaped)
}
