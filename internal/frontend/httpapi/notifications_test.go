package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

func note(taskID string) notify.Notification {
	return notify.Notification{Type: notify.KindCompleted, TaskID: taskID, TaskType: "report.generate", Message: "Your report is ready!", Action: "retrieve_result"}
}

func (b *testBundle) notify(sessionID, taskID string) {
	b.t.Helper()
	_, err := b.note.Notify(context.Background(), sessionID, note(taskID))
	require.NoError(b.t, err)
}

func noteIDs(t *testing.T, r resp) []string {
	t.Helper()
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	var p service.NotificationPage
	require.NoError(t, json.Unmarshal(r.raw, &p))
	ids := []string{}
	for _, n := range p.Notifications {
		ids = append(ids, n.TaskID)
	}
	return ids
}

func TestNotificationPoll(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var delivered []string
	b := setup(t, setupOpts{onDelivered: func(via string, n service.Notification, _ time.Time) {
		mu.Lock()
		defer mu.Unlock()
		delivered = append(delivered, via+":"+n.TaskID)
	}})
	a, other := b.session(), b.session()
	b.notify(a.ID, "ta")
	b.notify(other.ID, "tb")

	require.Equal(t, http.StatusUnauthorized, b.do("GET", "/api/v1/notifications", "", nil).code)
	require.Equal(t, http.StatusUnauthorized, b.do("GET", "/api/v1/notifications", "tfs_forged", nil).code)
	r := b.do("GET", "/api/v1/notifications?session_id="+other.ID, a.Token, nil)
	require.Equal(t, http.StatusForbidden, r.code, "a session cannot read another's notifications")
	require.Equal(t, "session_id", r.errField())

	require.Equal(t, []string{"ta"}, noteIDs(t, b.do("GET", "/api/v1/notifications?mark_read=false", a.Token, nil)))
	require.Equal(t, []string{"ta"}, noteIDs(t, b.do("GET", "/api/v1/notifications", a.Token, nil)), "mark_read=false left it unread")
	require.Empty(t, noteIDs(t, b.do("GET", "/api/v1/notifications", a.Token, nil)), "marked read by the poll before")
	require.Equal(t, []string{"ta"}, noteIDs(t, b.do("GET", "/api/v1/notifications?after=0", a.Token, nil)), "after=0 lists the history")
	mu.Lock()
	require.Equal(t, []string{"poll:ta", "poll:ta", "poll:ta"}, delivered)
	mu.Unlock()

	// The admin names the session.
	r = b.do("GET", "/api/v1/notifications", adminKey, nil)
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "session_id", r.errField())
	require.Equal(t, []string{"tb"}, noteIDs(t, b.do("GET", "/api/v1/notifications?session_id="+other.ID, adminKey, nil)))
}

// TestNotificationPollConventions: the poll reads its query as every
// listing does: an unknown or repeated parameter is a 400 naming it, and
// a limit out of range is the error /api/v1/results answers.
func TestNotificationPollConventions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.session()
	for _, tc := range []struct{ query, field, code string }{
		{"limt=5", "limt", "unknown_parameter"},
		{"=5", "query", "unknown_parameter"},
		{"after=0&after=0", "after", "invalid_parameter"},
		{"mark_read=false&mark_read=true", "mark_read", "invalid_parameter"},
		{"limit=0", "limit", "invalid_parameter"},
		{"limit=1001", "limit", "invalid_parameter"},
		{"limit=-1", "limit", "invalid_parameter"},
		{"limit=ten", "limit", "invalid_parameter"},
		{"mark_read=maybe", "mark_read", "invalid_parameter"},
		{"after=yesterday", "after", "invalid_parameter"},
	} {
		r := b.do("GET", "/api/v1/notifications?"+tc.query, a.Token, nil)
		require.Equal(t, http.StatusBadRequest, r.code, "%s: %s", tc.query, r.raw)
		require.Equal(t, tc.field, r.errField(), "%s: %s", tc.query, r.raw)
		require.Equal(t, tc.code, r.errCode(), "%s: %s", tc.query, r.raw)
	}
	// the same limit errors as /api/v1/results
	for _, q := range []string{"limit=0", "limit=1001"} {
		n, res := b.do("GET", "/api/v1/notifications?"+q, a.Token, nil), b.do("GET", "/api/v1/results?"+q, a.Token, nil)
		require.Equal(t, res.code, n.code)
		require.Equal(t, res.errCode(), n.errCode())
		require.Equal(t, res.body["error"].(map[string]any)["message"], n.body["error"].(map[string]any)["message"])
	}
	require.Equal(t, http.StatusOK, b.do("GET", "/api/v1/notifications?limit=1000&after=0&mark_read=true", a.Token, nil).code)
}

func dialWS(t testing.TB, b *testBundle, token, query string) (*websocket.Conn, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/api/v1/notifications/ws" + query
	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: hdr})
	code := 0
	if resp != nil {
		code = resp.StatusCode
		if resp.Body != nil {
			resp.Body.Close()
		}
	}
	return c, code, err
}

func readNote(t testing.TB, c *websocket.Conn) notify.Notification {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, msg, err := c.Read(ctx)
	require.NoError(t, err)
	var n notify.Notification
	require.NoError(t, json.Unmarshal(msg, &n))
	return n
}

func TestNotificationWebSocket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	a, other := b.session(), b.session()
	b.notify(a.ID, "before")

	_, code, err := dialWS(t, b, "tfs_forged", "")
	require.Error(t, err, "a forged token is refused")
	require.Equal(t, http.StatusUnauthorized, code)
	_, code, err = dialWS(t, b, a.Token, "?session_id="+other.ID)
	require.Error(t, err, "another session's notifications are refused")
	require.Equal(t, http.StatusForbidden, code)
	_, code, err = dialWS(t, b, a.Token, "?after=0&after=1")
	require.Error(t, err)
	require.Equal(t, http.StatusBadRequest, code)

	c, _, err := dialWS(t, b, a.Token, "")
	require.NoError(t, err)
	defer c.CloseNow()
	require.Equal(t, "before", readNote(t, c).TaskID)
	b.notify(other.ID, "not-yours")
	b.notify(a.ID, "live")
	require.Equal(t, "live", readNote(t, c).TaskID, "only the session's own notifications arrive")
	require.Eventually(t, func() bool {
		un, err := b.note.Unread(ctx, a.ID, 10)
		return err == nil && len(un) == 0
	}, 5*time.Second, 5*time.Millisecond, "live delivery marks read")

	// Browsers pass the token as a query parameter.
	c2, _, err := dialWS(t, b, "", "?access_token="+a.Token+"&after=0")
	require.NoError(t, err)
	defer c2.CloseNow()
	require.Equal(t, "before", readNote(t, c2).TaskID)
}

func TestNotificationSSE(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.session()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/api/v1/notifications/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+a.Token)
	resp, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, ": connected\n", line)
	b.notify(a.ID, "sse")
	var id, data string
	for data == "" {
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimSpace(line[4:])
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
	require.NotEmpty(t, id)
	var n notify.Notification
	require.NoError(t, json.Unmarshal([]byte(data), &n))
	require.Equal(t, "sse", n.TaskID)
	require.Equal(t, id, n.ID, "the SSE id is the notification id")

	// No token, or a bad Last-Event-ID: an error in the API's envelope
	// before any stream starts.
	r := b.do("GET", "/api/v1/notifications/stream", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.code)
	require.Equal(t, "unauthenticated", r.errCode())
	req2, err := http.NewRequest(http.MethodGet, b.srv.URL+"/api/v1/notifications/stream", nil)
	require.NoError(t, err)
	req2.Header.Set("Authorization", "Bearer "+a.Token)
	req2.Header.Set("Last-Event-ID", "not-an-id")
	resp2, err := b.srv.Client().Do(req2)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp2.StatusCode, string(raw))
	require.Contains(t, string(raw), `"field":"after"`)
}

// TestCloseStreamsEndsNotificationFeeds: the server's shutdown ends the
// live notification feeds, SSE and WebSocket alike.
func TestCloseStreamsEndsNotificationFeeds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.session()
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/api/v1/notifications/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+a.Token)
	resp, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	c, _, err := dialWS(t, b, a.Token, "")
	require.NoError(t, err)
	defer c.CloseNow()

	b.api.CloseStreams()
	sseDone := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); sseDone <- err }()
	select {
	case err := <-sseDone:
		require.NoError(t, err, "the SSE feed ends cleanly")
	case <-time.After(5 * time.Second):
		t.Fatal("the SSE feed did not end")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err = c.Read(ctx)
	require.Equal(t, websocket.StatusNormalClosure, websocket.CloseStatus(err), "the WebSocket is closed by the server: %v", err)
}
