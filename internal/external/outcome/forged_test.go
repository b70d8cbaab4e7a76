package outcome_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/task"
)

// staleCounter counts the outcomes the consumer reports as stale.
func staleCounter() (*atomic.Int64, func(string, *task.Task, time.Duration)) {
	var n atomic.Int64
	return &n, func(kind string, _ *task.Task, _ time.Duration) {
		if kind == "stale" {
			n.Add(1)
		}
	}
}

// TestForgedCompletionOfCompletedTaskIgnored: a task.completed with
// another token (an older attempt's, or a forger's) for a task that is
// COMPLETED changes nothing: one notification, the first result stands,
// and the event is counted as stale.
func TestForgedCompletionOfCompletedTaskIgnored(t *testing.T) {
	t.Parallel()
	stale, observe := staleCounter()
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"echo.run": externaltest.Echo}, SkipArchive: true,
		Outcome: outcome.Config{Observe: observe}})
	ctx := context.Background()
	tk := b.Enqueue(t, "echo.run", "s1", `{"word":"hi"}`, time.Minute)
	done := b.WaitState(t, tk.ID, task.StateCompleted)
	b.WaitNotes(t, "s1", 1)
	b.Drained(t, b.Streams.Completed())
	pub := protocol.NewPublisher(b.Redis, 0, nil)
	for _, tok := range []string{"an-older-attempts-token", ""} { // "" : no token, the dispatch token is assumed
		e, err := protocol.New(protocol.TypeCompleted, time.Now(), protocol.CompletedData{TaskID: tk.ID, Status: "success",
			Result: json.RawMessage(`{"forged":true}`), CompletedBy: "forger", Token: tok})
		require.NoError(t, err)
		_, err = pub.Publish(ctx, b.Streams.Completed(), e)
		require.NoError(t, err)
	}
	b.Drained(t, b.Streams.Completed())
	ns, err := b.Notifier.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1, "a completion that did not complete the task must not notify again")
	got, err := b.Store.Get(ctx, tk.ID)
	require.NoError(t, err)
	require.JSONEq(t, string(done.Result), string(got.Result))
	cached, err := b.Redis.Get(ctx, b.Results.Cache(tk.ID)).Result()
	require.NoError(t, err)
	require.NotContains(t, cached, "forged")
	// the tokenless one carries the finishing attempt's token (assumed) and
	// is dropped as a duplicate of the applied outcome before any check:
	// both ignored outcomes are counted as stale
	require.EqualValues(t, 2, stale.Load(), "every ignored outcome is counted as stale")
}

// TestForgedFailureOfDeadLetteredTaskIgnored: a task.failed with another
// token for a task already in the DLQ publishes no second task.dlq entry
// and sends no second task_failed notification (with the forger's text).
func TestForgedFailureOfDeadLetteredTaskIgnored(t *testing.T) {
	t.Parallel()
	bad := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		return nil, extsvc.Fail("INSUFFICIENT_DATA", "not enough rows", false)
	}
	stale, observe := staleCounter()
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"bad.run": bad}, SkipArchive: true,
		Outcome: outcome.Config{Observe: observe}})
	ctx := context.Background()
	tk := b.Enqueue(t, "bad.run", "s1", `{}`, time.Minute)
	b.WaitState(t, tk.ID, task.StateDLQ)
	b.WaitNotes(t, "s1", 1)
	b.Drained(t, b.Streams.Failed())
	no := false
	for _, tok := range []string{"other-token", ""} {
		e, err := protocol.New(protocol.TypeFailed, time.Now(), protocol.FailedData{TaskID: tk.ID, Status: "failed",
			Error: protocol.ErrorInfo{Code: "FORGED", Message: "forged text", Retryable: &no}, FailedBy: "forger", Token: tok})
		require.NoError(t, err)
		_, err = protocol.NewPublisher(b.Redis, 0, nil).Publish(ctx, b.Streams.Failed(), e)
		require.NoError(t, err)
	}
	b.Drained(t, b.Streams.Failed())
	ns, err := b.Notifier.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1)
	require.NotContains(t, ns[0].Message, "forged")
	n, err := b.Redis.XLen(ctx, b.Streams.DLQ()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "one task.dlq entry")
	require.EqualValues(t, 2, stale.Load(), "every ignored outcome is counted as stale (the other token's and the duplicate)")
}
