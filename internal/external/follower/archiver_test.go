package follower

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestArchiverArchivesInProcessTasks: tasks finished by ordinary workers
// (here: by hand through the store) reach the archive too, and a
// restarted archiver resumes from its cursor.
func TestArchiverArchivesInProcessTasks(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	arc := externaltest.Archive(t)
	ctx := context.Background()
	finish := func(complete bool) string {
		tk, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "summarize", Content: "x", SessionID: "s"})
		require.NoError(t, err)
		got, err := st.Fetch(ctx, store.FetchRequest{N: 1, WorkerID: "w", TokenPrefix: "w:" + tk.ID, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, got, 1)
		if complete {
			require.NoError(t, st.Complete(ctx, tk.ID, got[0].Lease, json.RawMessage(`{"summary":"s"}`)))
		} else {
			_, err := st.Fail(ctx, tk.ID, got[0].Lease, store.Failure{ErrorType: "X", Message: "m", Permanent: true, Attempt: 1})
			require.NoError(t, err)
		}
		return tk.ID
	}
	run := func() func() {
		a := NewArchiver(st, arc, nil)
		c, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(c) }()
		return func() { cancel(); require.NoError(t, <-done) }
	}
	waitArchived := func(id string, want task.State) {
		require.Eventually(t, func() bool {
			got, err := arc.Get(ctx, id)
			return err == nil && got.State == want
		}, 10*time.Second, 10*time.Millisecond, "task %s not archived as %s", id, want)
	}
	early := finish(true) // before any archiver runs: read from the stream's start
	stop := run()
	waitArchived(early, task.StateCompleted)
	dead := finish(false)
	waitArchived(dead, task.StateDLQ)
	stop()
	later := finish(true) // while no archiver runs
	stop = run()
	waitArchived(later, task.StateCompleted)
	stop()
}

// TestArchiverSweepsTheIndexesAfterAGap: the lifecycle event stream is
// capped; an archiver whose cursor fell behind the cap finds the gap,
// counts it, and archives the missed tasks from the finished-task
// indexes: none is lost.
func TestArchiverSweepsTheIndexesAfterAGap(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns, EventStreamMaxLen: 10})
	require.NoError(t, err)
	arc := externaltest.Archive(t)
	ctx := context.Background()
	finish := func(i int) string {
		tk, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "summarize", Content: "x", SessionID: "s"})
		require.NoError(t, err)
		got, err := st.Fetch(ctx, store.FetchRequest{N: 1, WorkerID: "w", TokenPrefix: "w:" + tk.ID, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, got, 1)
		switch i % 3 {
		case 0:
			require.NoError(t, st.Complete(ctx, tk.ID, got[0].Lease, json.RawMessage(`{"summary":"s"}`)))
		case 1:
			_, err := st.Fail(ctx, tk.ID, got[0].Lease, store.Failure{ErrorType: "X", Message: "m", Permanent: true, Attempt: 1})
			require.NoError(t, err)
		default:
			require.NoError(t, st.CancelActive(ctx, tk.ID, got[0].Lease, "cancelled"))
		}
		return tk.ID
	}
	// the archiver had read up to here, then stopped
	finish(0)
	cursor, err := st.Events().Latest(ctx)
	require.NoError(t, err)
	require.NoError(t, rdb.Set(ctx, newKeys(keyspace.MustParse(ns)).archiveCursor(), cursor, 0).Err())
	var ids []string
	for i := range 150 {
		ids = append(ids, finish(i))
	}
	info, err := rdb.XInfoStream(ctx, st.EventStreamKeys()[0]).Result() // one partition
	require.NoError(t, err)
	require.Equal(t, -1, compareIDs(cursor, info.FirstEntry.ID), "events after the cursor were trimmed (the test's premise)")
	require.Greater(t, info.EntriesAdded-info.Length, int64(100))

	reg := prometheus.NewRegistry()
	mt, err := NewMetrics(reg)
	require.NoError(t, err)
	require.Zero(t, gapsMetric(t, reg, "archiver"), "exported at 0 before any gap")
	a := NewArchiver(st, arc, nil)
	a.OnGap(mt.Gap("archiver"))
	c, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(c) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	for _, id := range ids {
		require.Eventually(t, func() bool {
			_, err := arc.Get(ctx, id)
			return err == nil
		}, 10*time.Second, 10*time.Millisecond, "task %s archived", id)
	}
	require.GreaterOrEqual(t, a.Gaps(), int64(1), "the gap was detected")
	require.Equal(t, float64(a.Gaps()), gapsMetric(t, reg, "archiver"), "and counted on /metrics")
	require.Zero(t, gapsMetric(t, reg, "notifier"))
}

// gapsMetric is taskflow_event_stream_gaps_total{follower} as reg exports it.
func gapsMetric(t *testing.T, reg *prometheus.Registry, follower string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != "taskflow_event_stream_gaps_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "follower" && l.GetValue() == follower {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("taskflow_event_stream_gaps_total{follower=%q} is not exported", follower)
	return 0
}
