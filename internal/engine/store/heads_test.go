package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

// TestGetHeads: the fields a listing sorts and filters by, equal to the
// whole task's; a task that does not exist is left out.
func TestGetHeads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.enqueue(t, EnqueueRequest{ID: "h1", Type: "report.generate", Priority: task.PriorityHigh, SessionID: "s1",
		Content: "a long content the heads do not carry", Params: []byte(`{"x":1}`)})
	b.clk.Advance(time.Second)
	b.enqueue(t, EnqueueRequest{ID: "h2", Type: "noop"})
	heads, err := b.s.GetHeads(b.ctx, []string{"h1", "gone", "h2"})
	require.NoError(t, err)
	require.Len(t, heads, 2)
	whole, err := b.s.GetMany(b.ctx, []string{"h1", "h2"})
	require.NoError(t, err)
	for i, h := range heads {
		w := whole[i]
		require.Equal(t, w.ID, h.ID)
		require.Equal(t, w.Type, h.Type)
		require.Equal(t, w.State, h.State)
		require.Equal(t, w.Priority, h.Priority)
		require.Equal(t, w.SessionID, h.SessionID)
		require.True(t, w.CreatedAt.Equal(h.CreatedAt))
		require.True(t, w.UpdatedAt.Equal(h.UpdatedAt))
		require.Empty(t, h.Content)
		require.Empty(t, h.Params)
	}
	require.Equal(t, a.ID, heads[0].ID)
	require.Equal(t, task.PriorityHigh, heads[0].Priority)
	empty, err := b.s.GetHeads(b.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, empty)
}

// TestGetNotices: what announcing a finished task takes, as GetMany reads
// it, without the content; a missing task is left out.
func TestGetNotices(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.enqueue(t, EnqueueRequest{ID: "n1", Type: "report.generate", Priority: task.PriorityHigh, SessionID: "s1",
		Content: "a long content the notices do not carry", Params: []byte(`{"x":1}`)})
	b.enqueue(t, EnqueueRequest{ID: "n2", Type: "noop"})
	got, err := b.s.Fetch(b.ctx, FetchRequest{N: 2, WorkerID: "w", TokenPrefix: "w:1", Lease: time.Minute})
	require.NoError(t, err)
	for _, g := range got {
		if g.ID == "n1" {
			require.NoError(t, b.s.Complete(b.ctx, g.ID, g.Lease, []byte(`{"done":true}`)))
		}
	}
	ns, err := b.s.GetNotices(b.ctx, []string{"n1", "gone", "n2"})
	require.NoError(t, err)
	require.Len(t, ns, 2)
	whole, err := b.s.GetMany(b.ctx, []string{"n1", "n2"})
	require.NoError(t, err)
	for i, n := range ns {
		w := whole[i]
		require.Equal(t, w.ID, n.ID)
		require.Equal(t, w.Type, n.Type)
		require.Equal(t, w.State, n.State)
		require.Equal(t, w.Priority, n.Priority)
		require.Equal(t, w.SessionID, n.SessionID)
		require.Equal(t, string(w.Params), string(n.Params))
		require.Equal(t, string(w.Result), string(n.Result))
		require.Empty(t, n.Content)
	}
	require.Equal(t, task.StateCompleted, ns[0].State)
	require.JSONEq(t, `{"done":true}`, string(ns[0].Result))
	require.JSONEq(t, `{"x":1}`, string(ns[0].Params))
}
