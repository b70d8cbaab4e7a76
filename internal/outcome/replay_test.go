package outcome_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/agenttest"
	"github.com/taskflow/taskflow/internal/notify"
	"github.com/taskflow/taskflow/internal/outcome"
	"github.com/taskflow/taskflow/internal/task"
)

// forgetApplied deletes the attempt's applied marker, as if the process
// that applied the outcome had died after its side effects and before
// writing the marker.
func forgetApplied(t *testing.T, b *agenttest.Bundle, id string) {
	t.Helper()
	n, err := b.Redis.Del(context.Background(), outcome.AppliedKey(b.Namespace, id, b.LastToken(t, id))).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the applied marker existed")
}

// TestReplayedApplyNotifiesOnce: an orchestrator that notified and died
// before its applied marker leaves the entry to be applied again; the
// replay redoes the effects but the session is notified once (the
// notification id is derived from task, token and kind), and a replayed
// dead-lettering publishes one task.dlq entry.
func TestReplayedApplyNotifiesOnce(t *testing.T) {
	t.Parallel()
	bad := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		return nil, extsvc.Fail("INSUFFICIENT_DATA", "not enough rows", false)
	}
	b := agenttest.Setup(t, agenttest.Options{Handlers: map[string]extsvc.HandlerFunc{"echo.run": agenttest.Echo, "bad.run": bad}, SkipArchive: true})
	ctx := context.Background()
	ok := b.Enqueue(t, "echo.run", "s1", `{"word":"hi"}`, time.Minute)
	ko := b.Enqueue(t, "bad.run", "s2", `{}`, time.Minute)
	b.WaitState(t, ok.ID, task.StateCompleted)
	b.WaitState(t, ko.ID, task.StateDLQ)
	first := b.WaitNotes(t, "s1", 1)
	b.WaitNotes(t, "s2", 1)
	b.Drained(t, b.Streams.Completed())
	b.Drained(t, b.Streams.Failed())

	forgetApplied(t, b, ok.ID)
	forgetApplied(t, b, ko.ID)
	for _, key := range []string{b.Streams.Completed(), b.Streams.Failed()} {
		ms := b.Entries(t, key)
		require.Len(t, ms, 1)
		require.NoError(t, outcome.Handle(ctx, b.Consumer, ms[0]), "replayed apply of %s", key)
	}
	ns, err := b.Notifier.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1, "the replayed completion notifies once")
	require.Equal(t, first[0].NotificationID, ns[0].NotificationID)
	ns, err = b.Notifier.List(ctx, "s2", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1, "the replayed dead-lettering notifies once")
	require.Equal(t, notify.KindFailed, ns[0].Type)
	n, err := b.Redis.XLen(ctx, b.Streams.DLQ()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "one task.dlq entry")
	// the replay did redo the effects that are idempotent
	_, err = b.Redis.Get(ctx, b.Results.Cache(ok.ID)).Result()
	require.NoError(t, err)
}
