package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/keyspace"
	"github.com/taskflow/taskflow/internal/testredis"
)

// TestInFlightCountsLiveAttempts: the count is the admission script's
// (admitScript): members within their deadline, not the expired ones a
// later admission drops.
func TestInFlightCountsLiveAttempts(t *testing.T) {
	t.Parallel()
	rdb, name := testredis.Client(t)
	ns := keyspace.MustParse(name)
	ctx := context.Background()
	now := time.Now()
	n, err := InFlight(ctx, rdb, ns, "x.run", now)
	require.NoError(t, err)
	require.Zero(t, n)
	k := newKeys(ns).inflight("x.run")
	for _, id := range []string{"a", "b", "c"} {
		ok, err := admitScript.Run(ctx, rdb, []string{k}, now.UnixMilli(), 10, inflightMember(id, "t1"), now.Add(time.Minute).UnixMilli()).Int()
		require.NoError(t, err)
		require.Equal(t, 1, ok)
	}
	require.NoError(t, rdb.ZAdd(ctx, k, redis.Z{Score: float64(now.Add(-time.Second).UnixMilli()), Member: inflightMember("lost", "t1")}).Err())
	n, err = InFlight(ctx, rdb, ns, "x.run", now)
	require.NoError(t, err)
	require.EqualValues(t, 3, n, "the attempt past its deadline is not in flight")
	n, err = InFlight(ctx, rdb, ns, "x.run", now.Add(2*time.Minute))
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestInFlightFromEnv(t *testing.T) {
	for v, want := range map[string]int{"": 0, "64": 64, " 8 ": 8, "-1": -1} {
		got, err := InFlightFromEnv(func(string) string { return v })
		require.NoError(t, err, "%q", v)
		require.Equal(t, want, got, "%q", v)
	}
	for _, v := range []string{"0", "-2", "many", "1.5"} {
		_, err := InFlightFromEnv(func(string) string { return v })
		require.ErrorContains(t, err, EnvInFlight, "%q", v)
	}
	require.Equal(t, DefaultInFlight, Config{}.withDefaults().InFlight)
}
