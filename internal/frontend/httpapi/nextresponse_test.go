package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/frontend/httpapi"
)

// TestNotificationsOnResponses: a session's unread notifications ride on
// its next JSON object response, once; a non-object or non-JSON response
// cannot carry them and leaves them unread.
func TestNotificationsOnResponses(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var delivered []string
	b := setup(t, setupOpts{onDelivered: func(via string, n service.Notification, _ time.Time) {
		mu.Lock()
		defer mu.Unlock()
		delivered = append(delivered, via+":"+n.TaskID)
	}})
	a := b.session()
	mw := httpapi.NotificationsOnResponses(b.svc)
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

	b.notify(a.ID, "t1")
	_, body = call("/list")
	require.Equal(t, "[1,2]", body, "a non-object response cannot carry them")
	_, body = call("/text")
	require.Equal(t, "plain text", body)
	code, body = call("/obj")
	require.Equal(t, http.StatusCreated, code)
	var m struct {
		TaskID        string                 `json:"task_id"`
		Notifications []service.Notification `json:"notifications"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	require.Equal(t, "x", m.TaskID)
	require.Len(t, m.Notifications, 1)
	require.Equal(t, "t1", m.Notifications[0].TaskID)
	_, body = call("/obj")
	require.JSONEq(t, `{"task_id":"x"}`, body, "delivered once")
	mu.Lock()
	require.Equal(t, []string{"next_interaction:t1"}, delivered)
	mu.Unlock()
}

// TestNotificationsOnAPIResponses: on the API's routes, a session's
// unread notifications ride on its next answer, not on another session's,
// the admin's or the notification routes' (which deliver them
// themselves).
func TestNotificationsOnAPIResponses(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{notesOnResponses: true})
	a, other := b.session(), b.session()
	id := b.submit(a.Token, "A text to summarize. With two sentences.")
	b.notify(a.ID, "ta")

	r := b.do("GET", "/api/v1/tasks/"+id, other.Token, nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.NotContains(t, r.body, "notifications", "another session's answer")
	r = b.do("GET", "/api/v1/tasks/"+id, adminKey, nil)
	require.NotContains(t, r.body, "notifications", "the admin's answer")
	require.Equal(t, []string{"ta"}, noteIDs(t, b.do("GET", "/api/v1/notifications?mark_read=false", a.Token, nil)),
		"the poll lists them itself, unread still")

	r = b.do("GET", "/api/v1/tasks/"+id, a.Token, nil)
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, id, r.body["task_id"])
	require.Equal(t, []string{"ta"}, noteIDs(t, r), "the session's next answer carries them")
	r = b.do("GET", "/api/v1/tasks/"+id, a.Token, nil)
	require.NotContains(t, r.body, "notifications", "once")
}
