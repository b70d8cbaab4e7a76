package handoff_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/external/handoff"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/task"
)

func TestCancelRunningTask(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	sawCancel := make(chan struct{}, 1)
	blocker := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		sawCancel <- struct{}{}
		return nil, ctx.Err()
	}
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"block.run": blocker}})
	tk := b.Enqueue(t, "block.run", "s1", `{}`, time.Minute)
	<-started
	out, err := b.Store.Cancel(context.Background(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, "requested", string(out))
	b.WaitState(t, tk.ID, task.StateCancelled)
	select {
	case <-sawCancel:
	case <-time.After(10 * time.Second):
		t.Fatal("the service's handler was never cancelled")
	}
}

func TestTimeoutThenLateCompletion(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`{"late":true}`), nil
	}
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"slow.run": slow}})
	tk := b.Enqueue(t, "slow.run", "s1", `{}`, time.Second)
	b.WaitState(t, tk.ID, task.StateTimeout)
	ns := b.WaitNotes(t, "s1", 1)
	require.Equal(t, notify.KindTimeout, ns[0].Type)
	require.Contains(t, ns[0].Message, "still running")
	// task.timeout is published after the state is marked: wait for it
	xs := b.WaitTimeoutNotices(t, 1)
	require.Len(t, xs, 1)

	close(release)
	done := b.WaitState(t, tk.ID, task.StateCompleted)
	require.JSONEq(t, `{"late":true}`, string(done.Result))
	ns = b.WaitNotes(t, "s1", 2)
	require.Equal(t, notify.KindCompleted, ns[1].Type)
}

// TestTimeoutNoticeOwedIsPublished: a task marked TIMEOUT by an
// watcher that died before publishing task.timeout (the two are
// separate steps) still gets its task.timeout and its session is told,
// once, by the next watcher; replaying the publication writes nothing.
func TestTimeoutNoticeOwedIsPublished(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	running := make(chan struct{}, 1)
	slow := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		running <- struct{}{}
		<-release
		return json.RawMessage(`{"late":true}`), nil
	}
	b := externaltest.Setup(t, externaltest.Options{NoOrchestrator: true, Handlers: map[string]extsvc.HandlerFunc{"slow.run": slow}})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	ctx := context.Background()
	tk := b.Enqueue(t, "slow.run", "s1", `{}`, 2*time.Second)
	<-running
	cur := b.WaitState(t, tk.ID, task.StateActive)
	require.Eventually(t, func() bool {
		cur, _ = b.Store.Get(ctx, tk.ID)
		return cur.HandedOff
	}, 10*time.Second, 10*time.Millisecond)
	// the crashed watcher's half: TIMEOUT, nothing published
	require.NoError(t, b.Store.MarkTimeout(ctx, tk.ID, cur.Lease))
	n, err := b.Redis.XLen(ctx, b.Streams.Timeout()).Result()
	require.NoError(t, err)
	require.Zero(t, n)

	b.StartOrchestrator(t, outcome.Config{}, handoff.Config{})
	ns := b.WaitNotes(t, "s1", 1)
	require.Equal(t, notify.KindTimeout, ns[0].Type)
	require.Contains(t, ns[0].Message, "still running")
	require.Len(t, b.Entries(t, b.Streams.Timeout()), 1)
	_, err = b.Redis.Get(ctx, handoff.TimeoutPublishedKey(b.Namespace, tk.ID, cur.Lease)).Result()
	require.NoError(t, err, "the marker is written with the event")

	// a second publication of the same attempt's timeout (another
	// watcher's, or a replay) writes nothing
	w, err := handoff.New(b.Store, b.Notifier, nil, handoff.Config{})
	require.NoError(t, err)
	require.NoError(t, handoff.PublishTimeout(ctx, w, cur, cur.Lease, cur.Timeout))
	ms := b.Entries(t, b.Streams.Timeout())
	require.Len(t, ms, 1)
	// and the event delivered twice (a copy of the entry) notifies no one
	// again: the notice's id is derived from the attempt
	require.NoError(t, b.Redis.XAdd(ctx, &redis.XAddArgs{Stream: b.Streams.Timeout(), Values: ms[0].Event.Values()}).Err())
	b.Drained(t, b.Streams.Timeout())
	ns, err = b.Notifier.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1)

	close(release)
	b.WaitState(t, tk.ID, task.StateCompleted)
	ns = b.WaitNotes(t, "s1", 2)
	require.Equal(t, notify.KindCompleted, ns[1].Type)
	ns, err = b.Notifier.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 2, "one timeout notice, one completion")
}
