package handoff_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/handoff"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestStreamsTrimmedByTimeWithoutWrites: task.dlq keeps its entries for
// Retention (7 days by default) even when nothing is written to it: the
// watcher trims every agent stream by time every TrimInterval (by the
// injected clock), exactly.
func TestStreamsTrimmedByTimeWithoutWrites(t *testing.T) {
	t.Parallel()
	require.Equal(t, 7*24*time.Hour, handoff.Config{}.WithDefaults().Retention, "7-day DLQ retention")
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	o, err := handoff.New(st, nil, nil, handoff.Config{Now: clk.Now, Retention: time.Hour, TrimInterval: 10 * time.Minute})
	require.NoError(t, err)
	ctx := context.Background()
	sk := protocol.NewKeys(keyspace.MustParse(ns))
	add := func(key string, at time.Time) string {
		id := fmt.Sprintf("%d-0", at.UnixMilli())
		require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: id, Values: []any{"event_id", "e"}}).Err())
		return id
	}
	ids := func(key string) []string {
		xs, err := rdb.XRange(ctx, key, "-", "+").Result()
		require.NoError(t, err)
		out := []string{}
		for _, x := range xs {
			out = append(out, x.ID)
		}
		return out
	}
	add(sk.DLQ(), t0.Add(-2*time.Hour))
	fresh := add(sk.DLQ(), t0.Add(-10*time.Minute))
	oldTimeout := add(sk.Timeout(), t0.Add(-90*time.Minute))
	require.Len(t, ids(sk.DLQ()), 2)

	_, err = o.Tick(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{fresh}, ids(sk.DLQ()), "older than the retention: trimmed")
	require.NotContains(t, ids(sk.Timeout()), oldTimeout, "every agent stream")

	// not again before TrimInterval
	stale := add(sk.Cancel(), t0.Add(-3*time.Hour))
	clk.Advance(5 * time.Minute)
	_, err = o.Tick(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{stale}, ids(sk.Cancel()))

	// the next trim, and the fresh entry's hour runs out later
	clk.Advance(5 * time.Minute)
	_, err = o.Tick(ctx)
	require.NoError(t, err)
	require.Empty(t, ids(sk.Cancel()))
	require.Equal(t, []string{fresh}, ids(sk.DLQ()))
	clk.Advance(50 * time.Minute)
	_, err = o.Tick(ctx)
	require.NoError(t, err)
	require.Empty(t, ids(sk.DLQ()), "an hour after it was written")
}
