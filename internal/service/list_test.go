package service_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/service"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/task"
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
