package protocol

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func publishN(t *testing.T, p *Publisher, stream string, n int) []string {
	t.Helper()
	ids := make([]string, 0, n)
	for i := 0; i < n; i++ {
		e, err := New(TypeCancel, time.Now(), CancelData{TaskID: "t" + string(rune('a'+i))})
		require.NoError(t, err)
		id, err := p.Publish(context.Background(), stream, e)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

func TestGroupReadAckClaim(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctx := context.Background()
	k := NewKeys(keyspace.MustParse(ns))
	p := NewPublisher(rdb, 0, nil)
	require.NoError(t, EnsureGroup(ctx, rdb, k.Cancel(), "g", "0"))
	require.NoError(t, EnsureGroup(ctx, rdb, k.Cancel(), "g", "0"), "second create is a no-op")
	ids := publishN(t, p, k.Cancel(), 3)

	msgs, err := ReadGroup(ctx, rdb, "g", "c1", []string{k.Cancel()}, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	for i, m := range msgs {
		require.NoError(t, m.Err)
		require.Equal(t, ids[i], m.ID)
		d, err := As[CancelData](m.Event)
		require.NoError(t, err)
		require.Equal(t, "t"+string(rune('a'+i)), d.TaskID)
	}
	require.NoError(t, Ack(ctx, rdb, k.Cancel(), "g", ids[0]))

	// Nothing new: a non-blocking read returns nothing.
	msgs, err = ReadGroup(ctx, rdb, "g", "c1", []string{k.Cancel()}, 10, 0)
	require.NoError(t, err)
	require.Empty(t, msgs)

	// c1 "dies" holding ids[1], ids[2]; with a high min-idle nothing is claimable.
	got, _, err := AutoClaim(ctx, rdb, k.Cancel(), "g", "c2", time.Hour, "0-0", 10)
	require.NoError(t, err)
	require.Empty(t, got)
	got, _, err = AutoClaim(ctx, rdb, k.Cancel(), "g", "c2", 0, "0-0", 10)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, ids[1], got[0].ID)

	_, pending, err := Lag(ctx, rdb, k.Cancel(), "g")
	require.NoError(t, err)
	require.EqualValues(t, 2, pending)
}

func TestTouchKeepsEntriesFromBeingClaimed(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctx := context.Background()
	k := NewKeys(keyspace.MustParse(ns))
	p := NewPublisher(rdb, 0, nil)
	require.NoError(t, EnsureGroup(ctx, rdb, k.Create(), "svc-group", "0"))
	ids := publishN(t, p, k.Create(), 1)
	_, err := ReadGroup(ctx, rdb, "svc-group", "w1", []string{k.Create()}, 1, 0)
	require.NoError(t, err)

	// Wait (polling with a deadline) until the entry is idle ≥ 50 ms.
	waitIdle := func() {
		t.Helper()
		var ps []redis.XPendingExt
		testwait.Until(t, 5*time.Second, 10*time.Millisecond, func() bool {
			var err error
			ps, err = rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: k.Create(), Group: "svc-group", Start: "-", End: "+", Count: 10}).Result()
			require.NoError(t, err)
			return len(ps) == 1 && ps[0].Idle >= 50*time.Millisecond
		}, func() string { return fmt.Sprintf("entry never became idle (pending %+v)", ps) })
	}
	waitIdle()
	require.NoError(t, Touch(ctx, rdb, k.Create(), "svc-group", "w1", ids...))
	got, _, err := AutoClaim(ctx, rdb, k.Create(), "svc-group", "w2", 50*time.Millisecond, "0-0", 10)
	require.NoError(t, err)
	require.Empty(t, got, "a touched entry is not claimable")
	waitIdle()
	got, _, err = AutoClaim(ctx, rdb, k.Create(), "svc-group", "w2", 50*time.Millisecond, "0-0", 10)
	require.NoError(t, err)
	require.Len(t, got, 1, "an untouched idle entry is claimed")
}

func TestRetentionTrimsOldEntries(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctx := context.Background()
	k := NewKeys(keyspace.MustParse(ns))
	// Entries written with explicit old ids, then a publish "now" with a
	// 1 h retention trims them (MINID is approximate: use many entries so
	// whole radix-tree nodes go).
	old := time.Now().Add(-2 * time.Hour).UnixMilli()
	for i := 0; i < 500; i++ {
		require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.DLQ(), ID: fmt.Sprintf("%d-%d", old, i+1), Values: []any{"k", "v"}}).Err())
	}
	p := NewPublisher(rdb, time.Hour, nil)
	publishN(t, p, k.DLQ(), 1)
	n, err := rdb.XLen(ctx, k.DLQ()).Result()
	require.NoError(t, err)
	require.Less(t, n, int64(500), "old entries trimmed")
	require.GreaterOrEqual(t, n, int64(1))
	require.Equal(t, "0-0", MinID(time.UnixMilli(10), time.Hour))
}

// TestGroupsCountWhatWaits: the figures the workers page shows come from
// the stream itself. XINFO GROUPS' own lag (entries added minus entries
// read) still counts entries a trim or an XDEL removed: after the three
// unread entries are trimmed away, Redis says 3 wait while none does.
func TestGroupsCountWhatWaits(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctx := context.Background()
	s := NewKeys(keyspace.MustParse(ns)).Create()
	p := NewPublisher(rdb, 0, nil)
	require.NoError(t, EnsureGroup(ctx, rdb, s, "svc-group", "0"))
	ids := publishN(t, p, s, 6)
	msgs, err := ReadGroup(ctx, rdb, "svc-group", "w1", []string{s}, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 6)
	require.NoError(t, Ack(ctx, rdb, s, "svc-group", ids[:4]...))

	// the injected clock: 90 s after the oldest unacknowledged entry
	oldest, ok := idMillis(ids[4])
	require.True(t, ok)
	now := time.UnixMilli(oldest).Add(90 * time.Second)
	one := func() Group {
		t.Helper()
		gs, err := Groups(ctx, rdb, s, now)
		require.NoError(t, err)
		require.Len(t, gs, 1)
		return gs[0]
	}
	g := one()
	require.Equal(t, "svc-group", g.Name)
	require.EqualValues(t, 1, g.Consumers)
	require.EqualValues(t, 2, g.Pending)
	require.NotNil(t, g.OldestPendingSeconds)
	require.InDelta(t, 90, *g.OldestPendingSeconds, 0.1)
	require.Zero(t, g.Lag, "every entry was delivered")
	require.Equal(t, ids[5], g.LastDeliveredID)

	// three entries the group never read, then trimmed away
	publishN(t, p, s, 3)
	require.NoError(t, rdb.XTrimMaxLen(ctx, s, 0).Err())
	info, err := rdb.XInfoGroups(ctx, s).Result()
	require.NoError(t, err)
	require.EqualValues(t, 3, info[0].Lag, "Redis's own figure counts the trimmed entries")
	require.Zero(t, one().Lag, "nothing waits: the stream is empty")

	// two new entries wait; one is deleted
	fresh := publishN(t, p, s, 2)
	require.EqualValues(t, 2, one().Lag)
	require.NoError(t, rdb.XDel(ctx, s, fresh[0]).Err())
	require.EqualValues(t, 1, one().Lag)

	// all acknowledged: no pending age
	require.NoError(t, Ack(ctx, rdb, s, "svc-group", ids[4:]...))
	require.Nil(t, one().OldestPendingSeconds)

	// far behind: the count stops at LagCountLimit and says so
	_, err = rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i := 0; i < LagCountLimit+5; i++ {
			pl.XAdd(ctx, &redis.XAddArgs{Stream: s, Values: []any{"f", i}})
		}
		return nil
	})
	require.NoError(t, err)
	g = one()
	require.EqualValues(t, LagCountLimit, g.Lag)
	require.True(t, g.LagAtLeast)

	// a stream nobody created yet has no groups
	gs, err := Groups(ctx, rdb, s+":none", now)
	require.NoError(t, err)
	require.Empty(t, gs)
}

func TestCompareIDs(t *testing.T) {
	require.Equal(t, 0, compareIDs("5-1", "5-1"))
	require.Equal(t, 1, compareIDs("10-0", "9-5"))
	require.Equal(t, -1, compareIDs("9-5", "9-10"))
	require.Equal(t, 1, compareIDs("1-0", "0-0"))
}
