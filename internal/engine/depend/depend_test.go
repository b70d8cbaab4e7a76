package depend

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	st *store.Store
	g  *Graph
}

func setup(t *testing.T) *bundle {
	t.Helper()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	g := New(st, Config{Sweep: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return &bundle{st: st, g: g}
}

// finish takes the task id off its queue and completes (or dead-letters) it.
func (b *bundle) finish(t *testing.T, id string, ok bool) {
	t.Helper()
	ctx := context.Background()
	got, err := b.st.Fetch(ctx, store.FetchRequest{N: 10, WorkerID: "w", TokenPrefix: "w:" + id, Lease: time.Minute})
	require.NoError(t, err)
	for _, tk := range got {
		switch {
		case tk.ID != id:
			require.NoError(t, b.st.Release(ctx, tk.ID, tk.Lease, time.Time{}, "not this one"))
		case ok:
			require.NoError(t, b.st.Complete(ctx, id, tk.Lease, json.RawMessage(`{}`)))
		default:
			_, err := b.st.Fail(ctx, id, tk.Lease, store.Failure{ErrorType: "X", Message: "boom", Permanent: true, Attempt: 1})
			require.NoError(t, err)
		}
	}
}

func (b *bundle) waitState(t *testing.T, id string, want task.State) {
	t.Helper()
	require.Eventually(t, func() bool {
		tk, err := b.st.Get(context.Background(), id)
		return err == nil && tk.State == want
	}, 10*time.Second, 10*time.Millisecond, "task %s never %s", id, want)
}

func TestFanIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a1, err := b.st.Enqueue(ctx, store.EnqueueRequest{Type: "x"})
	require.NoError(t, err)
	a2, err := b.st.Enqueue(ctx, store.EnqueueRequest{Type: "x"})
	require.NoError(t, err)
	cid, err := b.g.Submit(ctx, store.EnqueueRequest{Type: "report.generate", SessionID: "s"}, []string{a1.ID, a2.ID})
	require.NoError(t, err)
	on, parked, err := b.g.Waiting(ctx, cid)
	require.NoError(t, err)
	require.True(t, parked)
	require.ElementsMatch(t, []string{a1.ID, a2.ID}, on)
	_, err = b.st.Get(ctx, cid)
	require.ErrorIs(t, err, task.ErrNotFound, "not runnable yet")

	b.finish(t, a1.ID, true)
	require.NoError(t, b.g.Sweep(ctx)) // a check now must keep it parked
	_, err = b.st.Get(ctx, cid)
	require.ErrorIs(t, err, task.ErrNotFound, "one of two dependencies is not enough")

	b.finish(t, a2.ID, true)
	b.waitState(t, cid, task.StatePending)
	// A released task is created first, then unparked.
	require.Eventually(t, func() bool {
		_, parked, err := b.g.Waiting(ctx, cid)
		return err == nil && !parked
	}, 10*time.Second, 5*time.Millisecond, "unparked once released")
}

func TestFailedDependencyCancels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a, err := b.st.Enqueue(ctx, store.EnqueueRequest{Type: "x"})
	require.NoError(t, err)
	bid, err := b.g.Submit(ctx, store.EnqueueRequest{Type: "y"}, []string{a.ID})
	require.NoError(t, err)
	b.finish(t, a.ID, false)
	b.waitState(t, bid, task.StateCancelled)
}

func TestAlreadyCompletedAndInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a, err := b.st.Enqueue(ctx, store.EnqueueRequest{Type: "x"})
	require.NoError(t, err)
	b.finish(t, a.ID, true)
	id, err := b.g.Submit(ctx, store.EnqueueRequest{Type: "y"}, []string{a.ID})
	require.NoError(t, err)
	b.waitState(t, id, task.StatePending)

	_, err = b.g.Submit(ctx, store.EnqueueRequest{Type: "y"}, []string{"no-such-task"})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = b.g.Submit(ctx, store.EnqueueRequest{Type: "y"}, []string{a.ID, a.ID})
	require.ErrorIs(t, err, ErrInvalid)
}

// TestParkedIDsAndClock: ParkedIDs pages the parked tasks by when they
// were parked (the injected clock's time), newest first or oldest first,
// with the count of all; Parked reports that time as Since.
func TestParkedIDsAndClock(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	g := New(st, Config{Clock: clk})
	ctx := context.Background()
	dep, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "noop"})
	require.NoError(t, err)
	var ids []string
	for i := 0; i < 3; i++ {
		id, err := g.Submit(ctx, store.EnqueueRequest{Type: "noop"}, []string{dep.ID})
		require.NoError(t, err)
		ids = append(ids, id)
		clk.Advance(time.Minute)
	}
	got, total, err := g.ParkedIDs(ctx, 0, 2, false)
	require.NoError(t, err)
	require.EqualValues(t, 3, total)
	require.Equal(t, []string{ids[2], ids[1]}, got)
	got, _, err = g.ParkedIDs(ctx, 1, 5, true)
	require.NoError(t, err)
	require.Equal(t, []string{ids[1], ids[2]}, got)
	pks, err := g.Parked(ctx, ids[:1])
	require.NoError(t, err)
	require.True(t, pks[ids[0]].Since.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), "%s", pks[ids[0]].Since)
	require.Equal(t, []string{dep.ID}, pks[ids[0]].After)
}
