package service_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestListAllStatesWhileTasksMove: the admin's listing across states reads
// the state indexes one after another; tasks moving PENDING → ACTIVE →
// COMPLETED meanwhile are still listed once each, and total counts them
// once.
func TestListAllStatesWhileTasksMove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, service.Config{})
	const n = 300
	reqs := make([]store.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = store.EnqueueRequest{Type: "noop"}
	}
	_, err := b.st.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // a worker taking and completing tasks one by one
		defer close(done)
		for i := 0; ; i++ {
			ts, err := b.st.Fetch(ctx, store.FetchRequest{N: 1, WorkerID: "w", TokenPrefix: "w" + string(rune('a'+i%26)), Lease: time.Minute})
			if err != nil || len(ts) == 0 {
				return
			}
			if err := b.st.Complete(ctx, ts[0].ID, ts[0].Lease, nil); err != nil {
				return
			}
		}
	})
	admin := auth.Principal{Admin: true}
	lists := 0
	for running := true; running; lists++ {
		select {
		case <-done:
			running = false
		default:
		}
		l, err := b.svc.List(ctx, admin, service.ListInput{PageSize: service.MaxPageSize, Summary: true})
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, x := range l.Tasks {
			id := x.(service.TaskSummary).ID
			require.False(t, seen[id], "task %s listed twice (listing %d)", id, lists)
			seen[id] = true
		}
		require.Len(t, seen, n, "every task listed once (listing %d)", lists)
		require.LessOrEqual(t, l.Total, int64(n)+2, "total counts each task about once (listing %d)", lists)
	}
	wg.Wait()
	l, err := b.svc.List(ctx, admin, service.ListInput{Status: string(task.StateCompleted), PageSize: 10})
	require.NoError(t, err)
	require.EqualValues(t, n, l.Total)
	t.Logf("%d listings while tasks moved", lists)
}

// TestListByCreationReadsBoundedly: sorting a state by created_at newest
// first stops reading the state's index once nothing further down can
// rank (partial stays false with more than MaxMergeWindow tasks in the
// state), while oldest first has to scan the index and says partial when
// it stops at MaxMergeWindow entries. Both pages are the right tasks.
func TestListByCreationReadsBoundedly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, ns := testredis.Client(t)
	clk := clock.NewFake(time.Now())
	st, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk})
	require.NoError(t, err)
	au, err := auth.New(rdb, auth.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	svc, err := service.New(service.Config{Store: st, Auth: au})
	require.NoError(t, err)
	t.Cleanup(svc.Close)

	const batches, per = 11, 1000 // more than MaxMergeWindow, one ms per batch
	var first, last []*task.Task
	for i := range batches {
		reqs := make([]store.EnqueueRequest, per)
		for j := range reqs {
			reqs[j] = store.EnqueueRequest{Type: "noop"}
		}
		ts, err := st.EnqueueBatch(ctx, reqs)
		require.NoError(t, err)
		if i == 0 {
			first = ts
		}
		last = ts
		clk.Advance(time.Millisecond)
	}
	admin := auth.Principal{Admin: true}
	ids := func(l service.TaskList) map[string]bool {
		out := map[string]bool{}
		for _, x := range l.Tasks {
			out[x.(service.TaskSummary).ID] = true
		}
		return out
	}
	in := func(ts []*task.Task) map[string]bool {
		out := map[string]bool{}
		for _, tk := range ts {
			out[tk.ID] = true
		}
		return out
	}
	l, err := svc.List(ctx, admin, service.ListInput{Status: "PENDING", SortBy: "created_at", PageSize: 20, Summary: true})
	require.NoError(t, err)
	require.False(t, l.Partial, "newest first stops early")
	require.EqualValues(t, batches*per, l.Total)
	require.Len(t, l.Tasks, 20)
	for id := range ids(l) {
		require.True(t, in(last)[id], "newest first: a task of the last batch")
	}
	l, err = svc.List(ctx, admin, service.ListInput{Status: "PENDING", SortBy: "created_at", SortOrder: "asc", PageSize: 20, Summary: true})
	require.NoError(t, err)
	require.True(t, l.Partial, "oldest first scans, and stops at MaxMergeWindow")
	for id := range ids(l) {
		require.True(t, in(first)[id], "oldest first: a task of the first batch")
	}
	_, err = svc.List(ctx, admin, service.ListInput{Status: "PENDING", SortBy: "created_at", Page: 11, PageSize: 1000})
	var se *service.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, "page", se.Field, "deeper than MaxMergeWindow is refused, naming page")
}

// TestStateIndexScoresBoundTaskTimes guards what the sorted listings rely
// on (fromIndex stops reading when nothing further down can rank): after
// every kind of transition, each task's created_at and updated_at are at
// most its score in its state's index (ACTIVE, scanned whole, aside).
func TestStateIndexScoresBoundTaskTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, ns := testredis.Client(t)
	clk := clock.NewFake(time.Now())
	st, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk})
	require.NoError(t, err)
	step := func() { clk.Advance(7 * time.Millisecond) }
	enqueue := func(r store.EnqueueRequest) *task.Task {
		step()
		tk, err := st.Enqueue(ctx, r)
		require.NoError(t, err)
		return tk
	}
	fetch := func(lease time.Duration) *task.Task {
		step()
		ts, err := st.Fetch(ctx, store.FetchRequest{N: 1, WorkerID: "w", TokenPrefix: "w" + clk.Now().Format("150405.000000"), Lease: lease})
		require.NoError(t, err)
		require.Len(t, ts, 1)
		return ts[0]
	}
	one := 1
	enqueue(store.EnqueueRequest{Type: "noop", RunAt: clk.Now().Add(time.Hour)}) // delayed: PENDING by due time
	for range 7 {
		enqueue(store.EnqueueRequest{Type: "noop", MaxRetries: &one})
	}
	a := fetch(time.Minute) // completed
	step()
	require.NoError(t, st.Complete(ctx, a.ID, a.Lease, nil))
	b := fetch(time.Minute) // failed, retry later
	step()
	_, err = st.Fail(ctx, b.ID, b.Lease, store.Failure{ErrorType: task.ErrTypeServiceUnavailable, Message: "503", Attempt: 1, RetryAt: clk.Now().Add(time.Hour)})
	require.NoError(t, err)
	c := fetch(time.Minute) // failed, retry due at once, promoted, PENDING again
	step()
	_, err = st.Fail(ctx, c.ID, c.Lease, store.Failure{ErrorType: task.ErrTypeServiceUnavailable, Message: "503", Attempt: 1, RetryAt: clk.Now()})
	require.NoError(t, err)
	step()
	_, err = st.PromoteDue(ctx, 100)
	require.NoError(t, err)
	d := fetch(time.Minute) // dead-lettered, then retried by hand
	step()
	_, err = st.Fail(ctx, d.ID, d.Lease, store.Failure{ErrorType: task.ErrTypeInvalidInput, Message: "400", Permanent: true, Attempt: 1})
	require.NoError(t, err)
	e := fetch(time.Minute) // released to wait an hour (a breaker wait)
	step()
	require.NoError(t, st.Release(ctx, e.ID, e.Lease, clk.Now().Add(time.Hour), "breaker"))
	f := fetch(time.Minute) // timed out
	step()
	require.NoError(t, st.MarkTimeout(ctx, f.ID, f.Lease))
	g := fetch(time.Millisecond) // its worker died: reaped
	step()
	_, _, err = st.ReapExpired(ctx, 100)
	require.NoError(t, err)
	h := enqueue(store.EnqueueRequest{Type: "noop"}) // cancelled while PENDING
	step()
	_, err = st.Cancel(ctx, h.ID)
	require.NoError(t, err)
	_ = g
	x := fetch(time.Minute) // dead-lettered, stays there
	step()
	_, err = st.Fail(ctx, x.ID, x.Lease, store.Failure{ErrorType: task.ErrTypeInvalidInput, Message: "400", Permanent: true, Attempt: 1})
	require.NoError(t, err)
	step()
	require.NoError(t, st.Retry(ctx, d.ID))

	checked := map[task.State]int{}
	for _, state := range task.States {
		if state == task.StateActive {
			continue
		}
		es, _, err := st.StateIndex(ctx, state, store.ListOptions{Limit: 1000})
		require.NoError(t, err)
		for _, e := range es {
			tk, err := st.Get(ctx, e.ID)
			require.NoError(t, err)
			require.Equal(t, state, tk.State, "task %s is in the %s index", e.ID, state)
			require.LessOrEqual(t, tk.CreatedAt.UnixMilli(), e.Score, "%s %s: created_at after its score", state, e.ID)
			require.LessOrEqual(t, tk.UpdatedAt.UnixMilli(), e.Score, "%s %s: updated_at after its score", state, e.ID)
			checked[state]++
		}
	}
	for _, state := range []task.State{task.StatePending, task.StateCompleted, task.StateFailed, task.StateDLQ, task.StateTimeout, task.StateCancelled} {
		require.NotZero(t, checked[state], "no task reached %s", state)
	}
}

// A listing's summary says where the task waits and what per-key limits
// count it against, as the task's view does (the dashboard's list rows).
func TestSummaryCarriesQueueAndLimitKey(t *testing.T) {
	sm := service.SummaryOf(&task.Task{ID: "t1", Type: "noop", Queue: "emails", LimitKey: "tenant-42"})
	require.Equal(t, "emails", sm.Queue)
	require.Equal(t, "tenant-42", sm.LimitKey)
	b, err := json.Marshal(service.SummaryOf(&task.Task{ID: "t2", Type: "noop"}))
	require.NoError(t, err)
	require.NotContains(t, string(b), "limit_key", "no limit key: left out")
}
