package store

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/eventlog"
	"github.com/taskflow/taskflow/task"
)

// The queue-driven transitions (fetch, promote, reap, sweep) learn their
// ids from a queue, the scheduled set, the lease set or the PENDING index,
// and an entry there can be stale: its task moved on (cancelled, deleted,
// retried by hand, finished) or is gone. Each script checks the state the
// task is in and only drops such an entry. These tests plant stale entries
// for tasks in every other state, run the transition, and require that
// each task, its DLQ snapshot, its queue and index entries, the counters and
// the event stream are exactly as before the entry was planted (so the
// stale entry is gone too), and that running the step again does nothing.

// staleTasks creates one task in each of states (id = the state's name)
// and returns the snapshot of each, taken before anything is planted.
func (b *testBundle) staleTasks(t *testing.T, states ...task.State) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, s := range states {
		b.put(t, string(s), s)
	}
	for _, s := range states {
		out[string(s)] = b.snapshot(t, string(s))
	}
	return out
}

func (b *testBundle) requireUnchanged(t *testing.T, before map[string]map[string]string) {
	t.Helper()
	for id, snap := range before {
		require.Equal(t, snap, b.snapshot(t, id), "task %s changed, or its stale entry stayed", id)
	}
}

func TestFetchDropsStaleIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.staleTasks(t, task.StateActive, task.StateCompleted, task.StateFailed, task.StateDLQ,
		task.StateTimeout, task.StateCancelled)
	high, normal, retry := b.s.parts[0].primary(task.PriorityHigh), b.s.parts[0].primary(task.PriorityNormal), b.s.parts[0].retry()
	require.NoError(t, b.rdb.RPush(b.ctx, normal, "ACTIVE", "COMPLETED", "FAILED", "DLQ", "TIMEOUT", "CANCELLED", "gone").Err())
	require.NoError(t, b.rdb.RPush(b.ctx, retry, "COMPLETED", "FAILED").Err())
	require.NoError(t, b.rdb.RPush(b.ctx, high, "CANCELLED").Err())

	require.Empty(t, b.fetch(t, 50), "no stale id is started")
	b.requireUnchanged(t, before)
	n, err := b.rdb.LLen(b.ctx, high).Result()
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, b.fetch(t, 50), "again: nothing")
	b.requireUnchanged(t, before)

	// a stale id in front of a live one: the live one is started
	h, err := b.rdb.HGetAll(b.ctx, b.s.parts[0].task("COMPLETED")).Result()
	require.NoError(t, err)
	require.NoError(t, b.rdb.RPush(b.ctx, normal, "COMPLETED").Err())
	b.enqueue(t, EnqueueRequest{ID: "live"})
	require.Equal(t, []string{"live"}, ids(b.fetch(t, 10)))
	h2, err := b.rdb.HGetAll(b.ctx, b.s.parts[0].task("COMPLETED")).Result()
	require.NoError(t, err)
	require.Equal(t, h, h2)
	qs := b.status(t)
	require.Zero(t, qs.Primary+qs.Retry)
	require.Equal(t, int64(2), qs.States[task.StateActive], "ACTIVE and live")
}

func TestPromoteDropsStaleEntries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.staleTasks(t, task.StateActive, task.StateCompleted, task.StateDLQ, task.StateTimeout, task.StateCancelled)
	sched := b.s.parts[0].scheduled()
	for _, id := range []string{"ACTIVE", "COMPLETED", "DLQ", "TIMEOUT", "CANCELLED", "gone"} {
		require.NoError(t, b.rdb.ZAdd(b.ctx, sched, redis.Z{Score: 1, Member: id}).Err())
	}
	n, err := b.s.PromoteDue(b.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 6, n, "every due entry handled")
	b.requireUnchanged(t, before)
	n, err = b.s.PromoteDue(b.ctx, 100)
	require.NoError(t, err)
	require.Zero(t, n, "again: nothing")
	b.requireUnchanged(t, before)
}

func TestReapSkipsStaleLeases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// FAILED first: it is fetched before the others exist
	before := b.staleTasks(t, task.StateFailed, task.StateCompleted, task.StateDLQ, task.StateTimeout,
		task.StateCancelled, task.StatePending)
	active := b.s.parts[0].active()
	for _, id := range []string{"PENDING", "COMPLETED", "FAILED", "DLQ", "TIMEOUT", "CANCELLED", "gone"} {
		require.NoError(t, b.rdb.ZAdd(b.ctx, active, redis.Z{Score: 1, Member: id}).Err())
	}
	reaped, handled, err := b.s.ReapExpired(b.ctx, 100)
	require.NoError(t, err)
	require.Empty(t, reaped, "no stale entry counts as reaped")
	require.Equal(t, 7, handled)
	b.requireUnchanged(t, before)
	require.Zero(t, b.status(t).States[task.StateActive])
	reaped, handled, err = b.s.ReapExpired(b.ctx, 100)
	require.NoError(t, err)
	require.Empty(t, reaped)
	require.Zero(t, handled, "again: nothing")
	b.requireUnchanged(t, before)
}

func TestSweepSkipsStaleIndexEntries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.staleTasks(t, task.StateActive, task.StateCompleted, task.StateFailed, task.StateDLQ,
		task.StateTimeout, task.StateCancelled)
	idx := b.s.parts[0].stateIndex(task.StatePending)
	for _, id := range []string{"ACTIVE", "COMPLETED", "FAILED", "DLQ", "TIMEOUT", "CANCELLED", "gone"} {
		require.NoError(t, b.rdb.ZAdd(b.ctx, idx, redis.Z{Score: 1, Member: id}).Err())
	}
	n, err := b.s.SweepAged(b.ctx, 100)
	require.NoError(t, err)
	require.Zero(t, n, "nothing dead-lettered")
	b.requireUnchanged(t, before)
	require.Zero(t, b.status(t).States[task.StatePending])
	n, err = b.s.SweepAged(b.ctx, 100)
	require.NoError(t, err)
	require.Zero(t, n)
	b.requireUnchanged(t, before)
}

// wantEvent is one expected lifecycle event.
type wantEvent struct {
	id       string
	from, to task.State
}

// eventsSince returns the events written after the first skip ones, and
// the new total.
func (b *testBundle) eventsSince(t *testing.T, skip int) ([]eventlog.Event, int) {
	t.Helper()
	all, _, err := b.s.Events().Read(b.ctx, "0", 100000, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(all), skip)
	return all[skip:], len(all)
}

// requireEvents: the step wrote exactly want, in order, stamped with the
// store clock's now, and each event is the task's latest state-history
// entries (the event and the history tell the same story).
func (b *testBundle) requireEvents(t *testing.T, seen *int, want ...wantEvent) {
	t.Helper()
	got, n := b.eventsSince(t, *seen)
	*seen = n
	require.Len(t, got, len(want), "events: %+v", got)
	perTask := map[string][]task.StateChange{}
	for i, w := range want {
		e := got[i]
		require.Equal(t, w.id, e.TaskID, "event %d", i)
		require.Equal(t, w.from, e.From, "event %d of %s", i, w.id)
		require.Equal(t, w.to, e.To, "event %d of %s", i, w.id)
		require.Equal(t, b.clk.Now(), e.At, "event %d of %s", i, w.id)
		require.Equal(t, "noop", e.TaskType)
		if _, ok := perTask[w.id]; !ok {
			tk, err := b.s.Get(b.ctx, w.id)
			require.NoError(t, err)
			perTask[w.id] = tk.StateHistory
		}
	}
	// the last k events of a task are the last k entries of its history
	k := map[string]int{}
	for _, w := range want {
		k[w.id]++
	}
	seenOf := map[string]int{}
	for _, w := range want {
		h := perTask[w.id]
		c := h[len(h)-k[w.id]+seenOf[w.id]]
		seenOf[w.id]++
		require.Equal(t, w.from, c.From, "history of %s", w.id)
		require.Equal(t, w.to, c.To, "history of %s", w.id)
		require.Equal(t, b.clk.Now(), c.At, "history of %s", w.id)
	}
}

// TestQueueDrivenEvents: fetch, promote, reap and sweep emit the lifecycle
// event of each transition they make (and fail its FAILED → DLQ pair), in
// the order they make them, matching the task's state history.
func TestQueueDrivenEvents(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.RetryRatio = new(1.0) }) // a due retry goes first
	_, seen := b.eventsSince(t, 0)
	b.enqueue(t, EnqueueRequest{ID: "a"})
	b.enqueue(t, EnqueueRequest{ID: "b"})
	b.requireEvents(t, &seen, wantEvent{"a", "", task.StatePending}, wantEvent{"b", "", task.StatePending})

	b.clk.Advance(time.Second)
	a := b.fetchOne(t)
	b.requireEvents(t, &seen, wantEvent{"a", task.StatePending, task.StateActive})

	_, err := b.s.Fail(b.ctx, "a", a.Lease, Failure{ErrorType: "Default", Message: "x", RetryAt: b.clk.Now().Add(time.Second), Attempt: 1})
	require.NoError(t, err)
	b.requireEvents(t, &seen, wantEvent{"a", task.StateActive, task.StateFailed})

	b.clk.Advance(time.Second)
	_, err = b.s.PromoteDue(b.ctx, 10)
	require.NoError(t, err)
	b.requireEvents(t, &seen, wantEvent{"a", task.StateFailed, task.StatePending})

	a = b.fetchOne(t)
	require.Equal(t, "a", a.ID)
	b.requireEvents(t, &seen, wantEvent{"a", task.StatePending, task.StateActive})
	_, err = b.s.Fail(b.ctx, "a", a.Lease, Failure{ErrorType: "InvalidInput", Message: "400", Permanent: true, Attempt: 2})
	require.NoError(t, err)
	b.requireEvents(t, &seen, wantEvent{"a", task.StateActive, task.StateFailed}, wantEvent{"a", task.StateFailed, task.StateDLQ})

	// reap: lease expired → PENDING; with a cancel request → CANCELLED
	bt := b.fetchOne(t)
	require.Equal(t, "b", bt.ID)
	b.requireEvents(t, &seen, wantEvent{"b", task.StatePending, task.StateActive})
	b.clk.Advance(31 * time.Second)
	_, _, err = b.s.ReapExpired(b.ctx, 10)
	require.NoError(t, err)
	b.requireEvents(t, &seen, wantEvent{"b", task.StateActive, task.StatePending})
	b.fetchOne(t)
	b.requireEvents(t, &seen, wantEvent{"b", task.StatePending, task.StateActive})
	_, err = b.s.Cancel(b.ctx, "b")
	require.NoError(t, err)
	b.requireEvents(t, &seen) // a request only: no transition yet
	b.clk.Advance(31 * time.Second)
	_, _, err = b.s.ReapExpired(b.ctx, 10)
	require.NoError(t, err)
	b.requireEvents(t, &seen, wantEvent{"b", task.StateActive, task.StateCancelled})

	// the max-age rule: swept while waiting, at pickup, and when a retry
	// falls due
	b.enqueue(t, EnqueueRequest{ID: "e"})
	e := b.fetchOne(t)
	_, err = b.s.Fail(b.ctx, "e", e.Lease, Failure{ErrorType: "Default", Message: "x", RetryAt: b.clk.Now().Add(2 * time.Hour), Attempt: 1})
	require.NoError(t, err)
	b.enqueue(t, EnqueueRequest{ID: "c"})
	_, seen = b.eventsSince(t, 0)
	b.clk.Advance(time.Hour)
	n, err := b.s.SweepAged(b.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	b.requireEvents(t, &seen, wantEvent{"c", task.StatePending, task.StateDLQ})

	b.enqueue(t, EnqueueRequest{ID: "d"})
	_, seen = b.eventsSince(t, 0)
	b.clk.Advance(time.Hour)
	require.Empty(t, b.fetch(t, 1))
	b.requireEvents(t, &seen, wantEvent{"d", task.StatePending, task.StateDLQ})

	_, err = b.s.PromoteDue(b.ctx, 10)
	require.NoError(t, err)
	b.requireEvents(t, &seen, wantEvent{"e", task.StateFailed, task.StateDLQ})
	require.Equal(t, int64(4), b.status(t).States[task.StateDLQ])
}
