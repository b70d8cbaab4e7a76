package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestDispatchManyIsOneStep: with one partition the place, the token, the
// task.create and the handoff are one script call per batch
// (store.DispatchMany), each attempt all or nothing:
//   - a dispatched attempt is handed off (the task is ACTIVE with the same
//     token, held by the external path, in the watcher's index) in the
//     same call that published its event;
//   - an attempt whose task was asked to cancel first is not published:
//     the worker ends it CANCELLED (a task.CancelError);
//   - an attempt that is no longer the worker's (another token) is
//     neither published nor handed off;
//   - a full type writes nothing at all;
//   - attempts dispatched at once share the call, each answered alone.
func TestDispatchManyIsOneStep(t *testing.T) {
	t.Parallel()
	rdb, ns, st, d := oneStepRig(t, Config{InFlight: 3})
	ctx := context.Background()
	sk := protocol.NewKeys(ns)
	fetch := func(n int) []*task.Task { return fetched(t, st, n) }
	event := func(tk *task.Task) protocol.Event { return createOf(t, tk) }
	creates := func() int64 {
		n, err := rdb.XLen(ctx, sk.Create()).Result()
		require.NoError(t, err)
		return n
	}

	// three attempts at once: one call, all published and handed off
	ts := fetch(3)
	errs := make(chan error, len(ts))
	for _, tk := range ts {
		go func() {
			_, ok, err := d.publish(ctx, tk, event(tk), time.Minute, 3)
			if err == nil && !ok {
				err = errors.New("not admitted")
			}
			errs <- err
		}()
	}
	for range ts {
		require.NoError(t, <-errs)
	}
	require.EqualValues(t, 3, creates())
	// what the script derives from the timeout (a minute) and the grace
	// (the default 30 s): the lease deadline and the in-flight place's,
	// timeout + grace; the first check, the sooner of now + grace and the
	// timeout; and the events' shared type and timestamp
	after := time.Now()
	within := func(what string, got float64, from, to time.Time) {
		t.Helper()
		require.GreaterOrEqual(t, int64(got), from.UnixMilli(), what)
		require.LessOrEqual(t, int64(got), to.UnixMilli(), what)
	}
	start := after.Add(-10 * time.Second)
	p := ns.PartitionPrefixes(1)[0]
	for _, tk := range ts {
		lease, err := rdb.ZScore(ctx, p+"tasks:active", tk.ID).Result()
		require.NoError(t, err)
		within("lease deadline", lease, start.Add(90*time.Second), after.Add(90*time.Second))
		place, err := rdb.ZScore(ctx, newKeys(ns).inflight("x.run"), inflightMember(tk.ID, tk.Lease)).Result()
		require.NoError(t, err, "the place's member is dispatch's inflightMember")
		require.Equal(t, lease, place, "the place lasts as long as the lease")
	}
	checks, err := rdb.ZRangeWithScores(ctx, p+"tasks:handoff", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, checks, 3)
	for _, c := range checks {
		within("first check", c.Score, start.Add(30*time.Second), after.Add(30*time.Second))
	}
	entries, err := rdb.XRange(ctx, sk.Create(), "-", "+").Result()
	require.NoError(t, err)
	for _, e := range entries {
		ev, err := protocol.Decode(e.ID, e.Values)
		require.NoError(t, err)
		require.Equal(t, protocol.TypeCreate, ev.Type)
		require.WithinDuration(t, after, ev.Timestamp, 10*time.Second)
	}
	for _, tk := range ts {
		got, err := st.Get(ctx, tk.ID)
		require.NoError(t, err)
		require.Equal(t, task.StateActive, got.State)
		require.True(t, got.HandedOff, "handed off in the call that published it")
		require.Equal(t, tk.Lease, got.Lease)
		require.Contains(t, got.Worker, "external:x.run")
		tok, err := LastToken(ctx, st, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tk.Lease, tok)
	}

	// the type is full: nothing written for the fourth
	more := fetch(3)
	full, cancelled, gone := more[0], more[1], more[2]
	_, ok, err := d.publish(ctx, full, event(full), time.Minute, 3)
	require.NoError(t, err)
	require.False(t, ok)
	require.EqualValues(t, 3, creates())
	got, err := st.Get(ctx, full.ID)
	require.NoError(t, err)
	require.False(t, got.HandedOff)
	tok, err := LastToken(ctx, st, full.ID)
	require.NoError(t, err)
	require.Empty(t, tok)

	// a cancel requested before the dispatch: not published, cancelled
	out, err := st.Cancel(ctx, cancelled.ID)
	require.NoError(t, err)
	require.Equal(t, store.CancelRequested, out)
	_, ok, err = d.publish(ctx, cancelled, event(cancelled), time.Minute, -1)
	var ce *task.CancelError
	require.ErrorAs(t, err, &ce)
	require.False(t, ok)
	require.EqualValues(t, 3, creates())

	// an attempt whose lease is another's (a stale token): nothing to
	// dispatch
	stale := *gone
	stale.Lease = gone.Lease + "-stale"
	_, ok, err = d.publish(ctx, &stale, event(&stale), time.Minute, -1)
	require.ErrorIs(t, err, worker.ErrHandedOff)
	require.False(t, ok)
	require.EqualValues(t, 3, creates())

	// a place freed lets the waiting one through
	require.NoError(t, Release(ctx, rdb, ns, "x.run", ts[0].ID, ts[0].Lease))
	_, ok, err = d.publish(ctx, full, event(full), time.Minute, 3)
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 4, creates())
}

// TestCompletionRemovesTheHandoffEntry: the completion of a handed-off
// attempt removes its entry from the watcher's index in the same call
// (complete.lua, by the task's `handoff` token and `hto` timeout), also
// after the attempt timed out; an attempt completed under another token
// (a stale one) leaves the index alone, and an entry left there (another
// transition's end) is still the watcher's to drop.
func TestCompletionRemovesTheHandoffEntry(t *testing.T) {
	t.Parallel()
	rdb, ns, st, d := oneStepRig(t, Config{InFlight: -1})
	ctx := context.Background()
	index := ns.PartitionPrefixes(1)[0] + "tasks:handoff"
	entries := func() []string {
		t.Helper()
		es, err := rdb.ZRange(ctx, index, 0, -1).Result()
		require.NoError(t, err)
		return es
	}
	ts := fetched(t, st, 3)
	for _, tk := range ts {
		_, ok, err := d.publish(ctx, tk, createOf(t, tk), time.Minute, -1)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.Len(t, entries(), 3)

	// completed while ACTIVE: its entry goes with it
	require.NoError(t, st.Complete(ctx, ts[0].ID, ts[0].Lease, json.RawMessage(`{}`)))
	require.Len(t, entries(), 2)
	for _, e := range entries() {
		require.NotContains(t, e, ts[0].ID)
	}
	// a stale token's completion is refused and removes nothing
	require.ErrorIs(t, st.Complete(ctx, ts[1].ID, ts[1].Lease+"-stale", json.RawMessage(`{}`)), task.ErrLeaseLost)
	require.Len(t, entries(), 2)
	// timed out, then completed late: its entry goes with the completion
	require.NoError(t, st.MarkTimeout(ctx, ts[1].ID, ts[1].Lease))
	require.Len(t, entries(), 2, "TIMEOUT keeps the entry: the watcher still looks after the attempt")
	require.NoError(t, st.Complete(ctx, ts[1].ID, ts[1].Lease, json.RawMessage(`{}`)))
	require.Equal(t, []string{ts[2].ID + " " + ts[2].Lease}, cut(entries()))
}

// cut keeps the "<id> <token>" of each handoff index entry.
func cut(es []string) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e[:strings.LastIndexByte(e, ' ')]
	}
	return out
}

// TestBatchGoesInFetchOrder: the attempts of one DispatchMany batch are
// published in their worker's hand-off order (the fetch's, by priority
// weight), whatever order their goroutines joined the batch in; the
// attempts dispatched from a slot (no order: they waited) go first.
func TestBatchGoesInFetchOrder(t *testing.T) {
	t.Parallel()
	rdb, ns, st, d := oneStepRig(t, Config{InFlight: -1})
	ctx := context.Background()
	const n = 6
	ts := fetched(t, st, n)
	// joined in this order, with these places in the hand-off order
	seqs := []uint64{5, 3, 0, 6, 1, 4}
	cs := make([]*dispatchCall, n)
	for i, tk := range ts {
		e := createOf(t, tk)
		cs[i] = &dispatchCall{req: store.DispatchRequest{ID: tk.ID, Token: tk.Lease, Holder: holder(tk), TimeoutAt: time.Now().Add(time.Minute),
			Inflight: newKeys(ns).inflight(tk.Type), Bound: -1, EventID: e.ID, Data: string(e.Data)}, seq: seqs[i]}
	}
	want := slices.Clone(cs)
	slices.SortFunc(want, func(a, b *dispatchCall) int { return cmp.Compare(a.seq, b.seq) })
	d.combined.Run(cs)
	xs, err := rdb.XRange(ctx, protocol.NewKeys(ns).Create(), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, xs, n)
	for i, x := range xs {
		e, err := protocol.Decode(x.ID, x.Values)
		require.NoError(t, err)
		require.Equal(t, want[i].req.EventID, e.ID, "entry %d", i)
		require.True(t, want[i].res.Published, "each call answered as its own")
	}
}

// oneStepRig is a store of one partition and a dispatcher on it.
func oneStepRig(t testing.TB, cfg Config) (redis.UniversalClient, keyspace.Namespace, *store.Store, *Dispatcher) {
	t.Helper()
	rdb, name := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: name})
	require.NoError(t, err)
	require.True(t, st.CanDispatch())
	return rdb, keyspace.MustParse(name), st, New(st, cfg)
}

// fetched enqueues n tasks of x.run and fetches them, as worker w1.
func fetched(t *testing.T, st *store.Store, n int) []*task.Task {
	t.Helper()
	ctx := context.Background()
	for range n {
		_, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "x.run", Params: json.RawMessage(`{}`), Timeout: time.Minute})
		require.NoError(t, err)
	}
	got, err := st.Fetch(ctx, store.FetchRequest{N: n, WorkerID: "w1", TokenPrefix: "w1/" + time.Now().Format("150405.000000000"), Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, n)
	return got
}

// createOf is tk's task.create, its first attempt.
func createOf(t testing.TB, tk *task.Task) protocol.Event {
	t.Helper()
	e, err := protocol.New(protocol.TypeCreate, time.Now(), protocol.CreateData{TaskID: tk.ID, TaskType: tk.Type,
		Params: json.RawMessage(`{}`), Timeout: 60, Priority: "normal", CreatedBy: "agent", Attempt: 1, Token: tk.Lease})
	require.NoError(t, err)
	return e
}
