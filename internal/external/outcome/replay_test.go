package outcome_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/task"
)

// marker reads the applied marker of the task's last attempt.
func marker(t *testing.T, b *externaltest.Bundle, id string) string {
	t.Helper()
	v, err := b.Redis.Get(context.Background(), outcome.AppliedKey(b.Namespace, id, b.LastToken(t, id))).Result()
	require.NoError(t, err)
	return v
}

// rewind sets the applied marker of the task's last attempt back to v, as
// a process killed before the next step of the outcome would have left
// it.
func rewind(t *testing.T, b *externaltest.Bundle, id, v string) {
	t.Helper()
	require.Equal(t, "1", marker(t, b, id), "the outcome was fully applied")
	require.NoError(t, b.Redis.Set(context.Background(), outcome.AppliedKey(b.Namespace, id, b.LastToken(t, id)), v, time.Hour).Err())
}

// TestReplayedApplyNotifiesOnce: a consumer killed after an outcome's
// effects and before marking it done (finish.lua: marker and XACK in one
// step) leaves the entry to be delivered again; the replay redoes the
// effects (the result cache comes back) but the session is notified once
// (the notification id is derived from task, token and kind), and a
// dead-lettering killed after its task.dlq publishes no second one.
func TestReplayedApplyNotifiesOnce(t *testing.T) {
	t.Parallel()
	bad := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		return nil, extsvc.Fail("INSUFFICIENT_DATA", "not enough rows", false)
	}
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"echo.run": externaltest.Echo, "bad.run": bad}, SkipArchive: true})
	ctx := context.Background()
	ok := b.Enqueue(t, "echo.run", "s1", `{"word":"hi"}`, time.Minute)
	ko := b.Enqueue(t, "bad.run", "s2", `{}`, time.Minute)
	b.WaitState(t, ok.ID, task.StateCompleted)
	b.WaitState(t, ko.ID, task.StateDLQ)
	first := b.WaitNotes(t, "s1", 1)
	b.WaitNotes(t, "s2", 1)
	b.Drained(t, b.Streams.Completed())
	b.Drained(t, b.Streams.Failed())

	completion := b.Entries(t, b.Streams.Completed())
	require.Len(t, completion, 1)
	failure := b.Entries(t, b.Streams.Failed())
	require.Len(t, failure, 1)
	rewind(t, b, ok.ID, outcome.EntryName(completion[0]))
	rewind(t, b, ko.ID, "dlq "+outcome.EntryName(failure[0]))
	require.NoError(t, b.Redis.Del(ctx, b.Results.Cache(ok.ID)).Err())
	for _, m := range []protocol.Message{completion[0], failure[0]} {
		require.NoError(t, outcome.Handle(ctx, b.Consumer, m), "replayed apply of %s", m.Stream)
	}
	ns, err := b.Notifier.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1, "the replayed completion notifies once")
	require.Equal(t, first[0].NotificationID, ns[0].NotificationID)
	_, err = b.Redis.Get(ctx, b.Results.Cache(ok.ID)).Result()
	require.NoError(t, err, "the replay redid the effects")
	ns, err = b.Notifier.List(ctx, "s2", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1, "the replayed dead-lettering notifies once")
	require.Equal(t, notify.KindFailed, ns[0].Type)
	n, err := b.Redis.XLen(ctx, b.Streams.DLQ()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "one task.dlq entry")
	require.Equal(t, "1", marker(t, b, ok.ID), "marked done again")
	require.Equal(t, "1", marker(t, b, ko.ID))
}

// TestDeadLetteringKilledAfterTransition: a consumer killed between a
// failure's DLQ transition and its task.dlq leaves the entry pending with
// the outcome claimed; the consumer that claims the entry publishes the
// task.dlq, notifies, and marks the outcome done — each once.
func TestDeadLetteringKilledAfterTransition(t *testing.T) {
	t.Parallel()
	bad := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		return nil, extsvc.Fail("INSUFFICIENT_DATA", "not enough rows", false)
	}
	b := externaltest.Setup(t, externaltest.Options{NoOrchestrator: true, SkipArchive: true, Handlers: map[string]extsvc.HandlerFunc{"bad.run": bad}})
	ctx := context.Background()
	dying, err := outcome.New(b.Store, b.Notifier, nil, outcome.Config{Consumer: "agent-dying", Block: 50 * time.Millisecond})
	require.NoError(t, err)
	crashed := make(chan struct{})
	outcome.CrashAfterApply(dying, func(protocol.Message) bool { close(crashed); return true })
	b.Run(t, "dying", dying.Run)

	tk := b.Enqueue(t, "bad.run", "s1", `{}`, time.Minute)
	<-crashed
	b.WaitState(t, tk.ID, task.StateDLQ) // the transition happened
	n, err := b.Redis.XLen(ctx, b.Streams.DLQ()).Result()
	require.NoError(t, err)
	require.Zero(t, n, "killed before task.dlq")
	ms := b.Entries(t, b.Streams.Failed())
	require.Len(t, ms, 1)
	require.Equal(t, outcome.EntryName(ms[0]), marker(t, b, tk.ID), "the outcome is claimed by its entry")

	b.StartConsumer(t, outcome.Config{Consumer: "agent-2", ClaimIdle: 200 * time.Millisecond})
	ns := b.WaitNotes(t, "s1", 1)
	require.Equal(t, notify.KindFailed, ns[0].Type)
	b.Drained(t, b.Streams.Failed())
	n, err = b.Redis.XLen(ctx, b.Streams.DLQ()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "one task.dlq entry")
	ns, err = b.Notifier.List(ctx, "s1", "", 10)
	require.NoError(t, err)
	require.Len(t, ns, 1)
	require.Equal(t, "1", marker(t, b, tk.ID))
}

// TestFirstOutcomeWinsAcrossACrash: a consumer killed after claiming an
// attempt's outcome for its entry and before the transition; the same
// attempt's second outcome, read meanwhile by another consumer, waits for
// the first (held by the dead consumer) for ClaimIdle, then finds the
// outcome claimed and is ignored; the first entry, claimed from the dead
// consumer, is applied. The first outcome wins, notified once.
func TestFirstOutcomeWinsAcrossACrash(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	running := make(chan string, 1)
	hold := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		running <- tk.ID
		<-release
		return nil, extsvc.Fail("GONE", "the service's own report comes after the test's", true)
	}
	stale, observe := staleCounter()
	b := externaltest.Setup(t, externaltest.Options{NoOrchestrator: true, SkipArchive: true, Handlers: map[string]extsvc.HandlerFunc{"twice.run": hold}})
	defer close(release)
	ctx := context.Background()
	tk := b.Enqueue(t, "twice.run", "s1", `{}`, time.Minute)
	<-running
	tok := b.LastToken(t, tk.ID)
	outcomeN := func(n int) protocol.CompletedData {
		return protocol.CompletedData{TaskID: tk.ID, Status: "success", Result: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)),
			CompletedBy: "twice-service", Token: tok}
	}

	dying, err := outcome.New(b.Store, b.Notifier, nil, outcome.Config{Consumer: "agent-dying", Block: 50 * time.Millisecond})
	require.NoError(t, err)
	crashed := make(chan struct{})
	outcome.CrashAfterClaim(dying, func(protocol.Message) bool { close(crashed); return true })
	stopDying := b.Run(t, "dying", dying.Run)
	b.Publish(t, b.Streams.Completed(), protocol.TypeCompleted, outcomeN(1))
	<-crashed
	stopDying() // its loop has ended: it reads nothing more
	got, err := b.Store.Get(ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateActive, got.State, "killed before the transition")

	b.Publish(t, b.Streams.Completed(), protocol.TypeCompleted, outcomeN(2))
	b.StartConsumer(t, outcome.Config{Consumer: "agent-live", ClaimIdle: 500 * time.Millisecond, Observe: observe})
	done := b.WaitState(t, tk.ID, task.StateCompleted)
	require.JSONEq(t, `{"n":1}`, string(done.Result), "the first outcome wins")
	b.Drained(t, b.Streams.Completed())
	ns, err := b.Notifier.List(ctx, "s1", "", 10)
	require.NoError(t, err)
	require.Len(t, ns, 1)
	require.EqualValues(t, 1, stale.Load(), "the second outcome is counted as stale")
	require.Equal(t, "1", marker(t, b, tk.ID))
	n, err := dispatch.InFlight(ctx, b.Redis, b.Namespace, "twice.run", time.Now())
	require.NoError(t, err)
	require.Zero(t, n, "the attempt's in-flight place is free")
}
