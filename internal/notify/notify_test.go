package notify

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/testredis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	rdb  *redis.Client
	n    *Notifier
	hub  *Hub
	auth *auth.Authenticator
	srv  *httptest.Server
}

func setup(t testing.TB) *bundle {
	t.Helper()
	rdb, ns := testredis.Client(t)
	n, err := New(rdb, Config{Namespace: ns})
	require.NoError(t, err)
	a, err := auth.New(rdb, auth.Config{Namespace: ns, AdminKey: "admin-key"})
	require.NoError(t, err)
	hub := NewHub(n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(done) }()
	<-hub.Ready()
	h, err := NewHandler(n, HandlerConfig{Auth: a, Hub: hub, Ping: time.Second})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		<-done
	})
	return &bundle{rdb: rdb, n: n, hub: hub, auth: a, srv: srv}
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

	// The spec's JSON shape.
	raw, err := json.Marshal(taken[0])
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, k := range []string{"notification_id", "type", "task_id", "task_type", "message", "action", "timestamp", "priority"} {
		require.Contains(t, m, k)
	}
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, m["timestamp"])

	// Spec 003's retention: the session's stream and its read cursor live
	// 24 h (TTL) after the newest notification / read.
	for _, k := range []string{b.n.keys.stream("s1"), b.n.keys.cursor("s1")} {
		ttl, err := b.rdb.TTL(ctx, k).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 23*time.Hour, k)
		require.LessOrEqual(t, ttl, 24*time.Hour, k)
	}
}

func get(t *testing.T, url, token string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

func TestPollAuthorization(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a, other := b.session(t), b.session(t)
	_, err := b.n.Notify(ctx, a.ID, note("ta"))
	require.NoError(t, err)
	_, err = b.n.Notify(ctx, other.ID, note("tb"))
	require.NoError(t, err)

	code, _ := get(t, b.srv.URL+PathPoll, "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = get(t, b.srv.URL+PathPoll, "tfs_forged")
	require.Equal(t, http.StatusUnauthorized, code)
	code, body := get(t, b.srv.URL+PathPoll+"?session_id="+other.ID, a.Token)
	require.Equal(t, http.StatusForbidden, code, "a session cannot read another's notifications")
	require.Equal(t, "session_id", body["error"].(map[string]any)["field"])
	code, body = get(t, b.srv.URL+PathPoll+"?limit=0", a.Token)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "limit", body["error"].(map[string]any)["field"])

	code, body = get(t, b.srv.URL+PathPoll, a.Token)
	require.Equal(t, http.StatusOK, code)
	ns := body["notifications"].([]any)
	require.Len(t, ns, 1)
	require.Equal(t, "ta", ns[0].(map[string]any)["task_id"])
	code, body = get(t, b.srv.URL+PathPoll, a.Token)
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, body["notifications"], "marked read by the first poll")
	code, body = get(t, b.srv.URL+PathPoll+"?after=0", a.Token)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, body["notifications"], 1, "after=0 lists the history")

	// The admin names the session.
	code, _ = get(t, b.srv.URL+PathPoll, "admin-key")
	require.Equal(t, http.StatusBadRequest, code)
	code, body = get(t, b.srv.URL+PathPoll+"?session_id="+other.ID, "admin-key")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, body["notifications"], 1)
}

func dialWS(t testing.TB, b *bundle, token, query string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(b.srv.URL, "http") + PathWebSocket + query
	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: hdr})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	return c, err
}

func readNote(t testing.TB, c *websocket.Conn) Notification {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	require.NoError(t, err)
	var n Notification
	require.NoError(t, json.Unmarshal(b, &n))
	return n
}

func TestWebSocketDeliversUnreadThenLive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a, other := b.session(t), b.session(t)
	_, err := b.n.Notify(ctx, a.ID, note("before"))
	require.NoError(t, err)

	_, err = dialWS(t, b, "tfs_forged", "")
	require.Error(t, err, "a forged token is refused")
	_, err = dialWS(t, b, a.Token, "?session_id="+other.ID)
	require.Error(t, err, "another session's notifications are refused")

	c, err := dialWS(t, b, a.Token, "")
	require.NoError(t, err)
	defer c.CloseNow()
	require.Equal(t, "before", readNote(t, c).TaskID)
	_, err = b.n.Notify(ctx, other.ID, note("not-yours"))
	require.NoError(t, err)
	_, err = b.n.Notify(ctx, a.ID, note("live"))
	require.NoError(t, err)
	require.Equal(t, "live", readNote(t, c).TaskID, "only the session's own notifications arrive")
	// The server marks read right after the write the client just read.
	require.Eventually(t, func() bool {
		un, err := b.n.Unread(ctx, a.ID, 10)
		return err == nil && len(un) == 0
	}, 5*time.Second, 5*time.Millisecond, "live delivery marks read")

	// Browsers pass the token as a query parameter.
	c2, err := dialWS(t, b, "", "?access_token="+a.Token+"&after=0")
	require.NoError(t, err)
	defer c2.CloseNow()
	require.Equal(t, "before", readNote(t, c2).TaskID)
}

func TestSSE(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a := b.session(t)
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+PathSSE, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+a.Token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, ": connected\n", line)
	_, err = b.n.Notify(ctx, a.ID, note("sse"))
	require.NoError(t, err)
	var id, data string
	for data == "" {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimSpace(line[4:])
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
	require.NotEmpty(t, id)
	var n Notification
	require.NoError(t, json.Unmarshal([]byte(data), &n))
	require.Equal(t, "sse", n.TaskID)

	// No token: 401 before any stream starts.
	resp2, err := http.Get(b.srv.URL + PathSSE)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp2.Body)
	resp2.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp2.StatusCode)
}

func TestMiddlewareNextInteraction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a := b.session(t)
	var delivered []string
	mw := b.n.Middleware(func(via string, n Notification, at time.Time) { delivered = append(delivered, via+":"+n.TaskID) })
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/obj":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"task_id":"x"}`)
		case "/list":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `[1,2]`)
		default:
			_, _ = io.WriteString(w, "plain text")
		}
	})
	// Identity as the API's auth middleware would set it.
	withPrincipal := func(p auth.Principal, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
		})
	}
	srv := httptest.NewServer(withPrincipal(auth.Principal{SessionID: a.ID}, mw(app)))
	defer srv.Close()
	call := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := call("/obj")
	require.Equal(t, http.StatusCreated, code)
	require.JSONEq(t, `{"task_id":"x"}`, body, "nothing unread: unchanged")

	_, err := b.n.Notify(ctx, a.ID, note("t1"))
	require.NoError(t, err)
	_, body = call("/list")
	require.Equal(t, "[1,2]", body, "a non-object response cannot carry them")
	_, body = call("/text")
	require.Equal(t, "plain text", body)
	code, body = call("/obj")
	require.Equal(t, http.StatusCreated, code)
	var m struct {
		TaskID        string         `json:"task_id"`
		Notifications []Notification `json:"notifications"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	require.Equal(t, "x", m.TaskID)
	require.Len(t, m.Notifications, 1)
	require.Equal(t, "t1", m.Notifications[0].TaskID)
	_, body = call("/obj")
	require.JSONEq(t, `{"task_id":"x"}`, body, "delivered once")
	require.Equal(t, []string{"next_interaction:t1"}, delivered)
}

// BenchmarkNotifyToWebSocket measures the time from Notify (what the
// orchestrator calls when it applies a completion) to the notification
// arriving at a connected WebSocket client, and reports p50/p95/p99.
func BenchmarkNotifyToWebSocket(b *testing.B) {
	bb := setup(b)
	ctx := context.Background()
	s := bb.session(b)
	c, err := dialWS(b, bb, s.Token, "")
	require.NoError(b, err)
	defer c.CloseNow()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, err := bb.n.Notify(ctx, s.ID, note(fmt.Sprint("t", i)))
		require.NoError(b, err)
		readNote(b, c)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), "p50_ms")
	b.ReportMetric(q(0.95), "p95_ms")
	b.ReportMetric(q(0.99), "p99_ms")
}

// TestStableIDWrittenOnce: a notification id chosen by the caller is
// written once per session however often it is written (a replayed apply);
// random ids are all written.
func TestStableIDWrittenOnce(t *testing.T) {
	rdb, ns := testredis.Client(t)
	n, err := New(rdb, Config{Namespace: ns})
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
