package store

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

func TestUniqueKey(t *testing.T) {
	t.Parallel()

	t.Run("HeldWhilePendingAndActive", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first, err := b.s.EnqueueResults(b.ctx, []EnqueueRequest{{Type: "noop", UniqueKey: "k"}})
		require.NoError(t, err)
		require.False(t, first[0].Duplicate)
		again, err := b.s.EnqueueResults(b.ctx, []EnqueueRequest{{Type: "noop", UniqueKey: "k"}})
		require.NoError(t, err)
		require.True(t, again[0].Duplicate)
		require.Equal(t, first[0].Task.ID, again[0].Task.ID)
		require.Equal(t, task.StatePending, again[0].Task.State)

		got := b.fetchOne(t)
		again, err = b.s.EnqueueResults(b.ctx, []EnqueueRequest{{Type: "noop", UniqueKey: "k"}})
		require.NoError(t, err)
		require.True(t, again[0].Duplicate)
		require.Equal(t, task.StateActive, again[0].Task.State)

		require.NoError(t, b.s.Complete(b.ctx, got.ID, got.Lease, json.RawMessage(`1`)))
		after, err := b.s.EnqueueResults(b.ctx, []EnqueueRequest{{Type: "noop", UniqueKey: "k"}})
		require.NoError(t, err)
		require.False(t, after[0].Duplicate, "a finished holder without unique_for releases the key")
		require.NotEqual(t, first[0].Task.ID, after[0].Task.ID)
	})

	t.Run("UniqueForOutlivesCompletion", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := b.enqueue(t, EnqueueRequest{UniqueKey: "k", UniqueFor: time.Minute})
		got := b.fetchOne(t)
		require.NoError(t, b.s.Complete(b.ctx, got.ID, got.Lease, json.RawMessage(`1`)))
		again, err := b.s.EnqueueResults(b.ctx, []EnqueueRequest{{Type: "noop", UniqueKey: "k", UniqueFor: time.Minute}})
		require.NoError(t, err)
		require.True(t, again[0].Duplicate)
		require.Equal(t, first.ID, again[0].Task.ID)
		require.Equal(t, task.StateCompleted, again[0].Task.State)
		b.clk.Advance(time.Minute + time.Millisecond)
		later, err := b.s.EnqueueResults(b.ctx, []EnqueueRequest{{Type: "noop", UniqueKey: "k"}})
		require.NoError(t, err)
		require.False(t, later[0].Duplicate)
	})

	t.Run("CancelAndDeleteRelease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a := b.enqueue(t, EnqueueRequest{UniqueKey: "k"})
		_, err := b.s.Cancel(b.ctx, a.ID)
		require.NoError(t, err)
		c := b.enqueue(t, EnqueueRequest{UniqueKey: "k"})
		require.NotEqual(t, a.ID, c.ID)
		_, err = b.s.Cancel(b.ctx, c.ID)
		require.NoError(t, err)
		require.NoError(t, b.s.Delete(b.ctx, c.ID))
		d, err := b.s.EnqueueResults(b.ctx, []EnqueueRequest{{Type: "noop", UniqueKey: "k"}})
		require.NoError(t, err)
		require.False(t, d[0].Duplicate)
	})

	t.Run("ScopedByOwner", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		res, err := b.s.EnqueueResults(b.ctx, []EnqueueRequest{
			{Type: "noop", UniqueKey: "k", SessionID: "s1"},
			{Type: "noop", UniqueKey: "k", SessionID: "s2"},
			{Type: "noop", UniqueKey: "k"},
			{Type: "noop", UniqueKey: "k", SessionID: "s1"},
		})
		require.NoError(t, err)
		require.False(t, res[0].Duplicate)
		require.False(t, res[1].Duplicate)
		require.False(t, res[2].Duplicate)
		require.True(t, res[3].Duplicate, "the same owner's key within one batch")
		require.Equal(t, res[0].Task.ID, res[3].Task.ID)
	})

	t.Run("ConcurrentSubmitsMakeOne", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *Config) { c.Partitions = 4 })
		var wg sync.WaitGroup
		var mu sync.Mutex
		created := map[string]int{}
		for range 32 {
			wg.Go(func() {
				res, err := b.s.EnqueueResults(b.ctx, []EnqueueRequest{{Type: "noop", UniqueKey: "hot"}})
				if !assertNoErr(t, err) {
					return
				}
				mu.Lock()
				created[res[0].Task.ID]++
				mu.Unlock()
			})
		}
		wg.Wait()
		require.Len(t, created, 1, "every concurrent submit answers the one task")
	})
}

func assertNoErr(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

func TestEnqueueIdempotent(t *testing.T) {
	t.Parallel()
	idem := func(key, fp string) Idempotency {
		return Idempotency{Scope: "s1", Key: key, Fingerprint: fp, TTL: time.Hour, Extra: "x-" + fp}
	}

	t.Run("ReplayAndMismatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first, err := b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{{Type: "noop"}, {Type: "noop"}}, idem("k", "fp1"))
		require.NoError(t, err)
		require.False(t, first.Replayed)
		require.Len(t, first.Results, 2)
		again, err := b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{{Type: "noop"}, {Type: "noop"}}, idem("k", "fp1"))
		require.NoError(t, err)
		require.True(t, again.Replayed)
		require.Equal(t, "x-fp1", again.Extra)
		require.Equal(t, []string{first.Results[0].Task.ID, first.Results[1].Task.ID},
			[]string{again.Results[0].Task.ID, again.Results[1].Task.ID})
		require.Equal(t, int64(2), b.status(t).Primary, "the replay wrote nothing")

		_, err = b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{{Type: "noop"}}, idem("k", "fp2"))
		require.ErrorIs(t, err, ErrIdempotencyMismatch)
		other := idem("k", "fp1")
		other.Scope = "s2"
		theirs, err := b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{{Type: "noop"}}, other)
		require.NoError(t, err)
		require.False(t, theirs.Replayed, "another caller's key of the same name is its own")
	})

	t.Run("RecordsDuplicates", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		held := b.enqueue(t, EnqueueRequest{UniqueKey: "u", SessionID: "s1"})
		first, err := b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{{Type: "noop", UniqueKey: "u", SessionID: "s1"}, {Type: "noop"}}, idem("k", "fp"))
		require.NoError(t, err)
		require.True(t, first.Results[0].Duplicate)
		require.Equal(t, held.ID, first.Results[0].Task.ID)
		again, err := b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{{Type: "noop", UniqueKey: "u", SessionID: "s1"}, {Type: "noop"}}, idem("k", "fp"))
		require.NoError(t, err)
		require.True(t, again.Replayed)
		require.Equal(t, first.Results[0], again.Results[0])
		require.Equal(t, first.Results[1].Task.ID, again.Results[1].Task.ID)
		require.False(t, again.Results[1].Duplicate)
	})

	t.Run("ConcurrentSameKeyMakesOne", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *Config) { c.Partitions = 3 })
		var wg sync.WaitGroup
		var mu sync.Mutex
		ids := map[string]bool{}
		for i := range 24 {
			wg.Go(func() {
				res, err := b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{{Type: "noop"}}, idem(fmt.Sprint("k", i%3), "fp"))
				if !assertNoErr(t, err) {
					return
				}
				mu.Lock()
				ids[res.Results[0].Task.ID] = true
				mu.Unlock()
			})
		}
		wg.Wait()
		require.Len(t, ids, 3, "one task per key")
	})

	t.Run("EmptyCallIsRecorded", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first, err := b.s.EnqueueIdempotent(b.ctx, nil, idem("k", "fp"))
		require.NoError(t, err)
		require.False(t, first.Replayed)
		again, err := b.s.EnqueueIdempotent(b.ctx, nil, idem("k", "fp"))
		require.NoError(t, err)
		require.True(t, again.Replayed)
		require.Empty(t, again.Results)
	})
}

func TestEnqueueIdempotentPartitions(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Partitions = 4 })
	idem := Idempotency{Scope: "s", Key: "k", Fingerprint: "fp", TTL: time.Hour}

	// a request with a partition key: the task and the record live there
	res, err := b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{{Type: "noop", PartitionKey: "tenant-7"}}, idem)
	require.NoError(t, err)
	require.Equal(t, PartitionOf("tenant-7", 4), b.s.PartitionOf(res.Results[0].Task.ID))
	again, err := b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{{Type: "noop", PartitionKey: "tenant-7"}}, idem)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, res.Results[0].Task.ID, again.Results[0].Task.ID)

	// keyless requests of one call share the key's partition
	idem.Key = "k2"
	res, err = b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{{Type: "noop"}, {Type: "noop"}, {Type: "noop"}}, idem)
	require.NoError(t, err)
	p := b.s.PartitionOf(res.Results[0].Task.ID)
	for _, r := range res.Results {
		require.Equal(t, p, b.s.PartitionOf(r.Task.ID))
	}

	// requests placed in two partitions cannot share one record
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var other string
	for _, k := range keys[1:] {
		if PartitionOf(k, 4) != PartitionOf(keys[0], 4) {
			other = k
			break
		}
	}
	require.NotEmpty(t, other)
	idem.Key = "k3"
	_, err = b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{{Type: "noop", PartitionKey: keys[0]}, {Type: "noop", PartitionKey: other}}, idem)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "[1].partition_key", ve.Field)
}

// TestUniqueAndIdempotentAcrossQueues: a batch spanning named queues is
// written a queue at a time, and its answers keep the request's order: a
// later item whose unique key an earlier item (of another queue) took is
// answered as that item's duplicate at its own position. Under an
// idempotency key such a batch is refused whole (one script call writes
// one queue's lists), and nothing is written.
func TestUniqueAndIdempotentAcrossQueues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	out, err := b.s.EnqueueResults(b.ctx, []EnqueueRequest{
		{Type: "noop", Queue: "qa", SessionID: "s1", UniqueKey: "k1"},
		{Type: "noop", SessionID: "s1", UniqueKey: "k1"},
		{Type: "noop", Queue: "qa", SessionID: "s1", UniqueKey: "k2"},
		{Type: "noop", SessionID: "s1"},
	})
	require.NoError(t, err)
	require.Len(t, out, 4)
	require.False(t, out[0].Duplicate)
	require.True(t, out[1].Duplicate, "the default queue's item meets the key qa's item took")
	require.Equal(t, out[0].Task.ID, out[1].Task.ID)
	require.False(t, out[2].Duplicate)
	require.False(t, out[3].Duplicate)
	require.Equal(t, "qa", out[2].Task.Queue)

	_, err = b.s.EnqueueIdempotent(b.ctx, []EnqueueRequest{
		{Type: "noop", Queue: "qa", SessionID: "s1"},
		{Type: "noop", SessionID: "s1"},
	}, Idempotency{Scope: "s1", Key: "batch-1", Fingerprint: "fp", TTL: time.Hour})
	require.ErrorIs(t, err, ErrIdempotencyQueues)
	n, err := b.rdb.Exists(b.ctx, b.s.parts[0].idempotency("s1", "batch-1")).Result()
	require.NoError(t, err)
	require.Zero(t, n, "no record written for the refused batch")
}
