package handoff_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/handoff"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
	"github.com/taskflow/taskflow/task"
)

// TestDeadServiceFailsOverdueTask: no live service serves the type. The
// attempt times out (TIMEOUT, session told), a liveness check finds no
// service, the watcher fails it on the service's behalf (retryable), the
// retry times out the same way, and with the retries spent the task is
// dead-lettered.
func TestDeadServiceFailsOverdueTask(t *testing.T) {
	t.Parallel()
	b := externaltest.Setup(t, externaltest.Options{NoService: true, MaxRetries: 1, SkipArchive: true, ExtraTypes: []string{"orphan.run"},
		Handoff: handoff.Config{ServiceGrace: 100 * time.Millisecond}})
	tk := b.Enqueue(t, "orphan.run", "s1", `{}`, time.Second)
	done := b.WaitState(t, tk.ID, task.StateDLQ)
	require.Equal(t, "SERVICE_UNAVAILABLE", done.ErrorType)
	require.Equal(t, 2, len(done.ErrorHistory), "first attempt and its retry")
	var timeouts int
	for _, h := range done.StateHistory {
		if h.To == task.StateTimeout {
			timeouts++
		}
	}
	require.Equal(t, 2, timeouts, "each attempt timed out before it was failed")
	ns := b.WaitNotes(t, "s1", 3)
	require.Equal(t, notify.KindTimeout, ns[0].Type)
	require.Equal(t, notify.KindFailed, ns[len(ns)-1].Type)
}

// TestHandedOffTaskReapedWithoutOrchestrator: with no orchestrator the
// handed-off lease (timeout + grace) expires and the reaper requeues the
// task without spending a retry; it is dispatched again with a new token.
func TestHandedOffTaskReapedWithoutOrchestrator(t *testing.T) {
	t.Parallel()
	b := externaltest.Setup(t, externaltest.Options{NoService: true, NoOrchestrator: true, SkipArchive: true, ExtraTypes: []string{"lost.run"},
		Dispatch: dispatch.Config{Grace: 50 * time.Millisecond}})
	tk := b.Enqueue(t, "lost.run", "s1", `{}`, 200*time.Millisecond)
	var cur *task.Task
	testwait.Until(t, 20*time.Second, 10*time.Millisecond, func() bool {
		var err error
		cur, err = b.Store.Get(context.Background(), tk.ID)
		require.NoError(t, err)
		var reaped int
		for _, h := range cur.StateHistory {
			if h.Cause == "lease_expired" {
				reaped++
			}
		}
		return reaped >= 1 && cur.State == task.StateActive && cur.HandedOff
	}, func() string { return fmt.Sprintf("never reaped and dispatched again (state %s)", cur.State) })
	require.Zero(t, cur.RetryCount, "a requeue spends no retry")
	xs, err := b.Redis.XLen(context.Background(), b.Streams.Create()).Result()
	require.NoError(t, err)
	require.GreaterOrEqual(t, xs, int64(2), "dispatched again")
}

// TestNoLiveServiceRequeuesBeforeTimeout: a dispatched task whose type no
// live service serves is requeued at the first liveness check (long
// before its timeout) without spending a retry, and dispatched again until
// a service appears and completes it.
func TestNoLiveServiceRequeuesBeforeTimeout(t *testing.T) {
	t.Parallel()
	b := externaltest.Setup(t, externaltest.Options{NoService: true, SkipArchive: true, ExtraTypes: []string{"late.run"},
		Dispatch: dispatch.Config{Grace: 100 * time.Millisecond}, Handoff: handoff.Config{ServiceGrace: 100 * time.Millisecond}})
	tk := b.Enqueue(t, "late.run", "s1", `{"word":"x"}`, time.Hour)
	var cur *task.Task
	testwait.Until(t, 20*time.Second, 10*time.Millisecond, func() bool {
		var err error
		cur, err = b.Store.Get(context.Background(), tk.ID)
		require.NoError(t, err)
		n := 0
		for _, h := range cur.StateHistory {
			if h.Cause == "service_unavailable late.run" {
				n++
			}
		}
		return n >= 2
	}, func() string { return fmt.Sprintf("never requeued twice (state %s)", cur.State) })
	require.Zero(t, cur.RetryCount, "waiting for a service spends no retry")
	require.Empty(t, cur.ErrorHistory)
	b.StartService(t, extsvc.Config{Name: "late", HeartbeatInterval: 20 * time.Millisecond},
		map[string]extsvc.HandlerFunc{"late.run": externaltest.Echo})
	done := b.WaitState(t, tk.ID, task.StateCompleted)
	require.Zero(t, done.RetryCount)
	require.Contains(t, string(done.Result), "echo x")
}
