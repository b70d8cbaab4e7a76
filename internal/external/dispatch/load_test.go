package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// newTestDispatcher is a dispatcher of a fresh namespace bounded to
// inFlight attempts per type.
//
// Its store has two partitions, so the dispatcher takes the two-step path
// (dispatch.lua here, then the store's handoff): these tests call publish
// with attempts of tasks that are not in the store. The one-script path of
// a single partition (store.DispatchMany) is TestDispatchManyIsOneStep's.
func newTestDispatcher(t *testing.T, inFlight int) (*Dispatcher, redis.UniversalClient, keyspace.Namespace) {
	t.Helper()
	rdb, name := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: name, Partitions: 2})
	require.NoError(t, err)
	return New(st, Config{InFlight: inFlight}), rdb, keyspace.MustParse(name)
}

// createEvent is the task.create of attempt token of task id.
func createEvent(t *testing.T, id, token string) (*task.Task, protocol.Event) {
	t.Helper()
	tk := &task.Task{ID: id, Type: "x.run", Lease: token}
	e, err := protocol.New(protocol.TypeCreate, time.Now(), protocol.CreateData{TaskID: id, TaskType: "x.run",
		Params: json.RawMessage(`{}`), Timeout: 60, Priority: "normal", CreatedBy: "agent", Attempt: 1, Token: token})
	require.NoError(t, err)
	return tk, e
}

// TestInFlightCountsLiveAttempts: the count is the admission's: members
// within their deadline, not the expired ones a later admission drops.
func TestInFlightCountsLiveAttempts(t *testing.T) {
	t.Parallel()
	d, rdb, ns := newTestDispatcher(t, 10)
	ctx := context.Background()
	now := time.Now()
	n, err := InFlight(ctx, rdb, ns, "x.run", now)
	require.NoError(t, err)
	require.Zero(t, n)
	for _, id := range []string{"a", "b", "c"} {
		tk, e := createEvent(t, id, "t1")
		_, ok, err := d.publish(ctx, tk, e, time.Minute, d.bound(ctx, tk.Type))
		require.NoError(t, err)
		require.True(t, ok)
	}
	k := newKeys(ns).inflight("x.run")
	require.NoError(t, rdb.ZAdd(ctx, k, redis.Z{Score: float64(now.Add(-time.Second).UnixMilli()), Member: inflightMember("lost", "t1")}).Err())
	n, err = InFlight(ctx, rdb, ns, "x.run", now)
	require.NoError(t, err)
	require.EqualValues(t, 3, n, "the attempt past its deadline is not in flight")
	n, err = InFlight(ctx, rdb, ns, "x.run", now.Add(2*time.Minute))
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestDispatchIsAllOrNothing: one script takes the place, records the
// token and publishes task.create. When the type is full nothing at all is
// written (no token, no event: the attempt waits in its worker); a place
// freed (Release) or an attempt past its deadline lets the next one
// through, and the token recorded is the last dispatch's.
func TestDispatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	d, rdb, ns := newTestDispatcher(t, 1)
	ctx := context.Background()
	k := newKeys(ns)
	sk := protocol.NewKeys(ns)

	first, e1 := createEvent(t, "a", "tok-a")
	prev, ok, err := d.publish(ctx, first, e1, time.Minute, d.bound(ctx, first.Type))
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, prev, "never dispatched before")

	second, e2 := createEvent(t, "b", "tok-b")
	_, ok, err = d.publish(ctx, second, e2, time.Minute, d.bound(ctx, second.Type))
	require.NoError(t, err)
	require.False(t, ok, "the type is full")
	tok, err := LastToken(ctx, d.st, "b")
	require.NoError(t, err)
	require.Empty(t, tok, "no token recorded for an attempt that was not dispatched")
	n, err := rdb.XLen(ctx, sk.Create()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "no task.create for it either")

	require.NoError(t, Release(ctx, rdb, ns, "x.run", "a", "tok-a"))
	require.NoError(t, Release(ctx, rdb, ns, "x.run", "a", "tok-a"), "freeing a free place changes nothing")
	_, ok, err = d.publish(ctx, second, e2, time.Minute, d.bound(ctx, second.Type))
	require.NoError(t, err)
	require.True(t, ok)
	members, err := rdb.ZRange(ctx, k.inflight("x.run"), 0, -1).Result()
	require.NoError(t, err)
	require.Equal(t, []string{inflightMember("b", "tok-b")}, members)

	// a second attempt of b: the previous token comes back, the new one is
	// recorded (its place is b's old one only once that is released)
	require.NoError(t, rdb.ZAdd(ctx, k.inflight("x.run"), redis.Z{Score: 1, Member: inflightMember("b", "tok-b")}).Err()) // lost: past its deadline
	retry, e3 := createEvent(t, "b", "tok-b2")
	prev, ok, err = d.publish(ctx, retry, e3, time.Minute, d.bound(ctx, retry.Type))
	require.NoError(t, err)
	require.True(t, ok, "the lost attempt's place is freed by the admission")
	require.Equal(t, "tok-b", prev)
	tok, err = LastToken(ctx, d.st, "b")
	require.NoError(t, err)
	require.Equal(t, "tok-b2", tok)
	xs, err := rdb.XRange(ctx, sk.Create(), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, xs, 3, "one task.create per dispatch")
}

// TestUnboundedDispatchKeepsNoPlaces: with InFlight < 0 no in-flight set
// is written at all.
func TestUnboundedDispatchKeepsNoPlaces(t *testing.T) {
	t.Parallel()
	d, rdb, ns := newTestDispatcher(t, -1)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		tk, e := createEvent(t, id, "t-"+id)
		_, ok, err := d.publish(ctx, tk, e, time.Minute, d.bound(ctx, tk.Type))
		require.NoError(t, err)
		require.True(t, ok)
	}
	n, err := rdb.Exists(ctx, newKeys(ns).inflight("x.run")).Result()
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = rdb.XLen(ctx, protocol.NewKeys(ns).Create()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
}

// TestInFlightDefault: an unset bound sizes itself (the binary's
// TASKFLOW_EXTERNAL_INFLIGHT is read by internal/platform/config).
func TestInFlightDefault(t *testing.T) {
	require.Zero(t, Config{}.withDefaults().InFlight)
	require.Equal(t, time.Second, Config{}.withDefaults().CapacityRefresh)
}

// TestBoundSizesItself: with no bound configured, a type's bound is
// Headroom times the total concurrency its live services' instances
// publish; an instance
// whose entry expired is not counted (and its field is removed); a live
// service that publishes none counts DefaultInFlight; a type no live
// service serves gets DefaultInFlight.
func TestBoundSizesItself(t *testing.T) {
	t.Parallel()
	d, rdb, ns := newTestDispatcher(t, 0)
	ctx := context.Background()
	k := protocol.NewKeys(ns)
	now := time.Now()
	live, gone := now.Add(time.Minute).UnixMilli(), now.Add(-time.Second).UnixMilli()
	require.NoError(t, rdb.SAdd(ctx, k.Services(), "a", "b", "old", "down").Err())
	require.NoError(t, rdb.HSet(ctx, k.Service("a"), "types", "x.run,y.run",
		protocol.ConcurrencyFieldPrefix+"a-1", protocol.FormatConcurrency(200, live),
		protocol.ConcurrencyFieldPrefix+"a-2", protocol.FormatConcurrency(50, live),
		protocol.ConcurrencyFieldPrefix+"a-dead", protocol.FormatConcurrency(1000, gone)).Err())
	require.NoError(t, rdb.HSet(ctx, k.Service("b"), "types", "x.run",
		protocol.ConcurrencyFieldPrefix+"b-1", protocol.FormatConcurrency(5, live)).Err())
	require.NoError(t, rdb.HSet(ctx, k.Service("old"), "types", "z.run").Err()) // written before the field existed

	caps, err := Capacity(ctx, rdb, ns, now)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"x.run": 255, "y.run": 250, "z.run": DefaultInFlight}, caps)
	ok, err := rdb.HExists(ctx, k.Service("a"), protocol.ConcurrencyFieldPrefix+"a-dead").Result()
	require.NoError(t, err)
	require.False(t, ok, "an expired instance's entry is removed")

	require.Equal(t, Headroom*255, d.bound(ctx, "x.run"))
	require.Equal(t, DefaultInFlight, d.bound(ctx, "nobody.run"))

	// the bound is what admission checks: 510 places, then full
	for i := 0; i < Headroom*255; i++ {
		tk, e := createEvent(t, fmt.Sprintf("t%d", i), "tok")
		_, ok, err := d.publish(ctx, tk, e, time.Minute, d.bound(ctx, tk.Type))
		require.NoError(t, err)
		require.True(t, ok, "place %d", i)
	}
	tk, e := createEvent(t, "one-too-many", "tok")
	_, ok, err = d.publish(ctx, tk, e, time.Minute, d.bound(ctx, tk.Type))
	require.NoError(t, err)
	require.False(t, ok)

	// a configured bound wins over the services'
	require.Equal(t, 7, New(d.st, Config{InFlight: 7}).bound(ctx, "x.run"))
}
