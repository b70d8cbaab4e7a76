package follower

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// finishIn enqueues, fetches and completes a task of partition p (its id
// chosen so) and returns its id.
func finishIn(t *testing.T, st *store.Store, p, i int) string {
	t.Helper()
	ctx := context.Background()
	id := ""
	for j := 0; ; j++ {
		id = fmt.Sprintf("t%d-%d-%d", p, i, j)
		if st.PartitionOf(id) == p {
			break
		}
	}
	_, err := st.Enqueue(ctx, store.EnqueueRequest{ID: id, Type: "summarize", Content: "x", SessionID: "s"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := st.Fetch(ctx, store.FetchRequest{N: 1, WorkerID: "w", TokenPrefix: "w:" + id, Lease: time.Minute})
		require.NoError(t, err)
		for _, g := range got {
			require.NoError(t, st.Complete(ctx, g.ID, g.Lease, json.RawMessage(`{"summary":"s"}`)))
		}
		tk, err := st.Get(ctx, id)
		require.NoError(t, err)
		return tk.State == "COMPLETED"
	}, 5*time.Second, time.Millisecond)
	return id
}

// TestArchiverOverPartitions: with three partitions the archiver follows
// the three event streams from a cursor of three positions, archives
// every task, and resumes after a restart.
func TestArchiverOverPartitions(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns, Partitions: 3})
	require.NoError(t, err)
	arc := externaltest.Archive(t)
	ctx := context.Background()
	run := func() func() {
		a := NewArchiver(st, arc, nil)
		c, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(c) }()
		return func() { cancel(); require.NoError(t, <-done) }
	}
	waitArchived := func(ids []string) {
		for _, id := range ids {
			require.Eventually(t, func() bool {
				_, err := arc.Get(ctx, id)
				return err == nil
			}, 10*time.Second, 10*time.Millisecond, "task %s archived", id)
		}
	}
	var early []string
	for i := range 6 {
		early = append(early, finishIn(t, st, i%3, i))
	}
	stop := run()
	waitArchived(early)
	stop()
	cursor, err := rdb.Get(ctx, newKeys(keyspace.MustParse(ns)).archiveCursor()).Result()
	require.NoError(t, err)
	require.Len(t, strings.Split(cursor, "~"), 3, "one position per stream: %q", cursor)
	var later []string
	for i := range 6 {
		later = append(later, finishIn(t, st, (i+1)%3, 10+i))
	}
	stop = run()
	waitArchived(later)
	stop()
}

// TestGapInOneOfSeveralStreams: when one partition's stream was trimmed
// past the follower's position in it, the sweep resumes that stream from
// its newest entry and leaves the others where they were.
func TestGapInOneOfSeveralStreams(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns, Partitions: 3, EventStreamMaxLen: 10})
	require.NoError(t, err)
	ctx := context.Background()
	for p := range 3 {
		finishIn(t, st, p, 0)
	}
	f := newFollower(st, "test", "unused", nil)
	handled := map[string]bool{}
	f.handle = func(_ context.Context, ts []*task.Task) error {
		for _, tk := range ts {
			handled[tk.ID] = true
		}
		return nil
	}
	cursor, err := f.reader.Latest(ctx)
	require.NoError(t, err)
	before, err := f.reader.Positions(cursor)
	require.NoError(t, err)
	var ids []string
	for i := range 40 { // partition 0 only: its stream loses the cursor's entry
		ids = append(ids, finishIn(t, st, 0, 100+i))
	}
	resume, err := f.sweepGap(ctx, cursor)
	require.NoError(t, err)
	require.EqualValues(t, 1, f.gaps.Load())
	latest, err := f.reader.Latest(ctx)
	require.NoError(t, err)
	now, err := f.reader.Positions(latest)
	require.NoError(t, err)
	after, err := f.reader.Positions(resume)
	require.NoError(t, err)
	require.Equal(t, []string{now[0], before[1], before[2]}, after)
	again, err := f.sweepGap(ctx, resume)
	require.NoError(t, err)
	require.Equal(t, resume, again, "no gap any more")
	for _, id := range ids {
		require.True(t, handled[id], "task %s of the missed window handed on", id)
	}
}
