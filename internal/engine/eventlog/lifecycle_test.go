package eventlog_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/engine/eventlog"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDecode(t *testing.T) {
	t.Parallel()
	evs := eventlog.Decode("5-0", "a\x1f\x1fPENDING\x1f1000\x1fnoop\x1fs1\x1ebroken\x1eb\x1fPENDING\x1fACTIVE\x1f2000\x1fnoop\x1f")
	require.Equal(t, []eventlog.Event{
		{ID: "5-0.0", TaskID: "a", To: task.StatePending, At: time.UnixMilli(1000).UTC(), TaskType: "noop", SessionID: "s1"},
		{ID: "5-0.2", TaskID: "b", From: task.StatePending, To: task.StateActive, At: time.UnixMilli(2000).UTC(), TaskType: "noop"},
	}, evs)
	require.Empty(t, eventlog.Decode("1-0", ""))
}

func TestReadAndResume(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	s, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	ctx := context.Background()
	r := s.Events()
	start, err := r.Latest(ctx)
	require.NoError(t, err)

	_, err = s.EnqueueBatch(ctx, []store.EnqueueRequest{{ID: "a", Type: "noop", SessionID: "s"}, {ID: "b", Type: "noop"}, {ID: "c", Type: "noop"}})
	require.NoError(t, err)
	evs, next, err := r.Read(ctx, start, 10, 0)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	require.Equal(t, "a", evs[0].TaskID)
	require.Equal(t, "s", evs[0].SessionID)
	require.Equal(t, task.StatePending, evs[2].To)
	require.True(t, strings.HasPrefix(evs[2].ID, next), "next %q names the last entry read", next)

	// resume in the middle of an entry: only the events after it
	rest, _, err := r.Read(ctx, evs[0].ID, 10, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c"}, []string{rest[0].TaskID, rest[1].TaskID})

	// nothing new: an empty read
	none, _, err := r.Read(ctx, next, 10, 0)
	require.NoError(t, err)
	require.Empty(t, none)

	// Subscribe sees a later transition
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got := make(chan eventlog.Event, 10)
	done := make(chan error, 1)
	go func() {
		done <- r.Subscribe(sctx, next, func(e eventlog.Event) error { got <- e; return nil })
	}()
	_, err = s.Cancel(ctx, "b")
	require.NoError(t, err)
	select {
	case e := <-got:
		require.Equal(t, "b", e.TaskID)
		require.Equal(t, task.StatePending, e.From)
		require.Equal(t, task.StateCancelled, e.To)
	case <-sctx.Done():
		t.Fatal("no event")
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func FuzzDecode(f *testing.F) {
	f.Add("1-0", "a\x1f\x1fPENDING\x1f1000\x1fnoop\x1fs1")
	f.Add("1-0", "a\x1fPENDING\x1fACTIVE\x1f12\x1f\x1f\x1eb\x1fACTIVE\x1fCOMPLETED\x1fx\x1f\x1f")
	f.Add("2-3", "")
	f.Add("2-3", "\x1e\x1e\x1f")
	f.Fuzz(func(t *testing.T, id, packed string) {
		for _, e := range eventlog.Decode(id, packed) {
			if e.TaskID == "" || !strings.HasPrefix(e.ID, id+".") {
				t.Fatalf("bad event %+v", e)
			}
		}
	})
}
