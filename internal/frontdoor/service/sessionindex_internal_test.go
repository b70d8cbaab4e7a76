package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestSessionIndexMerge: the per-partition session indexes are walked as
// one, page after page past MaxPageSize: in score order (ties as ZRANGE /
// ZREVRANGE order them), each id once even when two partitions hold it.
func TestSessionIndexMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, ns := testredis.Client(t)
	keys := []string{"{" + ns + ":p0}:s", "{" + ns + ":p1}:s", "{" + ns + ":p2}:s"}
	rnd := rand.New(rand.NewPCG(1, 2))
	type entry struct {
		id    string
		score float64
	}
	var all []entry
	pipe := rdb.Pipeline()
	for i := range 2600 {
		k := keys[rnd.IntN(len(keys))]
		if i < 500 {
			k = keys[0] // one partition holds more: its reads run ahead of the others'
		}
		e := entry{id: fmt.Sprintf("t%05d", i), score: float64(rnd.IntN(900))} // many ties
		all = append(all, e)
		pipe.ZAdd(ctx, k, redis.Z{Score: e.score, Member: e.id})
	}
	pipe.ZAdd(ctx, keys[2], redis.Z{Score: 5000, Member: all[7].id}) // indexed twice
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)

	for _, asc := range []bool{false, true} {
		want := append([]entry{}, all...)
		want = append(want, entry{id: all[7].id, score: 5000})
		sort.Slice(want, func(i, j int) bool {
			a, b := want[i], want[j]
			if asc {
				return a.score < b.score || (a.score == b.score && a.id < b.id)
			}
			return a.score > b.score || (a.score == b.score && a.id > b.id)
		})
		seen := map[string]bool{}
		var wantIDs []string
		for _, e := range want {
			if !seen[e.id] {
				seen[e.id] = true
				wantIDs = append(wantIDs, e.id)
			}
		}
		x := &sessionIndex{rdb: rdb, keys: keys, asc: asc, buf: make([][]redis.Z, 3), off: make([]int64, 3), done: make([]bool, 3), seen: map[string]bool{}}
		var gotIDs []string
		for {
			ids, more, err := x.next(ctx, MaxPageSize)
			require.NoError(t, err)
			gotIDs = append(gotIDs, ids...)
			if !more {
				break
			}
		}
		require.Equal(t, wantIDs, gotIDs, "asc %v", asc)
	}
}
