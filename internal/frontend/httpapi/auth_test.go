package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// endpoint is one route as the auth matrix tries it.
type endpoint struct {
	method, path string
	body         any
	access       string // public | owner | admin
}

// endpoints lists every route; {id} is replaced by a task of session A.
func endpoints() []endpoint {
	return []endpoint{
		{"POST", "/api/v1/sessions", nil, "public"},
		{"DELETE", "/api/v1/sessions/current", nil, "self"},
		{"GET", "/api/v1/sessions", nil, "admin"},
		{"GET", "/health", nil, "public"},
		{"GET", "/live", nil, "public"},
		{"GET", "/ready", nil, "public"},
		{"GET", "/openapi.json", nil, "public"},
		{"GET", "/docs", nil, "public"},
		{"POST", "/api/v1/tasks/summarize", map[string]any{"content": "One. Two."}, "session"},
		{"POST", "/api/v1/tasks", map[string]any{"task_type": "noop"}, "session"},
		{"POST", "/api/v1/tasks/batch", map[string]any{"tasks": []map[string]any{{"task_type": "noop"}}}, "session"},
		{"GET", "/api/v1/tasks", nil, "session"},
		{"GET", "/api/v1/tasks/{id}", nil, "owner"},
		{"POST", "/api/v1/tasks/{id}/retry", nil, "owner"},
		{"POST", "/api/v1/tasks/{id}/cancel", nil, "owner"},
		{"DELETE", "/api/v1/tasks/{id}", nil, "owner"},
		{"POST", "/api/v1/tasks/requeue-orphaned", nil, "admin"},
		{"GET", "/api/v1/queues/status", nil, "admin"},
		{"GET", "/api/v1/stats/series", nil, "admin"},
		{"GET", "/api/v1/queues/status/stream", nil, "admin"},
		{"GET", "/api/v1/queues/dlq", nil, "admin"},
		{"POST", "/api/v1/queues/dlq/retry", map[string]any{"all": true}, "admin"},
		{"POST", "/api/v1/queues/dlq/delete", map[string]any{"task_ids": []string{"0193ffff-0000-7000-8000-000000000000"}}, "admin"},
		{"GET", "/api/v1/queues/primary/tasks", nil, "admin"},
		{"GET", "/api/v1/queues/retry/tasks", nil, "admin"},
		{"GET", "/api/v1/queues/scheduled/tasks", nil, "admin"},
		{"GET", "/api/v1/queues/dlq/tasks", nil, "admin"},
		{"GET", "/api/v1/queues", nil, "admin"},
		{"GET", "/api/v1/queues/default", nil, "admin"},
		{"POST", "/api/v1/queues/emails/pause", nil, "admin"},
		{"POST", "/api/v1/queues/emails/resume", nil, "admin"},
		{"POST", "/api/v1/task-types/{task_type}/pause", nil, "admin"},
		{"POST", "/api/v1/task-types/{task_type}/resume", nil, "admin"},
		{"GET", "/api/v1/limits", nil, "admin"},
		{"PUT", "/api/v1/limits", map[string]any{"scope": "key", "name": "tenant-1", "concurrency": 2}, "admin"},
		{"DELETE", "/api/v1/limits/{scope}/{name}", nil, "admin"},
		{"GET", "/api/v1/workers", nil, "admin"},
		{"GET", "/api/v1/services", nil, "session"},
		{"GET", "/api/v1/task-types", nil, "session"},
		{"POST", "/api/v1/workers/reset-circuit-breaker", nil, "admin"},
		{"POST", "/api/v1/workers/open-circuit-breaker", nil, "admin"},
		{"GET", "/metrics", nil, "admin"},
		{"POST", "/api/v1/schedules", map[string]any{"cron": "@hourly", "task_type": "noop"}, "session"},
		{"GET", "/api/v1/schedules", nil, "session"},
		{"GET", "/api/v1/schedules/{sid}", nil, "owner"},
		{"DELETE", "/api/v1/schedules/{sid}", nil, "owner"},
		{"GET", "/api/v1/results", nil, "session"},
		{"GET", "/api/v1/results/{id}", nil, "owner"},
		{"GET", "/api/v1/results/{id}/files/{name}", nil, "owner"},
		{"GET", "/api/v1/notifications", nil, "session"},
		{"GET", "/api/v1/notifications/ws", nil, "session"},
		{"GET", "/api/v1/notifications/stream", nil, "session"},
		{"GET", "/api/v1/plans", nil, "session"},
		{"GET", "/api/v1/plans/{name}", nil, "session"},
		{"POST", "/api/v1/plans/{name}/execute", map[string]any{"user_id": 1}, "session"},
		{"POST", "/api/v1/keys", map[string]any{"name": "matrix-key", "role": "viewer"}, "admin"},
		{"GET", "/api/v1/keys", nil, "admin"},
		{"DELETE", "/api/v1/keys/{name}", nil, "admin"},
		{"GET", "/api/v1/audit", nil, "admin"},
		{"GET", "/api/v1/me", nil, "session"},
	}
}

// streamBundle is a testBundle whose do opens an SSE answer and reads its
// first event (into raw) instead of reading to the end.
type streamBundle struct{ *testBundle }

func (b *streamBundle) do(method, path, token string, body any) resp {
	b.t.Helper()
	if strings.HasPrefix(path, "/api/v1/notifications/ws") {
		c, code, err := dialWS(b.t, b.testBundle, token, "")
		if err != nil { // refused before the upgrade: read the envelope
			return b.testBundle.do(method, path, token, body)
		}
		c.CloseNow()
		return resp{code: code, body: map[string]any{}}
	}
	if !strings.HasPrefix(path, "/api/v1/queues/status/stream") && !strings.HasPrefix(path, "/api/v1/notifications/stream") {
		return b.testBundle.do(method, path, token, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.srv.URL+path, nil)
	require.NoError(b.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := b.srv.Client().Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	out := resp{code: res.StatusCode, hdr: res.Header}
	if res.Header.Get("Content-Type") != "text/event-stream" {
		out.raw, err = io.ReadAll(res.Body)
		require.NoError(b.t, err)
		require.NoError(b.t, json.Unmarshal(out.raw, &out.body), "body: %s", out.raw)
		return out
	}
	if strings.HasPrefix(path, "/api/v1/notifications/stream") {
		line, err := bufio.NewReader(res.Body).ReadString('\n')
		require.NoError(b.t, err)
		require.Equal(b.t, ": connected\n", line)
		out.raw = []byte(line)
		return out
	}
	ch := make(chan sseEvent, 10)
	go readSSE(bufio.NewReader(res.Body), ch)
	ev := next(b.t.(*testing.T), ch, true)
	require.Equal(b.t, "snapshot", ev.name, "the stream's first event")
	out.raw = []byte(ev.data)
	return out
}

// TestAuthMatrix tries every endpoint without credentials, with a bad
// token, with another session's token, and with the right one.
func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner, other := b.session(), b.session()

	// The matrix must cover every documented route.
	covered := map[string]bool{}
	for _, e := range endpoints() {
		covered[e.method+" "+strings.NewReplacer("{id}", "{task_id}", "{sid}", "{schedule_id}").Replace(e.path)] = true
	}
	doc := b.do("GET", "/openapi.json", "", nil)
	for path, ops := range doc.body["paths"].(map[string]any) {
		for m := range ops.(map[string]any) {
			p := strings.ReplaceAll(path, "{queue}", "primary")
			require.True(t, covered[strings.ToUpper(m)+" "+p] || strings.Contains(path, "{queue}"),
				"route %s %s is not in the auth matrix", m, path)
		}
	}

	for _, e := range endpoints() {
		t.Run(e.method+strings.ReplaceAll(e.path, "/", "_"), func(t *testing.T) {
			b := &streamBundle{b.with(t)}
			id := b.submit(owner.Token, "A task of the owner. It has two sentences.")
			sid := b.schedule(owner.Token)
			path := strings.NewReplacer("{id}", id, "{sid}", sid, "{name}", "follows").Replace(e.path)
			if e.access == "public" {
				r := b.do(e.method, path, "", e.body)
				if e.path == "/health" { // no worker runs in this test: unhealthy, but answered
					require.Equal(t, http.StatusServiceUnavailable, r.code)
					return
				}
				require.Less(t, r.code, 400, "%s %s without credentials: %s", e.method, path, r.raw)
				return
			}
			r := b.do(e.method, path, "", e.body)
			require.Equal(t, http.StatusUnauthorized, r.code, string(r.raw))
			require.Equal(t, "unauthenticated", r.errCode())
			require.Contains(t, r.hdr.Get("WWW-Authenticate"), "Bearer")

			r = b.do(e.method, path, "tfs_not-a-real-token", e.body)
			require.Equal(t, http.StatusUnauthorized, r.code, string(r.raw))

			if e.access == "self" { // each session ends only itself
				victim := b.session()
				r = b.do(e.method, path, victim.Token, e.body)
				require.Equal(t, http.StatusOK, r.code, string(r.raw))
				require.Equal(t, victim.ID, r.body["session_id"])
				require.Equal(t, http.StatusOK, b.do("GET", "/api/v1/tasks/"+id, owner.Token, nil).code, "the owner's session lives on")
				return
			}
			r = b.do(e.method, path, other.Token, e.body)
			switch e.access {
			case "session":
				require.Less(t, r.code, 300, "another session may use %s %s: %s", e.method, path, r.raw)
			case "owner": // another session's task or schedule is answered as a missing one
				require.Equal(t, http.StatusNotFound, r.code, "%s %s with another session's token: %s", e.method, path, r.raw)
				require.Contains(t, []string{"task_not_found", "schedule_not_found"}, r.errCode())
				require.NotContains(t, string(r.raw), owner.ID)
			default:
				require.Equal(t, http.StatusForbidden, r.code, "%s %s with another session's token: %s", e.method, path, r.raw)
				require.Equal(t, "forbidden", r.errCode())
			}

			tok := owner.Token
			if e.access == "admin" {
				r = b.do(e.method, path, owner.Token, e.body)
				require.Equal(t, http.StatusForbidden, r.code, "a session on an operator endpoint: %s", r.raw)
				tok = adminKey
			}
			r = b.do(e.method, path, tok, e.body)
			require.NotContains(t, []int{401, 403}, r.code, "%s %s with the right token: %s", e.method, path, r.raw)
			require.Less(t, r.code, 500, string(r.raw))

			// The admin may do what an owner may.
			if e.access == "owner" {
				id2 := b.submit(owner.Token, "Another task. Still the owner's.")
				sid2 := b.schedule(owner.Token)
				r = b.do(e.method, strings.NewReplacer("{id}", id2, "{sid}", sid2).Replace(e.path), adminKey, e.body)
				require.NotContains(t, []int{401, 403}, r.code, string(r.raw))
			}
		})
	}
}

func TestEndSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s, other := b.session(), b.session()
	id := b.submit(s.Token, "Outlives its session. Still there.")
	r := b.do("DELETE", "/api/v1/sessions/current", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.code)
	r = b.do("DELETE", "/api/v1/sessions/current/", adminKey, nil)
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "Authorization", r.errField())
	r = b.do("DELETE", "/api/v1/sessions/current", s.Token, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, s.ID, r.body["session_id"])
	r = b.do("GET", "/api/v1/tasks/"+id, s.Token, nil)
	require.Equal(t, http.StatusUnauthorized, r.code, "the ended session's token no longer works")
	require.Equal(t, http.StatusOK, b.do("GET", "/api/v1/tasks/"+id, adminKey, nil).code, "its tasks stay")
	require.Equal(t, http.StatusOK, b.do("GET", "/api/v1/tasks", other.Token, nil).code, "other sessions are untouched")
}

func TestMalformedAuthorization(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req, err := http.NewRequest("GET", b.srv.URL+"/api/v1/tasks", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Basic dXNlcjpwYXNz")
	res, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
}

func TestOpenModeActsAsAdmin(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{open: true})
	r := b.do("GET", "/api/v1/queues/status", "", nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	id := b.submit("", "Created without credentials. In open mode.")
	r = b.do("GET", "/api/v1/tasks/"+id, "", nil)
	require.Equal(t, http.StatusOK, r.code)
	// A session's token still scopes the caller to the session.
	s := b.session()
	r = b.do("GET", "/api/v1/tasks/"+id, s.Token, nil)
	require.Equal(t, http.StatusNotFound, r.code)
}

func TestSessionListsOnlyItsOwnTasks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, c := b.session(), b.session()
	var mine []string
	for range 3 {
		mine = append(mine, b.submit(a.Token, "Mine. Really mine."))
	}
	theirs := b.submit(c.Token, "Theirs. Not mine.")

	r := b.do("GET", "/api/v1/tasks/", a.Token, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.EqualValues(t, 3, r.body["total"])
	var got []string
	for _, x := range r.body["tasks"].([]any) {
		got = append(got, x.(map[string]any)["task_id"].(string))
	}
	require.ElementsMatch(t, mine, got)
	require.NotContains(t, got, theirs)

	r = b.do("GET", "/api/v1/tasks?status=COMPLETED", a.Token, nil)
	require.Equal(t, http.StatusOK, r.code)
	require.EqualValues(t, 0, r.body["total"])

	// The admin sees all four.
	r = b.do("GET", "/api/v1/tasks?status=PENDING&limit=10", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code)
	require.EqualValues(t, 4, r.body["total"])
}

// Refused credentials are counted by reason on /metrics and logged at most
// once per reason per 10 s (the rest counted in the next line), with the
// client's address and never the token.
func TestRefusedCredentialsCountedAndLogged(t *testing.T) {
	t.Parallel()
	var logs syncLog
	b := setup(t, setupOpts{logger: slog.New(slog.NewTextHandler(&logs, nil))})
	const guess = "tfs_not-a-real-token-0123456789"
	for i := 0; i < 5; i++ {
		r := b.do("GET", "/api/v1/tasks", guess, nil)
		require.Equal(t, http.StatusUnauthorized, r.code)
	}
	req, err := http.NewRequest("GET", b.srv.URL+"/api/v1/tasks", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Basic "+guess)
	res, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	b.do("GET", "/api/v1/queues/status", "", nil) // no credentials at all

	m := string(b.do("GET", "/metrics", adminKey, nil).raw)
	require.Contains(t, m, `taskflow_auth_failures_total{reason="invalid_token"} 5`)
	require.Contains(t, m, `taskflow_auth_failures_total{reason="malformed_header"} 1`)
	require.Contains(t, m, `taskflow_auth_failures_total{reason="no_credentials"} 1`)

	out := logs.String()
	require.Equal(t, 1, strings.Count(out, "reason=invalid_token"), out)
	require.Equal(t, 1, strings.Count(out, "reason=malformed_header"), out)
	require.NotContains(t, out, "no_credentials", "a request without credentials is not an attempt")
	require.Contains(t, out, "client=127.0.0.1")
	require.NotContains(t, out, "not-a-real-token", "the secret never reaches the log")
}

// syncLog is a log sink safe for the server's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Named keys: an admin creates them with a role; a viewer reads but
// changes nothing, an operator acts but manages no keys; a revoked key is
// refused at once. Every change made with a key lands in the audit trail,
// with the key's name; a session's change to its own task does not.
func TestRolesAndAuditTrail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mk := func(name, role string) string {
		r := b.do("POST", "/api/v1/keys", adminKey, map[string]any{"name": name, "role": role})
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
		require.Equal(t, "no-store", r.hdr.Get("Cache-Control"))
		key, _ := r.body["key"].(string)
		require.True(t, strings.HasPrefix(key, "tfk_"), string(r.raw))
		require.Equal(t, role, r.body["role"])
		require.Equal(t, "admin", r.body["created_by"])
		return key
	}
	viewer, operator, boss := mk("grafana", "viewer"), mk("oncall", "operator"), mk("lead", "admin")

	r := b.do("POST", "/api/v1/keys", adminKey, map[string]any{"name": "grafana", "role": "viewer"})
	require.Equal(t, http.StatusConflict, r.code, string(r.raw))
	r = b.do("POST", "/api/v1/keys", adminKey, map[string]any{"name": "Bad Name", "role": "viewer"})
	require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
	require.Equal(t, "name", r.errField())
	r = b.do("POST", "/api/v1/keys", adminKey, map[string]any{"name": "x", "role": "root"})
	require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
	require.Equal(t, "role", r.errField())

	sess := b.session()
	id := b.submit(sess.Token, "A task. It has two sentences.")

	// the viewer reads everything, changes nothing
	for _, path := range []string{"/api/v1/tasks", "/api/v1/tasks/" + id, "/api/v1/queues/status", "/api/v1/workers", "/metrics", "/api/v1/queues/dlq"} {
		r = b.do("GET", path, viewer, nil)
		require.Equal(t, http.StatusOK, r.code, "viewer GET %s: %s", path, r.raw)
	}
	r = b.do("POST", "/api/v1/plans/follows/execute", viewer, map[string]any{"user_id": 1})
	require.Less(t, r.code, 300, "a plan run changes nothing: %s", r.raw)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api/v1/tasks", map[string]any{"task_type": "noop"}},
		{"POST", "/api/v1/tasks/batch", map[string]any{"tasks": []map[string]any{{"task_type": "noop"}}}},
		{"POST", "/api/v1/tasks/" + id + "/cancel", nil},
		{"POST", "/api/v1/queues/dlq/retry", map[string]any{"all": true}},
		{"POST", "/api/v1/workers/open-circuit-breaker", map[string]any{"dependency": "openrouter"}},
		{"GET", "/api/v1/keys", nil},
		{"GET", "/api/v1/audit", nil},
	} {
		r = b.do(c.method, c.path, viewer, c.body)
		require.Equal(t, http.StatusForbidden, r.code, "viewer %s %s: %s", c.method, c.path, r.raw)
	}
	r = b.do("POST", "/api/v1/tasks", viewer, map[string]any{"task_type": "noop"})
	require.Contains(t, r.body["error"].(map[string]any)["message"], "the viewer role is read-only")

	// the operator acts, but on no keys
	r = b.do("POST", "/api/v1/tasks/"+id+"/cancel", operator, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	r = b.do("POST", "/api/v1/queues/dlq/retry", operator, map[string]any{"all": true})
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	for _, c := range []struct{ method, path string }{{"GET", "/api/v1/keys"}, {"POST", "/api/v1/keys"}, {"DELETE", "/api/v1/keys/grafana"}, {"GET", "/api/v1/audit"}} {
		r = b.do(c.method, c.path, operator, map[string]any{"name": "sneaky", "role": "admin"})
		require.Equal(t, http.StatusForbidden, r.code, "operator %s %s: %s", c.method, c.path, r.raw)
		require.Contains(t, r.body["error"].(map[string]any)["message"], "admin role")
	}

	// a session's change to its own task is not an operator's change
	id2 := b.submit(sess.Token, "Another task. Two sentences again.")
	r = b.do("POST", "/api/v1/tasks/"+id2+"/cancel", sess.Token, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))

	// a named admin key manages keys; the listing never shows a key
	r = b.do("GET", "/api/v1/keys", boss, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Len(t, r.body["keys"], 3)
	require.NotContains(t, string(r.raw), "tfk_")
	r = b.do("DELETE", "/api/v1/keys/grafana", boss, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	r = b.do("GET", "/api/v1/tasks", viewer, nil)
	require.Equal(t, http.StatusUnauthorized, r.code, "a revoked key is refused at once: %s", r.raw)
	r = b.do("DELETE", "/api/v1/keys/grafana", boss, nil)
	require.Equal(t, http.StatusNotFound, r.code, string(r.raw))

	// the audit trail: newest first, who, what, on what; a failed change
	// (the 404 above) and the session's own change are not in it
	r = b.do("GET", "/api/v1/audit", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	type entry struct{ Actor, Role, Action, Target string }
	var got []entry
	for _, e := range r.body["entries"].([]any) {
		m := e.(map[string]any)
		got = append(got, entry{m["actor"].(string), m["role"].(string), m["action"].(string), fmt.Sprint(m["target"])})
		require.NotEmpty(t, m["at"])
	}
	require.Equal(t, []entry{
		{"lead", "admin", "DELETE /api/v1/keys/{name}", "name=grafana"},
		{"oncall", "operator", "POST /api/v1/queues/dlq/retry", "<nil>"},
		{"oncall", "operator", "POST /api/v1/tasks/{task_id}/cancel", "task_id=" + id},
		{"admin", "admin", "POST /api/v1/keys", "<nil>"},
		{"admin", "admin", "POST /api/v1/keys", "<nil>"},
		{"admin", "admin", "POST /api/v1/keys", "<nil>"},
	}, got)
	r = b.do("GET", "/api/v1/audit?actor=oncall&limit=1", adminKey, nil)
	require.Len(t, r.body["entries"], 1)
	next, _ := r.body["next"].(string)
	require.NotEmpty(t, next)
	r = b.do("GET", "/api/v1/audit?actor=oncall&before="+next, adminKey, nil)
	require.Len(t, r.body["entries"], 1)
	require.Equal(t, "POST /api/v1/tasks/{task_id}/cancel", r.body["entries"].([]any)[0].(map[string]any)["action"])
	r = b.do("GET", "/api/v1/audit?before=nope", adminKey, nil)
	require.Equal(t, http.StatusBadRequest, r.code, string(r.raw))
	require.Equal(t, "before", r.errField())
}

// GET /api/v1/me says who the caller is, so the dashboard offers only what
// the role may do: the admin key, each role's named key, a session, and
// the open admin; without credentials (and not open) it is a 401.
func TestMe(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := func(name, role string) string {
		r := b.do("POST", "/api/v1/keys", adminKey, map[string]any{"name": name, "role": role})
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
		return r.body["key"].(string)
	}
	sess := b.session()
	for _, c := range []struct {
		token string
		want  map[string]any
	}{
		{adminKey, map[string]any{"kind": "key", "role": "admin", "name": "admin", "session_id": nil}},
		{key("boss", "admin"), map[string]any{"kind": "key", "role": "admin", "name": "boss", "session_id": nil}},
		{key("oncall", "operator"), map[string]any{"kind": "key", "role": "operator", "name": "oncall", "session_id": nil}},
		{key("grafana", "viewer"), map[string]any{"kind": "key", "role": "viewer", "name": "grafana", "session_id": nil}},
		{sess.Token, map[string]any{"kind": "session", "role": nil, "name": "session:" + sess.ID, "session_id": sess.ID}},
	} {
		r := b.do("GET", "/api/v1/me", c.token, nil)
		require.Equal(t, http.StatusOK, r.code, string(r.raw))
		require.Equal(t, "no-store", r.hdr.Get("Cache-Control"))
		require.Equal(t, c.want, r.body)
	}
	r := b.do("GET", "/api/v1/me", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.code, string(r.raw))
	r = b.do("GET", "/api/v1/me", "tfk_not-a-key", nil)
	require.Equal(t, http.StatusUnauthorized, r.code, string(r.raw))

	open := setup(t, setupOpts{open: true})
	r = open.do("GET", "/api/v1/me", "", nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, map[string]any{"kind": "key", "role": "admin", "name": "open", "session_id": nil}, r.body)
	// a named key is honoured in open mode too: a viewer stays a viewer
	r = open.do("POST", "/api/v1/keys", "", map[string]any{"name": "ro", "role": "viewer"})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	r = open.do("GET", "/api/v1/me", r.body["key"].(string), nil)
	require.Equal(t, "viewer", r.body["role"], string(r.raw))
}
