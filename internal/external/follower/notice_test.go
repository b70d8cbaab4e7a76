package follower

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// noticeRig is a store and notifier of a fresh namespace, with helpers that
// finish tasks as an in-process worker would.
type noticeRig struct {
	rdb  redis.UniversalClient
	ns   string
	st   *store.Store
	note *notify.Notifier
}

func newNoticeRig(t *testing.T, cfg store.Config) *noticeRig {
	rdb, ns := testredis.Client(t)
	cfg.Namespace = ns
	st, err := store.New(rdb, cfg)
	require.NoError(t, err)
	note, err := notify.New(rdb, notify.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	return &noticeRig{rdb: rdb, ns: ns, st: st, note: note}
}

// finish runs one task of typ for session to the end: "completed", "dlq"
// (a permanent failure "boom") or "cancelled" (cancelled while PENDING).
func (r *noticeRig) finish(t *testing.T, typ, session, how string) *task.Task {
	t.Helper()
	ctx := context.Background()
	tk, err := r.st.Enqueue(ctx, store.EnqueueRequest{Type: typ, Content: "x", SessionID: session})
	require.NoError(t, err)
	if how == "cancelled" {
		out, err := r.st.Cancel(ctx, tk.ID)
		require.NoError(t, err)
		require.Equal(t, store.Cancelled, out)
	} else {
		got, err := r.st.Fetch(ctx, store.FetchRequest{N: 1, WorkerID: "w", TokenPrefix: "w:" + tk.ID, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, got, 1)
		if how == "completed" {
			require.NoError(t, r.st.Complete(ctx, tk.ID, got[0].Lease, json.RawMessage(`{"summary":"s"}`)))
		} else {
			_, err := r.st.Fail(ctx, tk.ID, got[0].Lease, store.Failure{ErrorType: "X", Message: "boom", Permanent: true, Attempt: 1})
			require.NoError(t, err)
		}
	}
	tk, err = r.st.Get(ctx, tk.ID)
	require.NoError(t, err)
	return tk
}

// run starts n until the returned stop.
func (r *noticeRig) run(t *testing.T, n *InProcessNotifier) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	return func() { cancel(); require.NoError(t, <-done) }
}

// caughtUp waits until the notifier's cursor has reached the stream's
// newest event: everything written so far has been handled.
func (r *noticeRig) caughtUp(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	latest, err := r.st.Events().Latest(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		cur, err := r.rdb.Get(ctx, newKeys(keyspace.MustParse(r.ns)).noticeCursor()).Result()
		if err != nil {
			return false
		}
		entry, _, _ := strings.Cut(cur, ".")
		return compareIDs(entry, latest) >= 0
	}, 10*time.Second, 5*time.Millisecond)
}

func (r *noticeRig) notes(t *testing.T, session string) []notify.Notification {
	t.Helper()
	got, err := r.note.List(context.Background(), session, "", 1000)
	require.NoError(t, err)
	return got
}

// TestInProcessNotifierOnePerFinish: a session's in-process tasks that
// complete, dead-letter and are cancelled yield exactly one notification
// each, in format, and so does an external type's task
// cancelled before its dispatch; an external type's task that completes
// or dead-letters (the orchestrator's to announce), a task without a
// session and a task that finished before the first run's Since yield
// none; replaying the whole stream (cursor gone, a second notifier at
// once) adds nothing.
func TestInProcessNotifierOnePerFinish(t *testing.T) {
	t.Parallel()
	r := newNoticeRig(t, store.Config{})
	old := r.finish(t, "summarize", "s1", "completed") // before the notifier's first run
	// Since is compared with event entry ids (Redis's clock, at or a
	// little after the transition's time): leave a margin.
	since := old.UpdatedAt.Add(100 * time.Millisecond)
	require.Eventually(t, func() bool { return time.Now().After(since) }, time.Second, time.Millisecond)

	cfg := NoticeConfig{External: []string{"x.ext"}, Since: since}
	stop := r.run(t, NewInProcessNotifier(r.st, r.note, cfg))
	done := r.finish(t, "summarize", "s1", "completed")
	dead := r.finish(t, "noop", "s1", "dlq")
	gone := r.finish(t, "sleep", "s1", "cancelled")
	r.finish(t, "x.ext", "s1", "completed")            // the orchestrator's to announce
	r.finish(t, "x.ext", "s1", "dlq")                  // the orchestrator's too
	extGone := r.finish(t, "x.ext", "s1", "cancelled") // before dispatch: no orchestrator sees it
	r.finish(t, "summarize", "", "completed")
	other := r.finish(t, "summarize", "s2", "completed")
	r.caughtUp(t)
	stop()

	want := map[string]notify.Notification{
		done.ID:    {Type: notify.KindCompleted, TaskType: "summarize", Message: "Your summarize task is ready!", Action: "retrieve_result"},
		dead.ID:    {Type: notify.KindFailed, TaskType: "noop", Message: "Your noop task failed: boom", Action: "view_error"},
		gone.ID:    {Type: notify.KindCancelled, TaskType: "sleep", Message: "Your sleep task was cancelled.", Action: "none"},
		extGone.ID: {Type: notify.KindCancelled, TaskType: "x.ext", Message: "Your x.ext task was cancelled.", Action: "none"},
	}
	check := func() {
		got := r.notes(t, "s1")
		require.Len(t, got, len(want), "%+v", got)
		for _, n := range got {
			w, ok := want[n.TaskID]
			require.True(t, ok, "unexpected notification %+v", n)
			require.Equal(t, w.Type, n.Type)
			require.Equal(t, w.TaskType, n.TaskType)
			require.Equal(t, w.Message, n.Message)
			require.Equal(t, w.Action, n.Action)
			require.Equal(t, "normal", n.Priority)
			require.Regexp(t, `^notif-[0-9a-f-]{36}$`, n.NotificationID)
			require.False(t, n.Timestamp.IsZero())
		}
		o := r.notes(t, "s2")
		require.Len(t, o, 1)
		require.Equal(t, other.ID, o[0].TaskID)
	}
	check()

	// Replay everything the stream holds, twice at once: nothing new.
	require.NoError(t, r.rdb.Del(context.Background(), newKeys(keyspace.MustParse(r.ns)).noticeCursor()).Err())
	cfg.Since = time.UnixMilli(0)
	stopA := r.run(t, NewInProcessNotifier(r.st, r.note, cfg))
	stopB := r.run(t, NewInProcessNotifier(r.st, r.note, cfg))
	r.caughtUp(t)
	stopA()
	stopB()
	got := r.notes(t, "s1")
	require.Len(t, got, len(want)+1, "the replay announced the task that finished before Since, and only it")
	require.Equal(t, old.ID, got[len(got)-1].TaskID)
	want[old.ID] = notify.Notification{Type: notify.KindCompleted, TaskType: "summarize", Message: "Your summarize task is ready!", Action: "retrieve_result"}
	check()
}

// TestInProcessNotifierSweepsTheIndexesAfterAGap: a notifier whose cursor
// fell behind the capped event stream finds the gap, counts it, and
// announces the missed finishes from the finished-task indexes: each
// exactly once.
func TestInProcessNotifierSweepsTheIndexesAfterAGap(t *testing.T) {
	t.Parallel()
	r := newNoticeRig(t, store.Config{EventStreamMaxLen: 10})
	ctx := context.Background()
	hows := []string{"completed", "dlq", "cancelled"}
	first := r.finish(t, "summarize", "s1", "completed")
	n := NewInProcessNotifier(r.st, r.note, NoticeConfig{Since: first.UpdatedAt})
	stop := r.run(t, n)
	r.caughtUp(t)
	stop()
	require.Len(t, r.notes(t, "s1"), 1)
	ids := map[string]string{first.ID: "completed"}
	for i := range 60 {
		tk := r.finish(t, "summarize", "s1", hows[i%3])
		ids[tk.ID] = hows[i%3]
	}
	cursor, err := r.rdb.Get(ctx, newKeys(keyspace.MustParse(r.ns)).noticeCursor()).Result()
	require.NoError(t, err)
	info, err := r.rdb.XInfoStream(ctx, r.st.EventStreamKeys()[0]).Result() // one partition
	require.NoError(t, err)
	entry, _, _ := strings.Cut(cursor, ".")
	require.Equal(t, -1, compareIDs(entry, info.FirstEntry.ID), "events after the cursor were trimmed (the test's premise)")

	n = NewInProcessNotifier(r.st, r.note, NoticeConfig{})
	gaps := 0
	n.OnGap(func() { gaps++ })
	stop = r.run(t, n)
	require.Eventually(t, func() bool { return len(r.notes(t, "s1")) >= len(ids) }, 10*time.Second, 10*time.Millisecond)
	r.caughtUp(t)
	stop()
	require.GreaterOrEqual(t, n.Gaps(), int64(1), "the gap was detected")
	require.Equal(t, int(n.Gaps()), gaps)
	got := r.notes(t, "s1")
	require.Len(t, got, len(ids), "one notification per finished task")
	kinds := map[string]notify.Kind{"completed": notify.KindCompleted, "dlq": notify.KindFailed, "cancelled": notify.KindCancelled}
	seen := map[string]bool{}
	for _, nt := range got {
		how, ok := ids[nt.TaskID]
		require.True(t, ok)
		require.False(t, seen[nt.TaskID], "task %s notified twice", nt.TaskID)
		seen[nt.TaskID] = true
		require.Equal(t, kinds[how], nt.Type)
	}
}

// TestExternalTaskEndedOffThePathIsAnnounced: an external type's task that
// ends where no service outcome reaches the orchestrator is announced by
// the notifier, once: dead-lettered by the age sweep while PENDING,
// dead-lettered by the retry promotion (its retry came due past the max
// age), and cancelled by the reaper (a cancel requested while its lease
// ran out). One failed by its attempt (the orchestrator's to announce) and
// one promoted back to PENDING are not.
func TestExternalTaskEndedOffThePathIsAnnounced(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now().Add(-24 * time.Hour))
	r := newNoticeRig(t, store.Config{Clock: clk, MaxTaskAge: new(time.Hour)})
	ctx := context.Background()
	cfg := NoticeConfig{External: []string{"x.ext"}, Since: time.UnixMilli(0)}
	stop := r.run(t, NewInProcessNotifier(r.st, r.note, cfg))

	enqueue := func() *task.Task {
		tk, err := r.st.Enqueue(ctx, store.EnqueueRequest{Type: "x.ext", Content: "x", SessionID: "s1"})
		require.NoError(t, err)
		return tk
	}
	fetch := func(id string, lease time.Duration) string {
		got, err := r.st.Fetch(ctx, store.FetchRequest{N: 1, WorkerID: "w", TokenPrefix: "w:" + id, Lease: lease})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, id, got[0].ID)
		return got[0].Lease
	}
	state := func(id string) task.State {
		tk, err := r.st.Get(ctx, id)
		require.NoError(t, err)
		return tk.State
	}

	// Too old while PENDING: the sweep dead-letters it.
	aged := enqueue()
	clk.Advance(2 * time.Hour)
	n, err := r.st.SweepAged(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, task.StateDLQ, state(aged.ID))

	// A transient failure whose retry comes due past the max age.
	late := enqueue()
	tok := fetch(late.ID, time.Minute)
	out, err := r.st.Fail(ctx, late.ID, tok, store.Failure{ErrorType: "ServiceUnavailable", Message: "busy",
		RetryAt: clk.Now().Add(2 * time.Hour), Attempt: 1})
	require.NoError(t, err)
	require.Equal(t, task.StateFailed, out.State)
	clk.Advance(3 * time.Hour)
	_, err = r.st.PromoteDue(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, task.StateDLQ, state(late.ID))

	// Cancel requested while running; the lease runs out: the reaper ends it.
	reaped := enqueue()
	fetch(reaped.ID, time.Minute)
	co, err := r.st.Cancel(ctx, reaped.ID)
	require.NoError(t, err)
	require.Equal(t, store.CancelRequested, co)
	clk.Advance(2 * time.Minute)
	_, _, err = r.st.ReapExpired(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, task.StateCancelled, state(reaped.ID))

	// The orchestrator's own: an attempt failed permanently.
	failed := enqueue()
	tok = fetch(failed.ID, time.Minute)
	_, err = r.st.Fail(ctx, failed.ID, tok, store.Failure{ErrorType: "InvalidInput", Message: "bad", Permanent: true, Attempt: 1})
	require.NoError(t, err)
	require.Equal(t, task.StateDLQ, state(failed.ID))
	// A retry promoted in time: PENDING again, nothing to announce.
	retried := enqueue()
	tok = fetch(retried.ID, time.Minute)
	_, err = r.st.Fail(ctx, retried.ID, tok, store.Failure{ErrorType: "ServiceUnavailable", Message: "busy", RetryAt: clk.Now(), Attempt: 1})
	require.NoError(t, err)
	_, err = r.st.PromoteDue(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, task.StatePending, state(retried.ID))

	r.caughtUp(t)
	stop()
	got := r.notes(t, "s1")
	kinds := map[string]notify.Kind{}
	for _, n := range got {
		_, dup := kinds[n.TaskID]
		require.False(t, dup, "task %s announced twice", n.TaskID)
		kinds[n.TaskID] = n.Type
	}
	require.Equal(t, map[string]notify.Kind{
		aged.ID:   notify.KindFailed,
		late.ID:   notify.KindFailed,
		reaped.ID: notify.KindCancelled,
	}, kinds)
}
