package maintenance

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// TestTwoSchedulersRacing runs two schedulers (each with its own store, as
// two processes would) over the same due retries, expired leases and
// too-old tasks, and checks each task was moved exactly once.
func TestTwoSchedulersRacing(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	mk := func() *store.Store {
		st, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk})
		require.NoError(t, err)
		return st
	}
	st := mk()
	ctx := context.Background()
	const failed, leased, old = 3000, 1000, 500
	var reqs []store.EnqueueRequest
	for i := 0; i < failed+leased; i++ {
		reqs = append(reqs, store.EnqueueRequest{ID: fmt.Sprintf("t%05d", i), Type: "noop"})
	}
	_, err := st.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)
	var held []*task.Task
	for len(held) < failed+leased {
		got, err := st.Fetch(ctx, store.FetchRequest{N: 500, WorkerID: "w", TokenPrefix: fmt.Sprint(len(held)), Lease: time.Minute})
		require.NoError(t, err)
		held = append(held, got...)
	}
	for _, tk := range held[:failed] {
		_, err := st.Fail(ctx, tk.ID, tk.Lease, store.Failure{ErrorType: "Default", Message: "x", RetryAt: clk.Now().Add(time.Second)})
		require.NoError(t, err)
	}
	clk.Advance(2 * time.Minute) // retries due, leases expired
	var olds []store.EnqueueRequest
	for i := 0; i < old; i++ {
		olds = append(olds, store.EnqueueRequest{ID: fmt.Sprintf("o%05d", i), Type: "noop"})
	}
	_, err = st.EnqueueBatch(ctx, olds)
	require.NoError(t, err)
	clk.Advance(2 * time.Hour) // the old ones are past the max age; so are the others, but only PENDING ones in queues are swept

	var wg sync.WaitGroup
	results := make([]TickResult, 2)
	for i := range results {
		s, err := New(mk(), Config{Batch: 100, MaxBatchesPerTick: 1000})
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Tick(ctx)
			require.NoError(t, err)
			results[i] = r
		}()
	}
	wg.Wait()

	total := TickResult{}
	for _, r := range results {
		total.Promoted += r.Promoted
		total.Reaped += r.Reaped
		total.DeadLettered += r.DeadLettered
	}
	require.Equal(t, failed, total.Promoted, "each due retry promoted once")
	require.Equal(t, leased, total.Reaped, "each expired lease reaped once")
	// the sweep dead-letters only the old PENDING tasks: the reaped ones
	// entered PENDING now (their wait starts again); the promoted retries
	// were dead-lettered by promote (max age), counted as promoted
	require.Equal(t, old, total.DeadLettered, "each old task swept once")

	qs, err := st.QueueStatus(ctx)
	require.NoError(t, err)
	// promoted FAILED tasks were older than the max age when due: DLQ'd by
	// promote; reaped tasks went back PENDING and then the sweep took the
	// ones it could see as too old. Every task is in exactly one place.
	var sum int64
	for _, n := range qs.States {
		sum += n
	}
	require.Equal(t, int64(failed+leased+old), sum)
	require.Equal(t, int64(failed+old), qs.States[task.StateDLQ], "the promoted retries and the old tasks")
	require.Equal(t, int64(leased), qs.States[task.StatePending], "the reaped tasks")
	require.Equal(t, int64(leased), qs.Primary, "each reaped task queued once")
	require.Zero(t, qs.Retry+qs.Scheduled)
	require.Equal(t, int64(failed+old), qs.DLQ)
	seen := map[string]bool{}
	for off := 0; off < failed+old; off += 1000 {
		ids, _, err := st.QueueContents(ctx, store.QueueDLQ, store.ListOptions{Limit: 1000, Offset: off})
		require.NoError(t, err)
		for _, id := range ids {
			require.False(t, seen[id], "DLQ holds %s twice", id)
			seen[id] = true
		}
	}
	require.Len(t, seen, failed+old)
	for i := 0; i < failed+leased; i++ {
		id := fmt.Sprintf("t%05d", i)
		require.Equal(t, i < failed, seen[id], "%s: a promoted retry is dead-lettered, a reaped task is not", id)
	}
	for i := 0; i < old; i++ {
		require.True(t, seen[fmt.Sprintf("o%05d", i)])
	}
}

func TestRunPromotesWithinASecond(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	ctx := context.Background()
	s, err := New(st, Config{})
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	// due while the scheduler runs: promoted by its next tick, at most one
	// Interval (500 ms) later; the bound allows a second for the promise
	// ("at least once a second") and 250 ms to observe it on a busy machine
	due := time.Now().Add(300 * time.Millisecond)
	_, err = st.Enqueue(ctx, store.EnqueueRequest{ID: "soon", Type: "noop", RunAt: due})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		qs, err := st.QueueStatus(ctx)
		return err == nil && qs.Primary == 1 && qs.Scheduled == 0
	}, 5*time.Second, 5*time.Millisecond)
	late := time.Since(due)
	t.Logf("promoted %s after it was due", late)
	require.Less(t, late, 1250*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.Error(t, Config{Interval: 2 * time.Second}.WithDefaults().Validate())
	require.Error(t, Config{Batch: -1}.WithDefaults().Validate())
	require.NoError(t, Config{}.WithDefaults().Validate())
}

// TestRetention: finished tasks are deleted when their retention has
// passed, by the injected clock — COMPLETED and CANCELLED after Retention,
// DLQ (with its list entry and snapshot) after DLQRetention — in bounded
// batches by several schedulers at once, each task once; live tasks and
// young finished ones stay.
func TestRetention(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	st, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk, DefaultMaxRetries: new(0)})
	require.NoError(t, err)
	ctx := context.Background()
	const done, cancelled, dead = 1200, 300, 200
	var reqs []store.EnqueueRequest
	for i := 0; i < done+cancelled+dead+1; i++ {
		reqs = append(reqs, store.EnqueueRequest{ID: fmt.Sprintf("r%05d", i), Type: "noop"})
	}
	_, err = st.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)
	for i := done; i < done+cancelled; i++ {
		_, err := st.Cancel(ctx, fmt.Sprintf("r%05d", i))
		require.NoError(t, err)
	}
	var held []*task.Task
	for len(held) < done+dead+1 {
		got, err := st.Fetch(ctx, store.FetchRequest{N: 500, WorkerID: "w", TokenPrefix: fmt.Sprint(len(held)), Lease: 72 * time.Hour})
		require.NoError(t, err)
		require.NotEmpty(t, got)
		held = append(held, got...)
	}
	var cs []store.Completion
	for _, tk := range held[:done] {
		cs = append(cs, store.Completion{ID: tk.ID, Token: tk.Lease})
	}
	_, err = st.CompleteBatch(ctx, cs)
	require.NoError(t, err)
	for _, tk := range held[done : done+dead] {
		_, err := st.Fail(ctx, tk.ID, tk.Lease, store.Failure{ErrorType: "InvalidInput", Message: "bad", Permanent: true})
		require.NoError(t, err)
	}
	live := held[done+dead] // stays ACTIVE throughout
	qs, err := st.QueueStatus(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(dead), qs.DLQ)

	clk.Advance(time.Hour)
	young, err := st.Enqueue(ctx, store.EnqueueRequest{ID: "young", Type: "noop"})
	require.NoError(t, err)
	_, err = st.Cancel(ctx, young.ID)
	require.NoError(t, err)

	cfg := Config{Batch: 100, MaxBatchesPerTick: 3} // 300 per step per tick: bounded
	s1, err := New(st, cfg)
	require.NoError(t, err)
	st2, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk})
	require.NoError(t, err)
	s2, err := New(st2, cfg)
	require.NoError(t, err)

	tick := func() int {
		var wg sync.WaitGroup
		var rs [2]TickResult
		var errs [2]error
		for i, s := range []*Scheduler{s1, s2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rs[i], errs[i] = s.Tick(ctx)
			}()
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs[:]...))
		return rs[0].Purged + rs[1].Purged
	}
	require.Zero(t, tick(), "nothing is older than 24 h yet")

	clk.Advance(23*time.Hour + time.Minute) // the first batch is 24 h old; "young" is not
	purged := 0
	for range 10 {
		n := tick()
		require.LessOrEqual(t, n, 2*3*100*2, "bounded per tick (two schedulers, two states)")
		purged += n
	}
	require.Equal(t, done+cancelled, purged, "each finished task deleted once")
	for _, id := range []string{"r00000", fmt.Sprintf("r%05d", done)} {
		_, err := st.Get(ctx, id)
		require.ErrorIs(t, err, task.ErrNotFound)
	}
	for _, id := range []string{"young", live.ID, held[done].ID} {
		_, err := st.Get(ctx, id)
		require.NoError(t, err, "%s stays", id)
	}
	qs, err = st.QueueStatus(ctx)
	require.NoError(t, err)
	require.Zero(t, qs.States[task.StateCompleted])
	require.Equal(t, int64(1), qs.States[task.StateCancelled], "only the young one")
	require.Equal(t, int64(dead), qs.States[task.StateDLQ], "DLQ keeps 7 days")
	require.Equal(t, int64(1), qs.States[task.StateActive])

	clk.Advance(6 * 24 * time.Hour)
	purged = 0
	for range 5 {
		purged += tick()
	}
	require.Equal(t, dead+1, purged, "the DLQ after 7 days, and the young cancelled one")
	qs, err = st.QueueStatus(ctx)
	require.NoError(t, err)
	require.Zero(t, qs.DLQ, "the DLQ list is empty")
	require.Zero(t, qs.States[task.StateDLQ])
	entries, total, err := st.ListDLQ(ctx, store.ListOptions{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, entries)
	require.Zero(t, total)
	_, err = st.Get(ctx, live.ID)
	require.NoError(t, err, "an ACTIVE task is never purged")
}

// TestRetentionOff: a negative retention keeps finished tasks forever.
func TestRetentionOff(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	st, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	tk, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "noop"})
	require.NoError(t, err)
	_, err = st.Cancel(ctx, tk.ID)
	require.NoError(t, err)
	s, err := New(st, Config{Retention: new(time.Duration(0)), DLQRetention: new(time.Duration(0))})
	require.NoError(t, err)
	clk.Advance(365 * 24 * time.Hour)
	r, err := s.Tick(ctx)
	require.NoError(t, err)
	require.Zero(t, r.Purged)
	_, err = st.Get(ctx, tk.ID)
	require.NoError(t, err)
}
