package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatusStreamAccessToken: the status stream takes the admin key in
// ?access_token= as well as in the Authorization header, because a
// browser's EventSource cannot set headers (the notification SSE does the
// same); with or without the trailing slash. A session's token is still
// 403 and a bad one 401. Other routes do not read ?access_token=.
func TestStatusStreamAccessToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sess := b.session()
	get := func(path string) *http.Response {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, "GET", b.srv.URL+path, nil)
		require.NoError(t, err)
		res, err := b.srv.Client().Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	for _, path := range []string{"/api/v1/queues/status/stream", "/api/v1/queues/status/stream/"} {
		res := get(path + "?access_token=" + url.QueryEscape(adminKey))
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
		ch := make(chan sseEvent, 10)
		go readSSE(bufio.NewReader(res.Body), ch)
		ev := next(t, ch, true)
		require.Equal(t, "snapshot", ev.name, path)
		var qs map[string]any
		require.NoError(t, json.Unmarshal([]byte(ev.data), &qs))
		require.Contains(t, qs, "queues")

		require.Equal(t, http.StatusForbidden, get(path+"?access_token="+url.QueryEscape(sess.Token)).StatusCode, "a session's token")
		require.Equal(t, http.StatusUnauthorized, get(path+"?access_token=tfs_not-a-real-token").StatusCode, "a bad token")
		require.Equal(t, http.StatusUnauthorized, get(path).StatusCode, "no token")
	}
	// The header wins over the query: a session's header with the admin
	// key in the URL is the session.
	req, err := http.NewRequest("GET", b.srv.URL+"/api/v1/queues/status/stream?access_token="+url.QueryEscape(adminKey), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+sess.Token)
	res, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	// Only the stream reads the query token.
	r := b.do("GET", "/api/v1/queues/status?access_token="+url.QueryEscape(adminKey), "", nil)
	require.Equal(t, http.StatusUnauthorized, r.code, string(r.raw))
}

// lockedBuffer is a log sink shared by the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestHandlerPanicIsA500: a panic in a handler (here in the route
// middleware, after authentication) is a JSON 500 envelope, the server
// keeps serving, and the log line it writes carries the path but never the
// token the request had in its query string.
func TestHandlerPanicIsA500(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	b := setup(t, setupOpts{logger: slog.New(slog.NewJSONHandler(&logs, nil)), middleware: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/api/v1/queues/status/stream") {
				panic("boom in a handler")
			}
			next.ServeHTTP(w, r)
		})
	}})
	for range 2 {
		r := b.do("GET", "/api/v1/queues/status/stream?access_token="+url.QueryEscape(adminKey), "", nil)
		require.Equal(t, http.StatusInternalServerError, r.code, string(r.raw))
		require.Equal(t, "internal", r.errCode())
		require.NotContains(t, string(r.raw), "boom", "the panic's value stays in the log")
	}
	r := b.do("GET", "/api/v1/queues/status", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, "the server still serves: %s", r.raw)
	require.Contains(t, logs.String(), "handler panic")
	require.Contains(t, logs.String(), "/api/v1/queues/status/stream")
	require.NotContains(t, logs.String(), adminKey, "a token in the query string is never logged")
	require.NotContains(t, logs.String(), "access_token")
}
