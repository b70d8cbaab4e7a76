package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	rdb  redis.UniversalClient
	n    *Notifier
	hub  *Hub
	auth *auth.Authenticator
}

func setup(t testing.TB) *bundle {
	t.Helper()
	rdb, ns := testredis.Client(t)
	n, err := New(rdb, Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	a, err := auth.New(rdb, auth.Config{Namespace: keyspace.MustParse(ns), AdminKey: "admin-key"})
	require.NoError(t, err)
	hub := NewHub(n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(done) }()
	<-hub.Ready()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &bundle{rdb: rdb, n: n, hub: hub, auth: a}
}

func (b *bundle) session(t testing.TB) auth.Session {
	s, err := b.auth.CreateSession(context.Background())
	require.NoError(t, err)
	return s
}

func note(task string) Notification {
	return Notification{Type: KindCompleted, TaskID: task, TaskType: "report.generate", Message: "Your report is ready!", Action: "retrieve_result"}
}

func TestNotifyListUnreadMarkRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 3; i++ {
		n, err := b.n.Notify(ctx, "s1", note(fmt.Sprint("t", i)))
		require.NoError(t, err)
		require.NotEmpty(t, n.ID)
		require.True(t, strings.HasPrefix(n.NotificationID, "notif-"))
		ids = append(ids, n.ID)
	}
	_, err := b.n.Notify(ctx, "", note("x"))
	require.ErrorIs(t, err, ErrNoSession)

	un, err := b.n.Unread(ctx, "s1", 10)
	require.NoError(t, err)
	require.Len(t, un, 3)
	require.Equal(t, "t0", un[0].TaskID)
	listed, err := b.n.List(ctx, "s1", "", 10)
	require.NoError(t, err)
	require.Equal(t, listed, un, "Unread (one script call) decodes as List does")
	two, err := b.n.Unread(ctx, "s1", 2)
	require.NoError(t, err)
	require.Equal(t, []string{ids[0], ids[1]}, []string{two[0].ID, two[1].ID}, "oldest first, at most limit")
	require.Len(t, two, 2)
	require.NoError(t, b.n.MarkRead(ctx, "s1", ids[1]))
	require.NoError(t, b.n.MarkRead(ctx, "s1", ids[0]), "the cursor never moves back")
	un, err = b.n.Unread(ctx, "s1", 10)
	require.NoError(t, err)
	require.Len(t, un, 1)
	require.Equal(t, "t2", un[0].TaskID)
	taken, err := b.n.TakeUnread(ctx, "s1", 10)
	require.NoError(t, err)
	require.Len(t, taken, 1)
	un, err = b.n.Unread(ctx, "s1", 10)
	require.NoError(t, err)
	require.Empty(t, un)
	// Other sessions see nothing of s1's.
	other, err := b.n.Unread(ctx, "s2", 10)
	require.NoError(t, err)
	require.Empty(t, other)

	// The JSON shape docs/notifications.md shows.
	raw, err := json.Marshal(taken[0])
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, k := range []string{"notification_id", "type", "task_id", "task_type", "message", "action", "timestamp", "priority"} {
		require.Contains(t, m, k)
	}
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, m["timestamp"])

	// Retention: the session's stream and its read cursor live
	// 24 h (TTL) after the newest notification / read.
	for _, k := range []string{b.n.keys.stream("s1"), b.n.keys.cursor("s1")} {
		ttl, err := b.rdb.TTL(ctx, k).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 23*time.Hour, k)
		require.LessOrEqual(t, ttl, 24*time.Hour, k)
	}
}

// BenchmarkNotifyToFollow measures the time from Notify (what the
// orchestrator calls when it applies a completion) to the notification
// reaching a live feed's send (Follow, through the Hub: what the API's
// WebSocket and SSE write), and reports p50/p95/p99.
func BenchmarkNotifyToFollow(b *testing.B) {
	bb := setup(b)
	ctx, cancel := context.WithCancel(context.Background())
	s := bb.session(b)
	got := make(chan Notification, 1)
	done := make(chan error, 1)
	go func() {
		done <- bb.n.Follow(ctx, bb.hub, s.ID, "0", time.Minute, func(n Notification) error { got <- n; return nil },
			func() error { return nil }, nil)
	}()
	defer func() { cancel(); <-done }()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, err := bb.n.Notify(ctx, s.ID, note(fmt.Sprint("t", i)))
		require.NoError(b, err)
		<-got
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), "p50_ms")
	b.ReportMetric(q(0.95), "p95_ms")
	b.ReportMetric(q(0.99), "p99_ms")
}

// TestFollowDeliversThenLive: a feed sends what is after its start, then
// each new notification of its session only, and marks them read.
func TestFollowDeliversThenLive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	a, other := b.session(t), b.session(t)
	_, err := b.n.Notify(ctx, a.ID, note("before"))
	require.NoError(t, err)
	got := make(chan Notification, 10)
	var batches atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- b.n.Follow(ctx, b.hub, a.ID, "0", time.Minute, func(n Notification) error { got <- n; return nil },
			func() error { return nil }, func([]Notification) { batches.Add(1) })
	}()
	next := func() string {
		select {
		case n := <-got:
			return n.TaskID
		case <-time.After(5 * time.Second):
			t.Fatal("no notification")
		}
		return ""
	}
	require.Equal(t, "before", next())
	_, err = b.n.Notify(ctx, other.ID, note("not-yours"))
	require.NoError(t, err)
	_, err = b.n.Notify(ctx, a.ID, note("live"))
	require.NoError(t, err)
	require.Equal(t, "live", next(), "only the session's own notifications arrive")
	require.Eventually(t, func() bool {
		un, err := b.n.Unread(ctx, a.ID, 10)
		return err == nil && len(un) == 0
	}, 5*time.Second, 5*time.Millisecond, "a sent batch is marked read")
	require.EqualValues(t, 2, batches.Load())
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.True(t, ValidCursor("0") && ValidCursor("1700000000000-0"))
	require.False(t, ValidCursor("") || ValidCursor("-1") || ValidCursor("x-0"))
}

// TestStableIDWrittenOnce: a notification id chosen by the caller is
// written once per session however often it is written (a replayed apply);
// random ids are all written.
func TestStableIDWrittenOnce(t *testing.T) {
	rdb, ns := testredis.Client(t)
	n, err := New(rdb, Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	ctx := context.Background()
	id := StableID(KindCompleted, "task-1", "tok-1")
	require.Equal(t, id, StableID(KindCompleted, "task-1", "tok-1"))
	require.NotEqual(t, id, StableID(KindCompleted, "task-1", "tok-2"))
	require.NotEqual(t, id, StableID(KindTimeout, "task-1", "tok-1"))
	for i := range 3 {
		got, err := n.Notify(ctx, "s1", Notification{NotificationID: id, Type: KindCompleted, TaskID: "task-1", Message: "ready"})
		require.NoError(t, err)
		require.Equal(t, i == 0, got.ID != "", "written the first time only")
	}
	// the same id in another session is another notification
	got, err := n.Notify(ctx, "s2", Notification{NotificationID: id, Type: KindCompleted, TaskID: "task-1"})
	require.NoError(t, err)
	require.NotEmpty(t, got.ID)
	for range 2 {
		_, err := n.Notify(ctx, "s1", Notification{Type: KindCompleted, TaskID: "task-2"})
		require.NoError(t, err)
	}
	l, err := n.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, l, 3)
	require.Equal(t, id, l[0].NotificationID)
}

// The namespace has one source (the store's, the configuration's): a
// Notifier given none refuses to start instead of defaulting it.
func TestNamespaceIsRequired(t *testing.T) {
	t.Parallel()
	_, err := New(nil, Config{})
	require.ErrorContains(t, err, "Namespace is required")
}

// TestNotifyManyOneCall: a batch of notifications of several sessions is
// written in one call, each at most once by its id (a replayed batch adds
// nothing, a batch holding the same id twice writes it once), in order,
// each session's subscribers woken; an entry without a session fails alone.
func TestNotifyManyOneCall(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	s1, s2 := b.session(t), b.session(t)
	sub1, sub2 := b.hub.Subscribe(s1.ID), b.hub.Subscribe(s2.ID)
	defer sub1.Close()
	defer sub2.Close()
	<-sub1.C // the first look, given at Subscribe
	<-sub2.C
	stable := func(task string) Notification {
		n := note(task)
		n.NotificationID = StableID(KindCompleted, task, "tok")
		return n
	}
	batch := []Delivery{
		{SessionID: s1.ID, Notification: stable("t1")},
		{SessionID: s2.ID, Notification: stable("t2")},
		{SessionID: "", Notification: stable("t3")},
		{SessionID: s1.ID, Notification: stable("t4")},
		{SessionID: s1.ID, Notification: stable("t1")}, // t1 again in the same batch
		{SessionID: s2.ID, Notification: note("t5")},   // no id: a fresh one
	}
	out, errs := b.n.NotifyMany(ctx, batch)
	require.Len(t, out, len(batch))
	for i, err := range errs {
		if i == 2 {
			require.ErrorIs(t, err, ErrNoSession)
			continue
		}
		require.NoError(t, err, "item %d", i)
	}
	require.NotEmpty(t, out[0].ID)
	require.NotEmpty(t, out[1].ID)
	require.NotEmpty(t, out[3].ID)
	require.Empty(t, out[4].ID, "the second t1 of the batch is not written again")
	require.NotEmpty(t, out[5].ID)
	require.NotEmpty(t, out[5].NotificationID)
	for _, sub := range []*Subscription{sub1, sub2} {
		select {
		case <-sub.C:
		case <-time.After(5 * time.Second):
			t.Fatal("a session's subscribers were not woken")
		}
	}

	// replayed: nothing new for the stable ids
	out, errs = b.n.NotifyMany(ctx, []Delivery{batch[0], batch[1], batch[3]})
	for i := range out {
		require.NoError(t, errs[i])
		require.Empty(t, out[i].ID, "item %d written twice", i)
	}
	l1, err := b.n.List(ctx, s1.ID, "", 100)
	require.NoError(t, err)
	require.Equal(t, []string{"t1", "t4"}, []string{l1[0].TaskID, l1[1].TaskID})
	require.Len(t, l1, 2)
	l2, err := b.n.List(ctx, s2.ID, "", 100)
	require.NoError(t, err)
	require.Len(t, l2, 2)
	require.Equal(t, "t2", l2[0].TaskID)
	require.Equal(t, "t5", l2[1].TaskID)
}

// TestPrepare: the encoding NotifyMany writes, for a caller's own script:
// a notification with a given id keeps its write-once marker unless the
// caller says its own atomic write makes it once; one without a session
// is refused; one without an id gets a fresh one and no marker.
func TestPrepare(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ds := []Delivery{
		{SessionID: "s-1", Notification: Notification{NotificationID: "notif-a", Type: KindCompleted, TaskID: "t1"}},
		{SessionID: "s-1", Notification: Notification{NotificationID: "notif-b", Type: KindCompleted, TaskID: "t2"}},
		{SessionID: "", Notification: Notification{NotificationID: "notif-c", TaskID: "t3"}},
		{SessionID: "s-2", Notification: Notification{TaskID: "t4"}},
	}
	p := b.n.Prepare(ds, []bool{true, false, true, true})
	require.Equal(t, []int{0, 1, 3}, p.At)
	require.Equal(t, []string{"1", "0", "0"}, p.Marked)
	require.ErrorIs(t, p.Errs[2], ErrNoSession)
	require.Equal(t, []string{"s-1", "s-1", "s-2"}, p.Sessions)
	require.Equal(t, b.n.StreamKey("s-2"), p.Streams[2])
	var body Notification
	require.NoError(t, json.Unmarshal([]byte(p.Bodies[0]), &body))
	require.Equal(t, "notif-a", body.NotificationID)
	require.Equal(t, "normal", body.Priority)
	require.False(t, body.Timestamp.IsZero())
	require.True(t, strings.HasPrefix(p.Out[3].NotificationID, "notif-"))
	require.Equal(t, []string{"1", "1", "0"}, b.n.Prepare(ds, nil).Marked)
}

// TestStableIDKeepsItsValues: StableID, written out by hand, gives the
// same ids as uuid.NewSHA1 of its name (ids written before keep their
// write-once markers), for short and long names.
func TestStableIDKeepsItsValues(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300) // past the buffer's first size
	for _, c := range [][3]string{{string(KindCompleted), "task-1", "tok-1"}, {string(KindFailed), "0193a", ""},
		{"", "", ""}, {string(KindCompleted), long, long}} {
		want := "notif-" + uuid.NewSHA1(stableSpace, []byte(c[0]+"\x00"+c[1]+"\x00"+c[2])).String()
		require.Equal(t, want, StableID(Kind(c[0]), c[1], c[2]), c)
	}
	require.Equal(t, "notif-", StableID(KindCompleted, "task-1", "tok-1")[:6])
}
