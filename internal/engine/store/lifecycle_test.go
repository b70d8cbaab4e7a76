package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

func TestHappyPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.enqueue(t, EnqueueRequest{Content: "hello", Params: json.RawMessage(`{"a":1}`), SessionID: "s1", Timeout: 2 * time.Second})
	require.Equal(t, task.StatePending, created.State)

	got, err := b.s.Get(b.ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, created, got)

	b.clk.Advance(time.Second)
	tk := b.fetchOne(t)
	require.Equal(t, created.ID, tk.ID)
	require.Equal(t, "hello", tk.Content)
	require.JSONEq(t, `{"a":1}`, string(tk.Params))
	require.Equal(t, 2*time.Second, tk.Timeout)
	require.NotEmpty(t, tk.Lease)
	require.Equal(t, task.StateActive, b.state(t, tk.ID))

	b.clk.Advance(time.Second)
	require.NoError(t, b.s.Complete(b.ctx, tk.ID, tk.Lease, json.RawMessage(`{"ok":true}`)))
	done, err := b.s.Get(b.ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateCompleted, done.State)
	require.JSONEq(t, `{"ok":true}`, string(done.Result))
	require.Equal(t, t0.Add(2*time.Second), *done.CompletedAt)
	require.Equal(t, t0.Add(time.Second), *done.StartedAt)
	require.Equal(t, "w1", done.Worker)
	var path []task.State
	for _, c := range done.StateHistory {
		path = append(path, c.To)
	}
	require.Equal(t, []task.State{task.StatePending, task.StateActive, task.StateCompleted}, path)

	// completing twice is refused with the state it is in
	err = b.s.Complete(b.ctx, tk.ID, tk.Lease, nil)
	var se *task.StateError
	require.ErrorAs(t, err, &se)
	require.Equal(t, task.StateCompleted, se.Have)

	qs := b.status(t)
	require.Equal(t, int64(1), qs.States[task.StateCompleted])
	require.Equal(t, int64(0), qs.States[task.StatePending])
	require.Equal(t, int64(0), qs.States[task.StateActive])
	require.Equal(t, int64(0), qs.Primary)
}

// TestStateHistoryCompact: the history's compact encoding decodes to the
// times, states and causes of every transition, and a small task's hash
// stays in Redis's listpack encoding through its whole life (what the
// encoding is for: see lib.lua's hist).
func TestStateHistoryCompact(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.enqueue(t, EnqueueRequest{Type: "noop"})
	b.clk.Advance(1500 * time.Millisecond)
	tk := b.fetchOne(t)
	b.clk.Advance(250 * time.Millisecond)
	require.NoError(t, b.s.Complete(b.ctx, tk.ID, tk.Lease, json.RawMessage(`{}`)))

	got, err := b.s.Get(b.ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, []task.StateChange{
		{At: t0, To: task.StatePending, Cause: "created"},
		{At: t0.Add(1500 * time.Millisecond), From: task.StatePending, To: task.StateActive, Cause: "w1"},
		{At: t0.Add(1750 * time.Millisecond), From: task.StateActive, To: task.StateCompleted},
	}, got.StateHistory)

	enc, err := b.rdb.ObjectEncoding(b.ctx, b.s.parts[0].task(created.ID)).Result()
	require.NoError(t, err)
	require.Equal(t, "listpack", enc, "a small task's hash left the compact encoding")
}

func TestDecodeStateHistoryReadsBothEncodings(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1_700_000_000_000).UTC()
	want := []task.StateChange{
		{At: at, To: task.StatePending, Cause: "created"},
		{At: at.Add(2 * time.Millisecond), From: task.StatePending, To: task.StateActive, Cause: "w,1"},
		{At: at.Add(90 * time.Second), From: task.StateActive, To: task.StateDLQ, Cause: "PermanentError"},
	}
	require.Equal(t, want, decodeStateHistory("1700000000000,,P;+2,P,A,w,1;+90000,A,D,PermanentError"))
	require.Equal(t, want, decodeStateHistory("1700000000000,,PENDING,created;1700000000002,PENDING,ACTIVE,w,1;1700000090000,ACTIVE,DLQ,PermanentError"))
	require.Equal(t, []task.StateChange{}, decodeStateHistory(""))
}

// TestHistoryTailTakenByEveryTransition: fetch and complete write their
// history entries to ha and hc without touching state_history; every other
// transition out of ACTIVE takes ha into state_history first. A task led
// through release, reap, a failed attempt and its retry, a timeout and a
// late completion has every entry in order, with its time and cause, and
// started_at/completed_at read from them.
func TestHistoryTailTakenByEveryTransition(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.enqueue(t, EnqueueRequest{Type: "noop"})
	key := b.s.parts[0].task(created.ID)
	tick := func() time.Time { b.clk.Advance(time.Second); return b.clk.Now() }
	hasTail := func() bool {
		n, err := b.rdb.HExists(b.ctx, key, fHistFetch).Result()
		require.NoError(t, err)
		return n
	}
	var want []task.StateChange
	add := func(at time.Time, from, to task.State, cause string) {
		want = append(want, task.StateChange{At: at, From: from, To: to, Cause: cause})
	}
	want = append(want, task.StateChange{At: t0, To: task.StatePending, Cause: "created"})

	at := tick()
	tk := b.fetchOne(t)
	add(at, task.StatePending, task.StateActive, "w1")
	require.True(t, hasTail())
	at = tick()
	require.NoError(t, b.s.Release(b.ctx, tk.ID, tk.Lease, at, "shutdown"))
	add(at, task.StateActive, task.StatePending, "shutdown")
	require.False(t, hasTail(), "release left the fetch's entry in ha")

	at = tick()
	tk = b.fetchOne(t)
	add(at, task.StatePending, task.StateActive, "w1")
	b.clk.Advance(31 * time.Second) // past the 30 s lease
	at = b.clk.Now()
	_, handled, err := b.s.ReapExpired(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, handled)
	add(at, task.StateActive, task.StatePending, "lease_expired")
	require.False(t, hasTail(), "reap left the fetch's entry in ha")

	at = tick()
	tk = b.fetchOne(t)
	add(at, task.StatePending, task.StateActive, "w1")
	at = tick()
	out, err := b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: "Boom", Message: "boom", RetryAt: at, Attempt: 1, Worker: "w1"})
	require.NoError(t, err)
	require.Equal(t, task.StateFailed, out.State)
	add(at, task.StateActive, task.StateFailed, "Boom")
	require.False(t, hasTail(), "fail left the fetch's entry in ha")
	at = tick()
	n, err := b.s.PromoteDue(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	add(at, task.StateFailed, task.StatePending, "retry_due")

	started := tick()
	tk = b.fetchOne(t)
	add(started, task.StatePending, task.StateActive, "w1")
	at = tick()
	require.NoError(t, b.s.MarkTimeout(b.ctx, tk.ID, tk.Lease))
	add(at, task.StateActive, task.StateTimeout, "overdue")
	require.False(t, hasTail(), "timeout left the fetch's entry in ha")
	done := tick()
	require.NoError(t, b.s.Complete(b.ctx, tk.ID, tk.Lease, json.RawMessage(`{"ok":true}`)))
	add(done, task.StateTimeout, task.StateCompleted, "")

	got, err := b.s.Get(b.ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, want, got.StateHistory)
	require.Equal(t, started, *got.StartedAt)
	require.Equal(t, done, *got.CompletedAt)
	require.Equal(t, task.StateCompleted, got.State)

	// cancelled by its holder: the fetch's entry is taken in as well
	other := b.enqueue(t, EnqueueRequest{Type: "noop"})
	fetched := tick()
	tk = b.fetchOne(t)
	at = tick()
	require.NoError(t, b.s.CancelActive(b.ctx, tk.ID, tk.Lease, "handler_cancelled"))
	got, err = b.s.Get(b.ctx, other.ID)
	require.NoError(t, err)
	require.Equal(t, []task.StateChange{
		{At: other.CreatedAt, To: task.StatePending, Cause: "created"},
		{At: fetched, From: task.StatePending, To: task.StateActive, Cause: "w1"},
		{At: at, From: task.StateActive, To: task.StateCancelled, Cause: "handler_cancelled"},
	}, got.StateHistory)
}

// TestBusySetsAreSkiplists: the lease set and the PENDING index stay small
// and busy, so they are created in the skiplist encoding (lib.lua's zadd):
// in Redis's listpack encoding every insert walks the set. The member that
// makes them so is gone at once: they hold exactly the tasks.
func TestBusySetsAreSkiplists(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range 3 {
		b.enqueue(t, EnqueueRequest{Type: "noop"})
	}
	k := b.s.parts[0]
	pending := k.stateIndex(task.StatePending)
	enc, err := b.rdb.ObjectEncoding(b.ctx, pending).Result()
	require.NoError(t, err)
	require.Equal(t, "skiplist", enc)
	n, err := b.rdb.ZCard(b.ctx, pending).Result()
	require.NoError(t, err)
	require.Equal(t, int64(3), n)

	got := b.fetch(t, 2)
	require.Len(t, got, 2)
	enc, err = b.rdb.ObjectEncoding(b.ctx, k.active()).Result()
	require.NoError(t, err)
	require.Equal(t, "skiplist", enc)
	leased, err := b.rdb.ZRange(b.ctx, k.active(), 0, -1).Result()
	require.NoError(t, err)
	require.ElementsMatch(t, ids(got), leased)
	qs := b.status(t)
	require.Equal(t, int64(2), qs.States[task.StateActive])
	require.Equal(t, int64(1), qs.States[task.StatePending])

	// emptied, the set is deleted; the next fetch creates it the same way
	for _, tk := range got {
		require.NoError(t, b.s.Complete(b.ctx, tk.ID, tk.Lease, nil))
	}
	ex, err := b.rdb.Exists(b.ctx, k.active()).Result()
	require.NoError(t, err)
	require.Zero(t, ex)
	b.fetchOne(t)
	enc, err = b.rdb.ObjectEncoding(b.ctx, k.active()).Result()
	require.NoError(t, err)
	require.Equal(t, "skiplist", enc)
}

// The submit's traceparent rides on the enqueue's write and comes back
// with the fetch and the task; a task enqueued without one has none.
func TestTraceparentStoredAndFetched(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced := b.enqueue(t, EnqueueRequest{Type: "t", Content: "c", Traceparent: tp})
	require.Equal(t, tp, traced.Traceparent)
	plain := b.enqueue(t, EnqueueRequest{Type: "t"})
	got := b.fetch(t, 10)
	require.Len(t, got, 2)
	want := map[string]string{traced.ID: tp, plain.ID: ""}
	for _, ft := range got {
		require.Equal(t, want[ft.ID], ft.Traceparent, ft.ID)
		require.Equal(t, traced.CreatedAt, ft.CreatedAt) // the fields before it did not shift
		st, err := b.s.Get(b.ctx, ft.ID)
		require.NoError(t, err)
		require.Equal(t, want[ft.ID], st.Traceparent)
	}
	require.Equal(t, "c", map[string]string{got[0].ID: got[0].Content, got[1].ID: got[1].Content}[traced.ID])
}

// TestFetchAnswersEveryField: a fetched task carries every field of its
// hash that fetch.lua answers (eight strings per task, the short ones in
// one), each in its place, as Get reads them; a retried one its retry
// count.
func TestFetchAnswersEveryField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	five := 5
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	in := b.enqueue(t, EnqueueRequest{Type: "report.build", Content: "a text with spaces", Params: json.RawMessage(`{"q": "Q4 2024"}`),
		SessionID: "user-7", Priority: task.PriorityHigh, Timeout: 1500 * time.Millisecond, MaxRetries: &five, Traceparent: tp})
	check := func(retries int) *task.Task {
		t.Helper()
		got := b.fetchOne(t)
		require.Equal(t, in.ID, got.ID)
		require.NotEmpty(t, got.Lease)
		require.Equal(t, "report.build", got.Type)
		require.Equal(t, "a text with spaces", got.Content)
		require.JSONEq(t, `{"q": "Q4 2024"}`, string(got.Params))
		require.Equal(t, "user-7", got.SessionID)
		require.Equal(t, task.PriorityHigh, got.Priority)
		require.Equal(t, 1500*time.Millisecond, got.Timeout)
		require.Equal(t, retries, got.RetryCount)
		require.Equal(t, 5, got.MaxRetries)
		require.Equal(t, in.CreatedAt, got.CreatedAt)
		require.Equal(t, tp, got.Traceparent)
		require.Equal(t, task.StateActive, got.State)
		return got
	}
	first := check(0)
	_, err := b.s.Fail(b.ctx, first.ID, first.Lease, Failure{ErrorType: "Transient", Message: "again", Attempt: 1})
	require.NoError(t, err)
	n, err := b.s.PromoteDue(b.ctx, 10) // the retry is due now
	require.NoError(t, err)
	require.Equal(t, 1, n)
	check(1)
}
