package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/task"
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
