package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/notify"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/task"
)

// TestManyMoreExternalTasksThanWorkerSlots: 500 external tasks through a
// worker with 4 slots. The dispatcher hands each attempt off, so the
// service holds far more than 4 at once (the gate opens only when 100 run
// concurrently), and every task completes exactly once.
func TestManyMoreExternalTasksThanWorkerSlots(t *testing.T) {
	t.Parallel()
	const n, together = 500, 100
	var running, maxRunning, completions atomic.Int64
	gate := make(chan struct{})
	var openOnce sync.Once
	h := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		cur := running.Add(1)
		defer running.Add(-1)
		for {
			m := maxRunning.Load()
			if cur <= m || maxRunning.CompareAndSwap(m, cur) {
				break
			}
		}
		if cur >= together {
			openOnce.Do(func() { close(gate) })
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		completions.Add(1)
		return json.RawMessage(`{"ok":true}`), nil
	}
	// in-flight bound above the gate's 100 (the default, 64, would keep
	// the gate shut: that bound is TestInFlightBound…'s subject)
	b := setup(t, options{workerConc: 4, skipArchive: true, svcCfg: extsvc.Config{Concurrency: 200},
		dispCfg: DispatcherConfig{InFlight: together + 50}, handlers: map[string]extsvc.HandlerFunc{"many.run": h}})
	ctx := context.Background()
	reqs := make([]store.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = store.EnqueueRequest{Type: "many.run", Timeout: time.Minute, Params: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	tks, err := b.st.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)
	for _, tk := range tks {
		done := b.waitState(t, tk.ID, task.StateCompleted)
		require.Contains(t, done.Worker, "external:many.run", "the task was handed off")
	}
	require.GreaterOrEqual(t, maxRunning.Load(), int64(together), "more attempts in the service at once than worker slots")
	qs, err := b.st.QueueStatus(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(n), qs.States[task.StateCompleted])
	require.Zero(t, qs.States[task.StateActive])
	require.Equal(t, int64(n), completions.Load(), "each task ran once")
}

// TestDeadServiceFailsOverdueTask: no live service serves the type. The
// attempt times out (TIMEOUT, session told), a liveness check finds no
// service, the watcher fails it on the service's behalf (retryable), the
// retry times out the same way, and with the retries spent the task is
// dead-lettered.
func TestDeadServiceFailsOverdueTask(t *testing.T) {
	t.Parallel()
	b := setup(t, options{noService: true, maxRetries: 1, skipArchive: true, extraTypes: []string{"orphan.run"},
		orchCfg: Config{ServiceGrace: 100 * time.Millisecond}})
	tk := b.enqueue(t, "orphan.run", "s1", `{}`, time.Second)
	done := b.waitState(t, tk.ID, task.StateDLQ)
	require.Equal(t, "SERVICE_UNAVAILABLE", done.ErrorType)
	require.Equal(t, 2, len(done.ErrorHistory), "first attempt and its retry")
	var timeouts int
	for _, h := range done.StateHistory {
		if h.To == task.StateTimeout {
			timeouts++
		}
	}
	require.Equal(t, 2, timeouts, "each attempt timed out before it was failed")
	ns := b.waitNotes(t, "s1", 3)
	require.Equal(t, notify.KindTimeout, ns[0].Type)
	require.Equal(t, notify.KindFailed, ns[len(ns)-1].Type)
}

// TestHandedOffTaskReapedWithoutOrchestrator: with no orchestrator the
// handed-off lease (timeout + grace) expires and the reaper requeues the
// task without spending a retry; it is dispatched again with a new token.
func TestHandedOffTaskReapedWithoutOrchestrator(t *testing.T) {
	t.Parallel()
	b := setup(t, options{noService: true, noOrch: true, skipArchive: true, extraTypes: []string{"lost.run"},
		dispCfg: DispatcherConfig{Grace: 50 * time.Millisecond}})
	tk := b.enqueue(t, "lost.run", "s1", `{}`, 200*time.Millisecond)
	deadline := time.Now().Add(20 * time.Second)
	for {
		cur, err := b.st.Get(context.Background(), tk.ID)
		require.NoError(t, err)
		var reaped int
		for _, h := range cur.StateHistory {
			if h.Cause == "lease_expired" {
				reaped++
			}
		}
		if reaped >= 1 && cur.State == task.StateActive && cur.HandedOff {
			require.Zero(t, cur.RetryCount, "a requeue spends no retry")
			break
		}
		require.True(t, time.Now().Before(deadline), "never reaped and dispatched again (state %s)", cur.State)
		time.Sleep(10 * time.Millisecond)
	}
	xs, err := b.rdb.XLen(context.Background(), b.sk.Create()).Result()
	require.NoError(t, err)
	require.GreaterOrEqual(t, xs, int64(2), "dispatched again")
}

// TestNoLiveServiceRequeuesBeforeTimeout: a dispatched task whose type no
// live service serves is requeued at the first liveness check (long
// before its timeout) without spending a retry, and dispatched again until
// a service appears and completes it.
func TestNoLiveServiceRequeuesBeforeTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, options{noService: true, skipArchive: true, extraTypes: []string{"late.run"},
		dispCfg: DispatcherConfig{Grace: 100 * time.Millisecond}, orchCfg: Config{ServiceGrace: 100 * time.Millisecond}})
	tk := b.enqueue(t, "late.run", "s1", `{"word":"x"}`, time.Hour)
	deadline := time.Now().Add(20 * time.Second)
	for {
		cur, err := b.st.Get(context.Background(), tk.ID)
		require.NoError(t, err)
		n := 0
		for _, h := range cur.StateHistory {
			if h.Cause == "service_unavailable late.run" {
				n++
			}
		}
		if n >= 2 {
			require.Zero(t, cur.RetryCount, "waiting for a service spends no retry")
			require.Empty(t, cur.ErrorHistory)
			break
		}
		require.True(t, time.Now().Before(deadline), "never requeued twice (state %s)", cur.State)
		time.Sleep(10 * time.Millisecond)
	}
	b.startService(t, extsvc.Config{Name: "late", HeartbeatInterval: 20 * time.Millisecond},
		map[string]extsvc.HandlerFunc{"late.run": echo})
	done := b.waitState(t, tk.ID, task.StateCompleted)
	require.Zero(t, done.RetryCount)
	require.Contains(t, string(done.Result), "echo x")
}
