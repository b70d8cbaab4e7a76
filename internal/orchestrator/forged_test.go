package orchestrator

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/stream"
	"github.com/taskflow/taskflow/internal/task"
)

// drained waits until agent-group has read and acknowledged every entry of
// the stream: the orchestrator applies an event's effects before it
// acknowledges it, so they are all visible then.
func (b *bundle) drained(t *testing.T, key string) {
	t.Helper()
	require.Eventually(t, func() bool {
		lag, pending, err := stream.Lag(context.Background(), b.rdb, key, stream.AgentGroup)
		return err == nil && pending == 0 && lag == 0
	}, 10*time.Second, 10*time.Millisecond)
}

// staleCounter counts the outcomes the orchestrator reports as stale.
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
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"echo.run": echo}, skipArchive: true,
		orchCfg: Config{Observe: observe}})
	ctx := context.Background()
	tk := b.enqueue(t, "echo.run", "s1", `{"word":"hi"}`, time.Minute)
	done := b.waitState(t, tk.ID, task.StateCompleted)
	b.waitNotes(t, "s1", 1)
	b.drained(t, b.sk.Completed())
	pub := stream.NewPublisher(b.rdb, 0, nil)
	for _, tok := range []string{"an-older-attempts-token", ""} { // "" : no token, the dispatch token is assumed
		e, err := stream.New(stream.TypeCompleted, time.Now(), stream.CompletedData{TaskID: tk.ID, Status: "success",
			Result: json.RawMessage(`{"forged":true}`), CompletedBy: "forger", Token: tok})
		require.NoError(t, err)
		_, err = pub.Publish(ctx, b.sk.Completed(), e)
		require.NoError(t, err)
	}
	b.drained(t, b.sk.Completed())
	ns, err := b.note.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1, "a completion that did not complete the task must not notify again")
	got, err := b.st.Get(ctx, tk.ID)
	require.NoError(t, err)
	require.JSONEq(t, string(done.Result), string(got.Result))
	cached, err := b.rdb.Get(ctx, b.rk.Cache(tk.ID)).Result()
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
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"bad.run": bad}, skipArchive: true,
		orchCfg: Config{Observe: observe}})
	ctx := context.Background()
	tk := b.enqueue(t, "bad.run", "s1", `{}`, time.Minute)
	b.waitState(t, tk.ID, task.StateDLQ)
	b.waitNotes(t, "s1", 1)
	b.drained(t, b.sk.Failed())
	no := false
	for _, tok := range []string{"other-token", ""} {
		e, err := stream.New(stream.TypeFailed, time.Now(), stream.FailedData{TaskID: tk.ID, Status: "failed",
			Error: stream.ErrorInfo{Code: "FORGED", Message: "forged text", Retryable: &no}, FailedBy: "forger", Token: tok})
		require.NoError(t, err)
		_, err = stream.NewPublisher(b.rdb, 0, nil).Publish(ctx, b.sk.Failed(), e)
		require.NoError(t, err)
	}
	b.drained(t, b.sk.Failed())
	ns, err := b.note.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1)
	require.NotContains(t, ns[0].Message, "forged")
	n, err := b.rdb.XLen(ctx, b.sk.DLQ()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "one task.dlq entry")
	require.EqualValues(t, 2, stale.Load(), "every ignored outcome is counted as stale (the other token's and the duplicate)")
}
