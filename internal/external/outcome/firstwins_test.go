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
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/task"
)

// TestFirstOutcomeWins: a service that publishes two task.completed for
// one attempt back to back (the first {"n":1}, the second {"n":2}, 0–1 ms
// apart), read by several agent-group consumers applying events in
// parallel: every task ends with the first outcome's result, notified once,
// the second counted as stale — docs/protocol.md's "the agent applies only
// the first outcome".
func TestFirstOutcomeWins(t *testing.T) {
	t.Parallel()
	var b *externaltest.Bundle
	pub := func() *protocol.Publisher { return protocol.NewPublisher(b.Redis, 0, nil) }
	twice := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		tok, err := dispatch.LastToken(ctx, b.Store, tk.ID)
		if err != nil {
			return nil, err
		}
		e, err := protocol.New(protocol.TypeCompleted, time.Now(), protocol.CompletedData{TaskID: tk.ID, Status: "success",
			Result: json.RawMessage(`{"n":1}`), CompletedBy: "twice-service", Token: tok})
		if err != nil {
			return nil, err
		}
		if _, err := pub().Publish(ctx, b.Streams.Completed(), e); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"n":2}`), nil // published by the service right after
	}
	stale, observe := staleCounter()
	b = externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"twice.run": twice}, SkipArchive: true,
		Outcome: outcome.Config{Observe: observe, Consumer: "agent-a", Parallel: 8}})
	b.StartConsumer(t, outcome.Config{Observe: observe, Consumer: "agent-b", Parallel: 8})
	b.StartConsumer(t, outcome.Config{Observe: observe, Consumer: "agent-c", Parallel: 8})

	const n = 60
	ids := make([]string, n)
	for i := range n {
		ids[i] = b.Enqueue(t, "twice.run", fmt.Sprintf("s%d", i), `{}`, time.Minute).ID
	}
	for i, id := range ids {
		got := b.WaitState(t, id, task.StateCompleted)
		b.WaitNotes(t, fmt.Sprintf("s%d", i), 1)
		require.JSONEq(t, `{"n":1}`, string(got.Result), "task %d: the first outcome wins", i)
	}
	b.Drained(t, b.Streams.Completed())
	for i, id := range ids {
		got, err := b.Store.Get(context.Background(), id)
		require.NoError(t, err)
		require.JSONEq(t, `{"n":1}`, string(got.Result), "task %d after every event is applied", i)
		ns, err := b.Notifier.List(context.Background(), fmt.Sprintf("s%d", i), "", 10)
		require.NoError(t, err)
		require.Len(t, ns, 1)
	}
	require.EqualValues(t, n, stale.Load(), "each second outcome is counted as stale")
}
