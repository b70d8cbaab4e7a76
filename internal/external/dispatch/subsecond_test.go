package dispatch_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/task"
)

// createTimeouts reads task.create over raw Redis commands, as a service in
// another language would, and returns each task's "timeout" as sent.
func createTimeouts(t *testing.T, b *externaltest.Bundle) map[string]any {
	t.Helper()
	xs, err := b.Redis.XRange(context.Background(), b.Streams.Create(), "-", "+").Result()
	require.NoError(t, err)
	out := map[string]any{}
	for _, x := range xs {
		var d map[string]any
		require.NoError(t, json.Unmarshal([]byte(x.Values["data"].(string)), &d))
		out[d["task_id"].(string)] = d["timeout"]
	}
	return out
}

// A sub-second timeout travels as its real value (0.5, not 0, which the
// protocol reads as "none"; 1.5, not 1), a task without one carries the
// deadline the agent enforces, and task.timeout names the real limit.
func TestSubSecondTimeoutsAreSent(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	slow := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return json.RawMessage(`{}`), nil
	}
	quick := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"slow.run": slow, "quick.run": quick}})
	half := b.Enqueue(t, "slow.run", "s1", `{}`, 500*time.Millisecond)
	oneAndHalf := b.Enqueue(t, "quick.run", "s1", `{}`, 1500*time.Millisecond)
	none := b.Enqueue(t, "quick.run", "s1", `{}`, 0)
	b.WaitState(t, oneAndHalf.ID, task.StateCompleted)
	b.WaitState(t, none.ID, task.StateCompleted)
	b.WaitState(t, half.ID, task.StateTimeout)
	sent := createTimeouts(t, b)
	require.EqualValues(t, 0.5, sent[half.ID])
	require.EqualValues(t, 1.5, sent[oneAndHalf.ID])
	require.EqualValues(t, 300, sent[none.ID], "no timeout: the 5 min the agent enforces")

	// the watcher marks the attempt TIMEOUT, then publishes task.timeout:
	// the notice follows the state, so wait for it
	xs := b.WaitTimeoutNotices(t, 1)
	require.Len(t, xs, 1)
	require.Contains(t, xs[0].Values["data"], "Task exceeded timeout of 0.5 seconds")
}
