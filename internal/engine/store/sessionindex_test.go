package store

import (
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

// TestEnqueueWritesSessionIndex: the enqueue script adds each task that has
// a session to that session's index in the same call (no second round
// trip that could fail after the task exists), refreshing its TTL; a chunk
// refused for a duplicate id writes no index entry either.
func TestEnqueueWritesSessionIndex(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.SessionIndexTTL = time.Hour })
	created, err := b.s.EnqueueBatch(b.ctx, []EnqueueRequest{
		{ID: "a1", Type: "noop", SessionID: "sa"},
		{ID: "n1", Type: "noop"},
		{ID: "b1", Type: "noop", SessionID: "sb", RunAt: t0.Add(time.Minute)},
		{ID: "a2", Type: "noop", SessionID: "sa"},
	})
	require.NoError(t, err)
	require.Len(t, created, 4)
	index := func(sess string) []redis.Z {
		z, err := b.rdb.ZRangeWithScores(b.ctx, b.s.SessionTasksKeys(sess)[0], 0, -1).Result()
		require.NoError(t, err)
		return z
	}
	at := float64(t0.UnixMilli())
	require.Equal(t, []redis.Z{{Score: at, Member: "a1"}, {Score: at, Member: "a2"}}, index("sa"))
	require.Equal(t, []redis.Z{{Score: at, Member: "b1"}}, index("sb"), "a delayed task is indexed by its creation")
	for _, sess := range []string{"sa", "sb"} {
		ttl, err := b.rdb.PTTL(b.ctx, b.s.SessionTasksKeys(sess)[0]).Result()
		require.NoError(t, err)
		require.InDelta(t, time.Hour.Seconds(), ttl.Seconds(), 5)
	}

	// All or nothing: a duplicate id refuses the chunk, index included.
	_, err = b.s.EnqueueBatch(b.ctx, []EnqueueRequest{{ID: "c1", Type: "noop", SessionID: "sc"}, {ID: "a1", Type: "noop", SessionID: "sa"}})
	require.ErrorIs(t, err, task.ErrDuplicateTaskID)
	require.Empty(t, index("sc"))
	require.Len(t, index("sa"), 2)

	// One more task refreshes the TTL.
	require.NoError(t, b.rdb.PExpire(b.ctx, b.s.SessionTasksKeys("sa")[0], time.Minute).Err())
	_, err = b.s.Enqueue(b.ctx, EnqueueRequest{ID: "a3", Type: "noop", SessionID: "sa"})
	require.NoError(t, err)
	ttl, err := b.rdb.PTTL(b.ctx, b.s.SessionTasksKeys("sa")[0]).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 50*time.Minute)
	require.Len(t, index("sa"), 3)
}

// TestIndexAndUnindexSessionTask: a task the session lists before the
// store holds it is indexed in its partition's key with its score and the
// TTL given; unindexing drops ids from whichever partition's key holds
// them.
func TestIndexAndUnindexSessionTask(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Partitions = 3 })
	at := t0.Add(-time.Minute)
	for _, id := range []string{"p1", "p2", "p3", "p4"} {
		require.NoError(t, b.s.IndexSessionTask(b.ctx, "sa", id, at, time.Hour))
		score, err := b.rdb.ZScore(b.ctx, b.s.SessionTasksKeyOf("sa", id), id).Result()
		require.NoError(t, err)
		require.Equal(t, float64(at.UnixMilli()), score)
		ttl, err := b.rdb.PTTL(b.ctx, b.s.SessionTasksKeyOf("sa", id)).Result()
		require.NoError(t, err)
		require.InDelta(t, time.Hour.Seconds(), ttl.Seconds(), 5)
	}
	require.NoError(t, b.s.IndexSessionTask(b.ctx, "", "p5", at, time.Hour), "no session: nothing to index")
	// an entry in another partition's key than its task's is dropped too
	stray := b.s.SessionTasksKeys("sa")[(b.s.PartitionOf("p1")+1)%3]
	require.NoError(t, b.rdb.ZAdd(b.ctx, stray, redis.Z{Score: 1, Member: "p1"}).Err())

	require.NoError(t, b.s.UnindexSessionTasks(b.ctx, "sa", "p1", "p3"))
	require.NoError(t, b.s.UnindexSessionTasks(b.ctx, "sa"))
	var left []string
	for _, k := range b.s.SessionTasksKeys("sa") {
		ids, err := b.rdb.ZRange(b.ctx, k, 0, -1).Result()
		require.NoError(t, err)
		left = append(left, ids...)
	}
	sort.Strings(left)
	require.Equal(t, []string{"p2", "p4"}, left)
}
