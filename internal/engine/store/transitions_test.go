package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/task"
)

func requireState(t *testing.T, err error, have task.State) {
	t.Helper()
	var se *task.StateError
	require.ErrorAs(t, err, &se)
	require.Equal(t, have, se.Have)
	require.ErrorIs(t, err, task.ErrWrongState)
}

func TestEnqueueValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	neg := -1
	cases := []struct {
		name  string
		req   EnqueueRequest
		field string
	}{
		{"MissingType", EnqueueRequest{}, "task_type"},
		{"BadID", EnqueueRequest{Type: "x", ID: "has space"}, "task_id"},
		{"BraceID", EnqueueRequest{Type: "x", ID: "a{b}"}, "task_id"},
		{"BadPriority", EnqueueRequest{Type: "x", Priority: "urgent"}, "priority"},
		{"BadParams", EnqueueRequest{Type: "x", Params: json.RawMessage(`{`)}, "params"},
		{"NegativeRetries", EnqueueRequest{Type: "x", MaxRetries: &neg}, "max_retries"},
		{"NegativeTimeout", EnqueueRequest{Type: "x", Timeout: -time.Second}, "timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := b.s.Enqueue(b.ctx, c.req)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, c.field, ve.Field)
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
	_, err := b.s.EnqueueBatch(b.ctx, []EnqueueRequest{{Type: "x"}, {}})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "[1].task_type", ve.Field)
	require.Equal(t, int64(0), b.status(t).States[task.StatePending], "nothing written")
}

func TestDuplicateID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, EnqueueRequest{ID: "job-1"})
	_, err := b.s.Enqueue(b.ctx, EnqueueRequest{ID: "job-1", Type: "noop"})
	require.ErrorIs(t, err, task.ErrDuplicateTaskID)
	// a batch with one existing id writes nothing
	_, err = b.s.EnqueueBatch(b.ctx, []EnqueueRequest{{ID: "job-2", Type: "noop"}, {ID: "job-1", Type: "noop"}})
	require.ErrorIs(t, err, task.ErrDuplicateTaskID)
	require.ErrorContains(t, err, "job-1")
	_, err = b.s.Get(b.ctx, "job-2")
	require.ErrorIs(t, err, task.ErrNotFound)
	_, err = b.s.EnqueueBatch(b.ctx, []EnqueueRequest{{ID: "x", Type: "noop"}, {ID: "x", Type: "noop"}})
	require.ErrorIs(t, err, task.ErrDuplicateTaskID)
	require.Equal(t, int64(1), b.status(t).States[task.StatePending])
}

func TestFIFO(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var want []string
	for i := 0; i < 20; i++ {
		want = append(want, b.enqueue(t, EnqueueRequest{ID: fmt.Sprintf("t%02d", i)}).ID)
	}
	var got []string
	got = append(got, ids(b.fetch(t, 1))...)
	got = append(got, ids(b.fetch(t, 7))...)
	got = append(got, ids(b.fetch(t, 64))...)
	require.Equal(t, want, got)
	require.Empty(t, b.fetch(t, 5))
}

func TestFailRetryThenPromoteFIFO(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.RetryRatio = new(1.0) })
	for i := 0; i < 3; i++ {
		b.enqueue(t, EnqueueRequest{ID: fmt.Sprintf("r%d", i)})
	}
	for _, tk := range b.fetch(t, 3) {
		out, err := b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: task.ErrTypeServiceUnavailable, Message: "503", RetryAt: t0.Add(5 * time.Second), Attempt: 1})
		require.NoError(t, err)
		require.Equal(t, FailOutcome{State: task.StateFailed, Reason: "retry"}, out)
	}
	got, err := b.s.Get(b.ctx, "r0")
	require.NoError(t, err)
	require.Equal(t, task.StateFailed, got.State)
	require.Equal(t, 1, got.RetryCount)
	require.Equal(t, task.ErrTypeServiceUnavailable, got.ErrorType)
	require.Equal(t, t0.Add(5*time.Second), *got.RetryAfter)
	require.Len(t, got.ErrorHistory, 1)
	require.Equal(t, "503", got.ErrorHistory[0].Message)
	require.Equal(t, int64(3), b.status(t).Scheduled)

	// not due yet: nothing moves
	n, err := b.s.PromoteDue(b.ctx, 100)
	require.NoError(t, err)
	require.Zero(t, n)
	b.clk.Advance(5 * time.Second)
	n, err = b.s.PromoteDue(b.ctx, 2)
	require.NoError(t, err)
	require.Equal(t, 2, n, "bounded batch")
	n, err = b.s.PromoteDue(b.ctx, 2)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	qs := b.status(t)
	require.Equal(t, int64(3), qs.Retry)
	require.Equal(t, int64(3), qs.States[task.StatePending])
	require.Equal(t, int64(0), qs.States[task.StateFailed])
	require.Equal(t, []string{"r0", "r1", "r2"}, ids(b.fetch(t, 3)), "retry queue is FIFO")
}

func TestDLQRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t.Run("Permanent", func(t *testing.T) {
		b.enqueue(t, EnqueueRequest{ID: "perm"})
		tk := b.fetchOne(t)
		out, err := b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: task.ErrTypeInvalidInput, Message: "400", Permanent: true, Attempt: 1})
		require.NoError(t, err)
		require.Equal(t, FailOutcome{State: task.StateDLQ, Reason: "permanent"}, out)
	})
	t.Run("MaxRetries", func(t *testing.T) {
		zero := 1
		b.enqueue(t, EnqueueRequest{ID: "maxr", MaxRetries: &zero})
		tk := b.fetchOne(t)
		out, err := b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: "Default", Message: "e1", Attempt: 1})
		require.NoError(t, err)
		require.Equal(t, task.StateFailed, out.State)
		_, err = b.s.PromoteDue(b.ctx, 10)
		require.NoError(t, err)
		tk = b.fetchOne(t)
		require.Equal(t, 1, tk.RetryCount)
		out, err = b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: "Default", Message: "e2", Attempt: 2})
		require.NoError(t, err)
		require.Equal(t, FailOutcome{State: task.StateDLQ, Reason: "max_retries"}, out)
		got, err := b.s.Get(b.ctx, "maxr")
		require.NoError(t, err)
		require.Len(t, got.ErrorHistory, 2)
	})
	t.Run("AgeAtFailure", func(t *testing.T) {
		b.enqueue(t, EnqueueRequest{ID: "old1"})
		tk := b.fetchOne(t)
		b.clk.Advance(time.Hour)
		out, err := b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: "Default", Message: "late", Attempt: 1})
		require.NoError(t, err)
		require.Equal(t, FailOutcome{State: task.StateDLQ, Reason: "max_age"}, out)
	})
	t.Run("AgeAtPickup", func(t *testing.T) {
		b.enqueue(t, EnqueueRequest{ID: "old2"})
		b.clk.Advance(time.Hour)
		require.Empty(t, b.fetch(t, 1))
		got, err := b.s.Get(b.ctx, "old2")
		require.NoError(t, err)
		require.Equal(t, task.StateDLQ, got.State)
		require.Equal(t, task.ErrTypeTaskTooOld, got.ErrorType)
		require.Len(t, got.ErrorHistory, 1)
	})
	t.Run("AgeWhenRetryDue", func(t *testing.T) {
		b.enqueue(t, EnqueueRequest{ID: "old3"})
		tk := b.fetchOne(t)
		_, err := b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: "Default", Message: "x", RetryAt: b.clk.Now().Add(2 * time.Hour), Attempt: 1})
		require.NoError(t, err)
		b.clk.Advance(2 * time.Hour)
		_, err = b.s.PromoteDue(b.ctx, 10)
		require.NoError(t, err)
		require.Equal(t, task.StateDLQ, b.state(t, "old3"))
	})
	t.Run("AgeSweep", func(t *testing.T) {
		b.enqueue(t, EnqueueRequest{ID: "old4"})
		b.clk.Advance(time.Hour)
		n, err := b.s.SweepAged(b.ctx, 100)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, task.StateDLQ, b.state(t, "old4"))
	})
	entries, total, err := b.s.ListDLQ(b.ctx, ListOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(6), total)
	require.Equal(t, "old4", entries[0].Task.ID, "newest first")
	byID := map[string]DLQEntry{}
	for _, e := range entries {
		byID[e.Task.ID] = e
	}
	require.Equal(t, "FAILED", byID["perm"].Snapshot["from_state"])
	require.Equal(t, "InvalidInput", byID["perm"].Snapshot["error_type"])
	require.Equal(t, "PENDING", byID["old2"].Snapshot["from_state"])
	qs := b.status(t)
	require.Equal(t, int64(6), qs.DLQ)
	require.Equal(t, int64(6), qs.States[task.StateDLQ])
	require.Zero(t, qs.Primary+qs.Retry+qs.Scheduled)
	for _, st := range []task.State{task.StatePending, task.StateActive, task.StateFailed} {
		require.Zero(t, qs.States[st], st)
	}
}

func TestManualRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, EnqueueRequest{ID: "d"})
	tk := b.fetchOne(t)
	_, err := b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: "InvalidInput", Message: "bad", Permanent: true})
	require.NoError(t, err)
	require.NoError(t, b.s.Retry(b.ctx, "d"))
	got, err := b.s.Get(b.ctx, "d")
	require.NoError(t, err)
	require.Equal(t, task.StatePending, got.State)
	require.Zero(t, got.RetryCount)
	qs := b.status(t)
	require.Zero(t, qs.DLQ, "out of the DLQ list")
	require.Zero(t, qs.States[task.StateDLQ])
	require.Equal(t, int64(1), qs.Retry)
	n, err := b.rdb.Exists(b.ctx, b.s.parts[0].dlqTask("d")).Result()
	require.NoError(t, err)
	require.Zero(t, n, "snapshot removed")

	// from FAILED (waiting for its retry): leaves the scheduled set
	tk = b.fetchOne(t)
	_, err = b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: "Default", Message: "x", RetryAt: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.NoError(t, b.s.Retry(b.ctx, "d"))
	require.Zero(t, b.status(t).Scheduled)

	// guards
	requireState(t, b.s.Retry(b.ctx, "d"), task.StatePending)
	require.ErrorIs(t, b.s.Retry(b.ctx, "nope"), task.ErrNotFound)
}

func TestLeaseFencing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, EnqueueRequest{ID: "l"})
	tk := b.fetchOne(t)
	require.ErrorIs(t, b.s.Complete(b.ctx, "l", "not-the-token", nil), task.ErrLeaseLost)
	_, err := b.s.Fail(b.ctx, "l", "not-the-token", Failure{ErrorType: "Default"})
	require.ErrorIs(t, err, task.ErrLeaseLost)
	require.ErrorIs(t, b.s.Release(b.ctx, "l", "x", time.Time{}, "x"), task.ErrLeaseLost)
	require.ErrorIs(t, b.s.MarkTimeout(b.ctx, "l", "x"), task.ErrLeaseLost)
	require.ErrorIs(t, b.s.CancelActive(b.ctx, "l", "x", "x"), task.ErrLeaseLost)

	// the lease expires: the reaper gives the task to someone else, and
	// the first holder can no longer change it
	b.clk.Advance(20 * time.Second)
	hb, err := b.s.Heartbeat(b.ctx, []Lease{{ID: "l", Token: tk.Lease}}, 30*time.Second)
	require.NoError(t, err)
	require.Empty(t, hb.Lost)
	b.clk.Advance(11 * time.Second)
	reaped, _, err := b.s.ReapExpired(b.ctx, 10)
	require.NoError(t, err)
	require.Empty(t, reaped, "the heartbeat extended the lease")
	b.clk.Advance(30 * time.Second)
	reaped, _, err = b.s.ReapExpired(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"l"}, reaped)
	require.Equal(t, task.StatePending, b.state(t, "l"))
	tk2 := b.fetchOne(t)
	require.NotEqual(t, tk.Lease, tk2.Lease)
	require.ErrorIs(t, b.s.Complete(b.ctx, "l", tk.Lease, nil), task.ErrLeaseLost)
	hb, err = b.s.Heartbeat(b.ctx, []Lease{{ID: "l", Token: tk.Lease}}, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, []string{"l"}, hb.Lost)
	require.NoError(t, b.s.Complete(b.ctx, "l", tk2.Lease, nil))
	got, err := b.s.Get(b.ctx, "l")
	require.NoError(t, err)
	completed := 0
	for _, c := range got.StateHistory {
		if c.To == task.StateCompleted {
			completed++
		}
	}
	require.Equal(t, 1, completed)
}

func TestRequeueOrphanedKeepsFront(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, EnqueueRequest{ID: "a"})
	b.enqueue(t, EnqueueRequest{ID: "b"})
	b.fetchOne(t)
	b.clk.Advance(time.Minute)
	got, err := b.s.RequeueOrphaned(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, got)
	require.Equal(t, []string{"a", "b"}, ids(b.fetch(t, 2)), "the orphan goes first again")
}

func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t.Run("Pending", func(t *testing.T) {
		b.enqueue(t, EnqueueRequest{ID: "p1"})
		out, err := b.s.Cancel(b.ctx, "p1")
		require.NoError(t, err)
		require.Equal(t, Cancelled, out)
		require.Equal(t, task.StateCancelled, b.state(t, "p1"))
		require.Zero(t, b.status(t).Primary, "removed from its queue")
		_, err = b.s.Cancel(b.ctx, "p1")
		requireState(t, err, task.StateCancelled)
	})
	t.Run("Delayed", func(t *testing.T) {
		b.enqueue(t, EnqueueRequest{ID: "p2", RunAt: t0.Add(time.Hour)})
		require.Equal(t, int64(1), b.status(t).Scheduled)
		_, err := b.s.Cancel(b.ctx, "p2")
		require.NoError(t, err)
		require.Zero(t, b.status(t).Scheduled)
	})
	t.Run("Active", func(t *testing.T) {
		b.enqueue(t, EnqueueRequest{ID: "a1"})
		tk := b.fetchOne(t)
		sub := redisconn.Subscribe(b.ctx, b.rdb, b.s.CancelChannels()[0])
		defer sub.Close()
		_, err := sub.Receive(b.ctx)
		require.NoError(t, err)
		out, err := b.s.Cancel(b.ctx, "a1")
		require.NoError(t, err)
		require.Equal(t, CancelRequested, out)
		msg, err := sub.ReceiveMessage(b.ctx)
		require.NoError(t, err)
		require.Equal(t, "a1", msg.Payload)
		hb, err := b.s.Heartbeat(b.ctx, []Lease{{ID: "a1", Token: tk.Lease}}, time.Minute)
		require.NoError(t, err)
		require.Equal(t, []string{"a1"}, hb.CancelRequested)
		require.NoError(t, b.s.CancelActive(b.ctx, "a1", tk.Lease, "cancelled"))
		require.Equal(t, task.StateCancelled, b.state(t, "a1"))
		require.Zero(t, b.status(t).States[task.StateActive])
	})
	t.Run("ActiveWorkerGone", func(t *testing.T) {
		b.enqueue(t, EnqueueRequest{ID: "a2"})
		b.fetchOne(t)
		_, err := b.s.Cancel(b.ctx, "a2")
		require.NoError(t, err)
		b.clk.Advance(time.Minute)
		_, _, err = b.s.ReapExpired(b.ctx, 10)
		require.NoError(t, err)
		require.Equal(t, task.StateCancelled, b.state(t, "a2"))
	})
	t.Run("Timeout", func(t *testing.T) {
		b.enqueue(t, EnqueueRequest{ID: "t1"})
		tk := b.fetchOne(t)
		require.NoError(t, b.s.MarkTimeout(b.ctx, "t1", tk.Lease))
		_, err := b.s.Cancel(b.ctx, "t1")
		require.NoError(t, err)
		require.Equal(t, task.StateCancelled, b.state(t, "t1"))
		require.Zero(t, b.status(t).States[task.StateTimeout])
	})
	_, err := b.s.Cancel(b.ctx, "missing")
	require.ErrorIs(t, err, task.ErrNotFound)
}

func TestTimeoutThenLateCompletion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, EnqueueRequest{ID: "x"})
	tk := b.fetchOne(t)
	require.NoError(t, b.s.MarkTimeout(b.ctx, "x", tk.Lease))
	requireState(t, b.s.MarkTimeout(b.ctx, "x", tk.Lease), task.StateTimeout)
	qs := b.status(t)
	require.Equal(t, int64(1), qs.States[task.StateTimeout])
	require.Zero(t, qs.States[task.StateActive])
	b.clk.Advance(time.Hour)
	reaped, _, err := b.s.ReapExpired(b.ctx, 10)
	require.NoError(t, err)
	require.Empty(t, reaped, "a TIMEOUT task is not reaped")
	require.NoError(t, b.s.Complete(b.ctx, "x", tk.Lease, json.RawMessage(`1`)))
	require.Equal(t, task.StateCompleted, b.state(t, "x"))
	require.Zero(t, b.status(t).States[task.StateTimeout])
}

func TestReleaseAndDelayed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, EnqueueRequest{ID: "a"})
	b.enqueue(t, EnqueueRequest{ID: "b"})
	b.enqueue(t, EnqueueRequest{ID: "later", RunAt: t0.Add(10 * time.Second)})
	tk := b.fetchOne(t)
	require.NoError(t, b.s.Release(b.ctx, tk.ID, tk.Lease, time.Time{}, "shutdown"))
	requireState(t, b.s.Release(b.ctx, tk.ID, tk.Lease, time.Time{}, "again"), task.StatePending)
	got, err := b.s.Get(b.ctx, "a")
	require.NoError(t, err)
	require.Zero(t, got.RetryCount, "no retry spent")
	// breaker wait: later, through the scheduled set
	tk = b.fetchOne(t)
	require.Equal(t, "a", tk.ID, "handed back to the front")
	require.NoError(t, b.s.Release(b.ctx, tk.ID, tk.Lease, t0.Add(20*time.Second), "breaker_open api"))
	require.Equal(t, []string{"b"}, ids(b.fetch(t, 5)))
	b.clk.Advance(10 * time.Second)
	_, err = b.s.PromoteDue(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"later"}, ids(b.fetch(t, 5)))
	b.clk.Advance(10 * time.Second)
	_, err = b.s.PromoteDue(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(b.fetch(t, 5)))
}

func TestDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, EnqueueRequest{ID: "p"})
	b.enqueue(t, EnqueueRequest{ID: "q"})
	require.NoError(t, b.s.Delete(b.ctx, "p"))
	_, err := b.s.Get(b.ctx, "p")
	require.ErrorIs(t, err, task.ErrNotFound)
	require.ErrorIs(t, b.s.Delete(b.ctx, "p"), task.ErrNotFound)
	tk := b.fetchOne(t)
	requireState(t, b.s.Delete(b.ctx, tk.ID), task.StateActive)
	_, err = b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: "x", Permanent: true})
	require.NoError(t, err)
	require.NoError(t, b.s.Delete(b.ctx, "q"))
	qs := b.status(t)
	require.Zero(t, qs.DLQ)
	for st, n := range qs.States {
		require.Zero(t, n, st)
	}
	keys, err := b.rdb.Keys(b.ctx, "*"+b.s.cfg.Namespace+"}:*task:*").Result()
	require.NoError(t, err)
	require.Empty(t, keys)
}

// TestDeleteIf: a task is deleted only in the state asked for; in another
// it stays, and the refusal says which state it is in.
func TestDeleteIf(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, EnqueueRequest{ID: "d"})
	requireState(t, b.s.DeleteIf(b.ctx, "d", task.StateDLQ), task.StatePending)
	got, err := b.s.Get(b.ctx, "d")
	require.NoError(t, err, "left as it was")
	require.Equal(t, task.StatePending, got.State)
	tk := b.fetchOne(t)
	_, err = b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: "x", Permanent: true})
	require.NoError(t, err)
	require.NoError(t, b.s.DeleteIf(b.ctx, "d", task.StateDLQ))
	_, err = b.s.Get(b.ctx, "d")
	require.ErrorIs(t, err, task.ErrNotFound)
	require.Zero(t, b.status(t).DLQ)
}

func TestCompleteBatchMixed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := 0; i < 3; i++ {
		b.enqueue(t, EnqueueRequest{ID: fmt.Sprint(i)})
	}
	ts := b.fetch(t, 3)
	errs, err := b.s.CompleteBatch(b.ctx, []Completion{
		{ID: ts[0].ID, Token: ts[0].Lease}, {ID: ts[1].ID, Token: "wrong"}, {ID: "missing", Token: "x"}, {ID: ts[0].ID, Token: ts[0].Lease},
	})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], task.ErrLeaseLost)
	require.ErrorIs(t, errs[2], task.ErrNotFound)
	require.True(t, errors.Is(errs[3], task.ErrWrongState), "the second completion in one batch is refused")
	require.Equal(t, int64(1), b.status(t).States[task.StateCompleted])
}

// TestCompleteNotices: CompleteBatch that also answers, per completed
// task, what its notification and result cache take (the task as read in
// the same script), and nothing for the others.
func TestCompleteNotices(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, EnqueueRequest{ID: "a", Type: "report.q", SessionID: "s-1", Priority: task.PriorityHigh, Params: json.RawMessage(`{"q":4}`)})
	b.enqueue(t, EnqueueRequest{ID: "b"})
	ts := b.fetch(t, 2)
	byID := map[string]*task.Task{ts[0].ID: ts[0], ts[1].ID: ts[1]}
	errs, got, err := b.s.CompleteNotices(b.ctx, []Completion{
		{ID: "a", Token: byID["a"].Lease, Result: json.RawMessage(`{"ok":true}`)}, {ID: "b", Token: "wrong"}, {ID: "missing", Token: "x"},
	})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], task.ErrLeaseLost)
	require.ErrorIs(t, errs[2], task.ErrNotFound)
	require.Nil(t, got[1])
	require.Nil(t, got[2])
	require.Equal(t, &task.Task{ID: "a", Type: "report.q", SessionID: "s-1", Priority: task.PriorityHigh, State: task.StateCompleted,
		Params: json.RawMessage(`{"q":4}`), Result: json.RawMessage(`{"ok":true}`)}, got[0])
	stored, err := b.s.Get(b.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, task.StateCompleted, stored.State)
	require.JSONEq(t, `{"ok":true}`, string(stored.Result))
}

func TestListByState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := 0; i < 5; i++ {
		b.enqueue(t, EnqueueRequest{ID: fmt.Sprint(i)})
		b.clk.Advance(time.Millisecond)
	}
	page, err := b.s.ListByState(b.ctx, task.StatePending, ListOptions{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, int64(5), page.Total)
	require.Equal(t, []string{"4", "3"}, ids(page.Tasks))
	page, err = b.s.ListByState(b.ctx, task.StatePending, ListOptions{Limit: 2, Offset: 2, Oldest: true})
	require.NoError(t, err)
	require.Equal(t, []string{"2", "3"}, ids(page.Tasks))
	_, err = b.s.ListByState(b.ctx, "NOPE", ListOptions{})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = b.s.ListByState(b.ctx, task.StatePending, ListOptions{Limit: 5000})
	require.ErrorIs(t, err, ErrInvalid)
	contents, n, err := b.s.QueueContents(b.ctx, QueuePrimary, ListOptions{Limit: 3})
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	require.Equal(t, []string{"0", "1", "2"}, contents)
}

// TestHandoff: the holder hands an ACTIVE attempt to the external path. It
// stays ACTIVE with the same token, its old holder's heartbeat neither
// extends it nor keeps it, the lease is the handoff's deadline, the
// attempt is indexed for the timeout watcher, and the token still
// completes it. A refused handoff names the state; a new attempt after a
// reap is not handed off.
func TestHandoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, EnqueueRequest{ID: "h"})
	tk := b.fetchOne(t)
	_, err := b.s.Handoff(b.ctx, "h", "other", "svc", t0, t0, t0)
	require.ErrorIs(t, err, task.ErrLeaseLost)
	cancelled, err := b.s.Handoff(b.ctx, "h", tk.Lease, "external:noop", t0.Add(time.Minute), t0.Add(90*time.Second), t0.Add(time.Minute))
	require.NoError(t, err)
	require.False(t, cancelled)
	got, err := b.s.Get(b.ctx, "h")
	require.NoError(t, err)
	require.Equal(t, task.StateActive, got.State)
	require.True(t, got.HandedOff)
	require.Equal(t, "external:noop", got.Worker)
	require.Equal(t, tk.Lease, got.Lease)

	hb, err := b.s.Heartbeat(b.ctx, []Lease{{ID: "h", Token: tk.Lease}}, 10*time.Minute)
	require.NoError(t, err)
	require.Equal(t, []string{"h"}, hb.Lost, "the worker no longer holds it")
	score, err := b.rdb.ZScore(b.ctx, b.s.parts[0].active(), "h").Result()
	require.NoError(t, err)
	require.Equal(t, float64(t0.Add(90*time.Second).UnixMilli()), score, "the heartbeat did not extend it")

	due, err := b.s.DueHandoffs(b.ctx, 10)
	require.NoError(t, err)
	require.Empty(t, due, "not due before its timeout")
	b.clk.Advance(time.Minute)
	due, err = b.s.DueHandoffs(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []HandoffEntry{{ID: "h", Token: tk.Lease, TimeoutAt: t0.Add(time.Minute), Due: t0.Add(time.Minute)}}, due)
	require.NoError(t, b.s.RescheduleHandoff(b.ctx, due[0], t0.Add(2*time.Minute)))
	due, err = b.s.DueHandoffs(b.ctx, 10)
	require.NoError(t, err)
	require.Empty(t, due)

	// no orchestrator: the lease expires and the reaper requeues it
	b.clk.Advance(31 * time.Second)
	reaped, _, err := b.s.ReapExpired(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"h"}, reaped)
	tk2 := b.fetchOne(t)
	got, err = b.s.Get(b.ctx, "h")
	require.NoError(t, err)
	require.False(t, got.HandedOff, "the new attempt is the worker's")
	require.ErrorIs(t, b.s.Complete(b.ctx, "h", tk.Lease, nil), task.ErrLeaseLost)
	// a cancel requested before the handoff is reported to the new holder
	out, err := b.s.Cancel(b.ctx, "h")
	require.NoError(t, err)
	require.Equal(t, CancelRequested, out)
	cancelled, err = b.s.Handoff(b.ctx, "h", tk2.Lease, "external:noop", b.clk.Now(), b.clk.Now(), b.clk.Now())
	require.NoError(t, err)
	require.True(t, cancelled)
	require.NoError(t, b.s.Complete(b.ctx, "h", tk2.Lease, nil))
	left, err := b.rdb.ZRange(b.ctx, b.s.parts[0].handoff(), 0, -1).Result()
	require.NoError(t, err)
	require.Equal(t, []string{"h " + tk.Lease + " " + strconv.FormatInt(t0.Add(time.Minute).UnixMilli(), 10)}, left,
		"the completion took its attempt's entry (hto), the reaped attempt's is the watcher's to drop")
	var se *task.StateError
	_, err = b.s.Handoff(b.ctx, "h", tk2.Lease, "x", t0, t0, t0)
	require.ErrorAs(t, err, &se)
	require.Equal(t, task.StateCompleted, se.Have)
	require.NoError(t, b.s.DropHandoff(b.ctx, HandoffEntry{ID: "h", Token: tk.Lease, TimeoutAt: t0.Add(time.Minute)}))
	require.NoError(t, b.s.DropHandoff(b.ctx, HandoffEntry{ID: "h", Token: tk2.Lease, TimeoutAt: b.clk.Now()}))
	n, err := b.rdb.ZCard(b.ctx, b.s.parts[0].handoff()).Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestPurge: only finished tasks past the cut-off go, with their DLQ
// list entry and snapshot; stale index entries are dropped; other states
// are refused.
func TestPurge(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.DefaultMaxRetries = nil })
	b.enqueue(t, EnqueueRequest{ID: "d"})
	tk := b.fetchOne(t)
	_, err := b.s.Fail(b.ctx, "d", tk.Lease, Failure{ErrorType: "InvalidInput", Message: "x", Permanent: true})
	require.NoError(t, err)
	_, _, err = b.s.Purge(b.ctx, task.StateFailed, time.Hour, 10)
	require.Error(t, err)
	del, handled, err := b.s.Purge(b.ctx, task.StateDLQ, time.Hour, 10)
	require.NoError(t, err)
	require.Zero(t, del+handled, "not old enough")
	b.clk.Advance(time.Hour)
	del, handled, err = b.s.Purge(b.ctx, task.StateDLQ, time.Hour, 10)
	require.NoError(t, err)
	require.Equal(t, 1, del)
	require.Equal(t, 1, handled)
	for _, k := range []string{b.s.parts[0].task("d"), b.s.parts[0].dlqTask("d")} {
		n, err := b.rdb.Exists(b.ctx, k).Result()
		require.NoError(t, err)
		require.Zero(t, n, k)
	}
	n, err := b.rdb.LLen(b.ctx, b.s.parts[0].dlq()).Result()
	require.NoError(t, err)
	require.Zero(t, n)
	// a stale index entry (its task moved on) is dropped, nothing deleted
	b.enqueue(t, EnqueueRequest{ID: "p"})
	require.NoError(t, b.rdb.ZAdd(b.ctx, b.s.parts[0].stateIndex(task.StateCompleted), redis.Z{Score: 1, Member: "p"}).Err())
	del, handled, err = b.s.Purge(b.ctx, task.StateCompleted, time.Hour, 10)
	require.NoError(t, err)
	require.Equal(t, 0, del)
	require.Equal(t, 1, handled)
	require.Equal(t, task.StatePending, b.state(t, "p"))
}

// TestQueueContentsOfANamedQueue: a named queue's lists are paged as the
// default queue's are, apart from them (QueueContentsOf); its scheduled
// set and DLQ are the deployment's, so asking a named queue for them is
// refused, as is a name that is not a queue name.
func TestQueueContentsOfANamedQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 3 {
		b.enqueue(t, EnqueueRequest{ID: fmt.Sprint("e", i), Queue: "emails"})
	}
	b.enqueue(t, EnqueueRequest{ID: "d0"})
	got, n, err := b.s.QueueContentsOf(b.ctx, "emails", QueuePrimary, ListOptions{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.Equal(t, []string{"e0", "e1"}, got)
	got, n, err = b.s.QueueContentsOf(b.ctx, "", QueuePrimary, ListOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, []string{"d0"}, got, "the default queue's alone")
	_, _, err = b.s.QueueContentsOf(b.ctx, "emails", QueueScheduled, ListOptions{})
	require.ErrorIs(t, err, ErrInvalid)
	_, _, err = b.s.QueueContentsOf(b.ctx, "no such/queue", QueuePrimary, ListOptions{})
	require.ErrorIs(t, err, ErrInvalid)
}
