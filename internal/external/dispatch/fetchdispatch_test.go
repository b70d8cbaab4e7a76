package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/task"
)

// TestFetchDispatchesAsTheHandlerWould: a fetch given the dispatcher's
// plan (store.FetchAndDispatch, Plan) dispatches the tasks of its types
// in its own script call, each exactly as ProcessTask would have: the
// same task.create bytes (protocol.CreateData's encoding), the attempt
// handed off (held by the external path under the fetch's token, its
// lease deadline and in-flight place timeout + grace, its first check in
// the watcher's index), its type's bound kept. A task the script cannot
// write task.create for byte for byte (params with whitespace, a session
// needing an escape, a traceparent) or whose type is full comes back as
// a fetched task, untouched, for ProcessTask.
func TestFetchDispatchesAsTheHandlerWould(t *testing.T) {
	t.Parallel()
	rdb, ns, st, d := oneStepRig(t, Config{InFlight: 3, Grace: 20 * time.Second})
	ctx := context.Background()
	sk := protocol.NewKeys(ns)
	p := ns.PartitionPrefixes(1)[0]

	require.Nil(t, d.Plan(ctx, 8), "no type dispatched yet: nothing planned")
	d.bound(ctx, "x.run") // as its first ProcessTask does
	enqueue := func(r store.EnqueueRequest) *task.Task {
		t.Helper()
		r.Type = "x.run"
		tk, err := st.Enqueue(ctx, r)
		require.NoError(t, err)
		return tk
	}
	plain := enqueue(store.EnqueueRequest{Params: json.RawMessage(`{"a":[1,"b c"],"d":{}}`), SessionID: "sess-1",
		Priority: task.PriorityHigh, Timeout: 1500 * time.Millisecond})
	bare := enqueue(store.EnqueueRequest{}) // no params, session or timeout: the defaults
	spaced := enqueue(store.EnqueueRequest{Params: json.RawMessage(`{"a": 1}`), SessionID: "sess-1"})
	escapes := enqueue(store.EnqueueRequest{Params: json.RawMessage(`{"a":"x\" y"}`)}) // a string with an escape and a space
	traced := enqueue(store.EnqueueRequest{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	escaped := enqueue(store.EnqueueRequest{SessionID: "a<b"})
	third := enqueue(store.EnqueueRequest{Timeout: 2 * time.Second})
	over := enqueue(store.EnqueueRequest{Timeout: 2 * time.Second}) // the bound is 3

	plan := d.Plan(ctx, 9)
	require.NotNil(t, plan)
	require.Equal(t, []store.DispatchType{{Name: "x.run", Inflight: newKeys(ns).inflight("x.run"), Bound: 3}}, plan.Types)
	require.Len(t, plan.EventIDPrefix, 32)
	before := time.Now()
	got, ds, _, err := st.FetchAndDispatch(ctx, store.FetchRequest{N: 9, WorkerID: "w1", TokenPrefix: "w1/1", Lease: time.Minute}, plan)
	require.NoError(t, err)
	after := time.Now()

	ids := func(ts []*task.Task) []string {
		out := make([]string, len(ts))
		for i, tk := range ts {
			out[i] = tk.ID
		}
		return out
	}
	require.Equal(t, []string{plain.ID, bare.ID, third.ID}, dispatchedIDs(ds), "fetch order, up to the bound")
	require.Equal(t, []string{spaced.ID, escapes.ID, traced.ID, escaped.ID, over.ID}, ids(got), "the others come to ProcessTask")
	for _, tk := range got {
		require.False(t, mustGet(t, st, tk.ID).HandedOff)
	}
	for i, x := range ds {
		require.Equal(t, "x.run", x.Type)
		require.Equal(t, i+1, x.InFlight, "the count after each")
		require.Equal(t, 1, x.Attempt)
		require.True(t, x.First)
	}
	require.Equal(t, "sess-1", ds[0].SessionID)

	// the events: byte for byte what ProcessTask publishes, in order, with
	// the plan's ids and timestamp
	entries, err := rdb.XRange(ctx, sk.Create(), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 3)
	timeouts := []time.Duration{1500 * time.Millisecond, 5 * time.Minute, 2 * time.Second}
	for i, e := range entries {
		ev, err := protocol.Decode(e.ID, e.Values)
		require.NoError(t, err)
		require.Equal(t, ds[i].EntryID, e.ID)
		require.Equal(t, plan.EventIDPrefix+fmt.Sprintf("%04x", i+1), ev.ID)
		u, err := uuid.Parse(ev.ID)
		require.NoError(t, err, "a UUID")
		require.EqualValues(t, 4, u.Version())
		require.Equal(t, protocol.TypeCreate, ev.Type)
		require.Equal(t, plan.Stamp, e.Values["timestamp"])
		tk := mustGet(t, st, ds[i].ID)
		params := tk.Params
		if len(params) == 0 {
			params = json.RawMessage("null")
		}
		want, err := protocol.New(protocol.TypeCreate, time.Now(), protocol.CreateData{TaskID: tk.ID, TaskType: tk.Type,
			Params: params, SessionID: tk.SessionID, Timeout: timeouts[i].Seconds(), Priority: string(tk.Priority),
			CreatedBy: "agent", Attempt: 1, Token: ds[i].Token})
		require.NoError(t, err)
		require.Equal(t, string(want.Data), e.Values["data"], "entry %d", i)

		// handed off with its start
		require.Equal(t, task.StateActive, tk.State)
		require.True(t, tk.HandedOff)
		require.Equal(t, ds[i].Token, tk.Lease)
		require.Equal(t, "external:x.run (dispatched by w1)", tk.Worker)
		tok, err := LastToken(ctx, st, tk.ID)
		require.NoError(t, err)
		require.Equal(t, ds[i].Token, tok)
		lease, err := rdb.ZScore(ctx, p+"tasks:active", tk.ID).Result()
		require.NoError(t, err)
		require.InDelta(t, float64(before.Add(timeouts[i]+20*time.Second).UnixMilli()), lease, float64(after.Sub(before).Milliseconds()+1000))
		place, err := rdb.ZScore(ctx, newKeys(ns).inflight("x.run"), inflightMember(tk.ID, tk.Lease)).Result()
		require.NoError(t, err)
		require.Equal(t, lease, place, "the place lasts as long as the lease")
	}
	checks, err := rdb.ZRangeWithScores(ctx, p+"tasks:handoff", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, checks, 3)
	for _, c := range checks {
		m := c.Member.(string)
		id, rest, _ := strings.Cut(m, " ")
		tok, hto, _ := strings.Cut(rest, " ")
		tk := mustGet(t, st, id)
		require.Equal(t, tk.Lease, tok)
		at, err := strconv.ParseInt(hto, 10, 64)
		require.NoError(t, err)
		// the first check: the sooner of now + grace and the timeout
		require.InDelta(t, float64(min(at, before.Add(20*time.Second).UnixMilli())), c.Score, float64(after.Sub(before).Milliseconds()+1000))
	}
	n, err := InFlight(ctx, rdb, ns, "x.run", time.Now())
	require.NoError(t, err)
	require.EqualValues(t, 3, n)

	// the type full: a fetch dispatches nothing, the task comes back
	// untouched and nothing is published
	late := enqueue(store.EnqueueRequest{})
	got, ds, _, err = st.FetchAndDispatch(ctx, store.FetchRequest{N: 8, WorkerID: "w1", TokenPrefix: "w1/2", Lease: time.Minute}, d.Plan(ctx, 8))
	require.NoError(t, err)
	require.Empty(t, ds)
	require.Equal(t, []string{late.ID}, ids(got))
	creates, err := rdb.XLen(ctx, sk.Create()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 3, creates)

	// a type a dispatch of this process waits a place for is not planned:
	// its waiters go first
	d.waiters("x.run", 1)
	require.Nil(t, d.Plan(ctx, 8))
	d.waiters("x.run", -1)
	require.NotNil(t, d.Plan(ctx, 8))
}

// TestFetchDispatchedRetryIsNotCreated: a task dispatched before (a retry,
// its last dispatch's token kept) is dispatched by a fetch as a further
// attempt: First false, its attempt counted, the event's attempt too.
func TestFetchDispatchedRetryIsNotCreated(t *testing.T) {
	t.Parallel()
	rdb, ns, st, d := oneStepRig(t, Config{InFlight: -1})
	ctx := context.Background()
	d.bound(ctx, "x.run")
	tk := fetched(t, st, 1)[0]
	_, ok, err := d.publish(ctx, tk, createOf(t, tk), time.Minute, -1)
	require.NoError(t, err)
	require.True(t, ok)
	// the attempt fails transiently: the task is PENDING again, due now
	fo, err := st.Fail(ctx, tk.ID, tk.Lease, store.Failure{ErrorType: "ServiceUnavailable", Message: "down", Attempt: 1, Worker: "w1"})
	require.NoError(t, err)
	require.Equal(t, task.StateFailed, fo.State)
	n, err := st.PromoteDue(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got, ds, _, err := st.FetchAndDispatch(ctx, store.FetchRequest{N: 1, WorkerID: "w2", TokenPrefix: "w2/1", Lease: time.Minute}, d.Plan(ctx, 1))
	require.NoError(t, err)
	require.Empty(t, got)
	require.Len(t, ds, 1)
	require.False(t, ds[0].First)
	require.Equal(t, 2, ds[0].Attempt)
	require.Equal(t, -1, ds[0].InFlight, "unbounded")
	xs, err := rdb.XRevRangeN(ctx, protocol.NewKeys(ns).Create(), "+", "-", 1).Result()
	require.NoError(t, err)
	ev, err := protocol.Decode(xs[0].ID, xs[0].Values)
	require.NoError(t, err)
	var cd protocol.CreateData
	require.NoError(t, json.Unmarshal(ev.Data, &cd))
	require.Equal(t, 2, cd.Attempt)
	require.Equal(t, ds[0].Token, cd.Token)
}

func mustGet(t *testing.T, st *store.Store, id string) *task.Task {
	t.Helper()
	tk, err := st.Get(context.Background(), id)
	require.NoError(t, err)
	return tk
}

func dispatchedIDs(ds []store.Dispatched) []string {
	out := make([]string, len(ds))
	for i, x := range ds {
		out[i] = x.ID
	}
	return out
}

// TestFreedPlaceWakesTheWaiter: a dispatch waiting for a place of a full
// type asks again as soon as a place is freed (Release announces it on
// FreedChannel), not at its next look (AdmitPoll, a minute here), and the
// announcement's subscriber stops once no dispatch waits.
func TestFreedPlaceWakesTheWaiter(t *testing.T) {
	t.Parallel()
	rdb, ns, st, d := oneStepRig(t, Config{InFlight: 1, AdmitPoll: time.Minute, AdmitWait: 5 * time.Minute})
	ctx := context.Background()
	ts := fetched(t, st, 2)
	first, second := ts[0], ts[1]
	_, err := d.dispatch(ctx, first, createOf(t, first), time.Minute)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := d.dispatch(ctx, second, createOf(t, second), time.Minute)
		done <- err
	}()
	// waiting (the type is full) and subscribed
	require.Eventually(t, func() bool {
		n, err := rdb.PubSubNumSub(ctx, FreedChannel(ns)).Result()
		return err == nil && n[FreedChannel(ns)] == 1 && d.waiters("x.run", 0) == 1
	}, 10*time.Second, 5*time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("dispatched while its type was full: %v", err)
	default:
	}
	require.NoError(t, Release(ctx, rdb, ns, "x.run", first.ID, first.Lease))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the freed place did not wake the waiting dispatch (its next look is a minute away)")
	}
	tok, err := LastToken(ctx, st, second.ID)
	require.NoError(t, err)
	require.Equal(t, second.Lease, tok)
	require.Eventually(t, func() bool {
		n, err := rdb.PubSubNumSub(ctx, FreedChannel(ns)).Result()
		return err == nil && n[FreedChannel(ns)] == 0
	}, 10*time.Second, 5*time.Millisecond, "no one waits: unsubscribed")
}
