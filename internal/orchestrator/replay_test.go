package orchestrator

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/notify"
	"github.com/taskflow/taskflow/internal/stream"
	"github.com/taskflow/taskflow/internal/task"
)

// entries returns the stream's entries as the orchestrator reads them.
func (b *bundle) entries(t *testing.T, key string) []stream.Message {
	t.Helper()
	xs, err := b.rdb.XRange(context.Background(), key, "-", "+").Result()
	require.NoError(t, err)
	out := make([]stream.Message, 0, len(xs))
	for _, x := range xs {
		e, err := stream.Decode(x.ID, x.Values)
		require.NoError(t, err)
		out = append(out, stream.Message{Stream: key, ID: x.ID, Event: e})
	}
	return out
}

// forgetApplied deletes the attempt's applied marker, as if the process
// that applied the outcome had died after its side effects and before
// writing the marker.
func (b *bundle) forgetApplied(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	tok, err := b.rdb.Get(ctx, b.k.dispatch(id)).Result()
	require.NoError(t, err)
	n, err := b.rdb.Del(ctx, b.k.applied(id+":"+tok)).Result()
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
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"echo.run": echo, "bad.run": bad}, skipArchive: true})
	ctx := context.Background()
	ok := b.enqueue(t, "echo.run", "s1", `{"word":"hi"}`, time.Minute)
	ko := b.enqueue(t, "bad.run", "s2", `{}`, time.Minute)
	b.waitState(t, ok.ID, task.StateCompleted)
	b.waitState(t, ko.ID, task.StateDLQ)
	first := b.waitNotes(t, "s1", 1)
	b.waitNotes(t, "s2", 1)
	b.drained(t, b.sk.Completed())
	b.drained(t, b.sk.Failed())

	b.forgetApplied(t, ok.ID)
	b.forgetApplied(t, ko.ID)
	for _, key := range []string{b.sk.Completed(), b.sk.Failed()} {
		ms := b.entries(t, key)
		require.Len(t, ms, 1)
		require.NoError(t, b.orch.handle(ctx, ms[0]), "replayed apply of %s", key)
	}
	ns, err := b.note.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1, "the replayed completion notifies once")
	require.Equal(t, first[0].NotificationID, ns[0].NotificationID)
	ns, err = b.note.List(ctx, "s2", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1, "the replayed dead-lettering notifies once")
	require.Equal(t, notify.KindFailed, ns[0].Type)
	n, err := b.rdb.XLen(ctx, b.sk.DLQ()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "one task.dlq entry")
	// the replay did redo the effects that are idempotent
	_, err = b.rdb.Get(ctx, b.rk.Cache(ok.ID)).Result()
	require.NoError(t, err)
}

// TestTimeoutNoticeOwedIsPublished: a task marked TIMEOUT by an
// orchestrator that died before publishing task.timeout (the two are
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
	b := setup(t, options{noOrch: true, handlers: map[string]extsvc.HandlerFunc{"slow.run": slow}})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	ctx := context.Background()
	tk := b.enqueue(t, "slow.run", "s1", `{}`, 2*time.Second)
	<-running
	cur := b.waitState(t, tk.ID, task.StateActive)
	require.Eventually(t, func() bool {
		cur, _ = b.st.Get(ctx, tk.ID)
		return cur.HandedOff
	}, 10*time.Second, 10*time.Millisecond)
	// the crashed orchestrator's half: TIMEOUT, nothing published
	require.NoError(t, b.st.MarkTimeout(ctx, tk.ID, cur.Lease))
	n, err := b.rdb.XLen(ctx, b.sk.Timeout()).Result()
	require.NoError(t, err)
	require.Zero(t, n)

	b.orch = b.startOrchestrator(t, Config{})
	ns := b.waitNotes(t, "s1", 1)
	require.Equal(t, notify.KindTimeout, ns[0].Type)
	require.Contains(t, ns[0].Message, "still running")
	require.Len(t, b.entries(t, b.sk.Timeout()), 1)

	// a second publication of the same attempt's timeout writes nothing,
	// and a second delivery of the event notifies no one again
	require.NoError(t, b.orch.publishTimeout(ctx, cur, cur.Lease, cur.Timeout))
	ms := b.entries(t, b.sk.Timeout())
	require.Len(t, ms, 1)
	require.NoError(t, b.orch.handle(ctx, ms[0]))
	_, err = b.rdb.Get(ctx, b.k.published("timeout", tk.ID, cur.Lease)).Result()
	require.NotErrorIs(t, err, redis.Nil)

	close(release)
	b.waitState(t, tk.ID, task.StateCompleted)
	ns = b.waitNotes(t, "s1", 2)
	require.Equal(t, notify.KindCompleted, ns[1].Type)
	ns, err = b.note.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 2, "one timeout notice, one completion")
}
