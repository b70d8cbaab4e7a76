package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// authRow is how the matrix tries one route of the assembled server.
type authRow struct {
	// access: public (no credentials needed); session (any session or the
	// admin); owner (the session owning the task or schedule, or the
	// admin); admin (the admin key only); self (a session acting on
	// itself); mcp (the MCP endpoint: a session or the admin, checked by
	// the MCP transport itself).
	access string
	body   string
	// stream: the answer is Server-Sent Events; the first event is read
	stream bool
}

// authMatrix has one row per route of `taskflow dev`, mounts included.
// TestAuthMatrixEveryRoute fails on a route without a row (and on a row
// without a route), so a new route cannot go untried.
var authMatrix = map[string]authRow{
	"POST /api/v1/sessions":                      {access: "public"},
	"POST /api/v1/keys":                          {access: "admin", body: `{"name":"matrix","role":"viewer"}`},
	"GET /api/v1/keys":                           {access: "admin"},
	"DELETE /api/v1/keys/{name}":                 {access: "admin"},
	"GET /api/v1/audit":                          {access: "admin"},
	"GET /api/v1/me":                             {access: "session"},
	"GET /api/v1/sessions":                       {access: "admin"},
	"DELETE /api/v1/sessions/current":            {access: "self"},
	"GET /health":                                {access: "public"},
	"GET /live":                                  {access: "public"},
	"GET /ready":                                 {access: "public"},
	"GET /openapi.json":                          {access: "public"},
	"GET /docs":                                  {access: "public"},
	"POST /api/v1/tasks/summarize":               {access: "session", body: `{"content":"One sentence. Two sentences."}`},
	"POST /api/v1/tasks":                         {access: "session", body: `{"task_type":"noop"}`},
	"POST /api/v1/tasks/batch":                   {access: "session", body: `{"tasks":[{"task_type":"noop"}]}`},
	"GET /api/v1/tasks":                          {access: "session"},
	"GET /api/v1/tasks/{task_id}":                {access: "owner"},
	"POST /api/v1/tasks/{task_id}/retry":         {access: "owner"},
	"POST /api/v1/tasks/{task_id}/cancel":        {access: "owner"},
	"DELETE /api/v1/tasks/{task_id}":             {access: "owner"},
	"POST /api/v1/tasks/requeue-orphaned":        {access: "admin"},
	"POST /api/v1/schedules":                     {access: "session", body: `{"cron":"@hourly","task_type":"noop"}`},
	"GET /api/v1/schedules":                      {access: "session"},
	"GET /api/v1/schedules/{schedule_id}":        {access: "owner"},
	"DELETE /api/v1/schedules/{schedule_id}":     {access: "owner"},
	"GET /api/v1/queues/status":                  {access: "admin"},
	"GET /api/v1/queues":                         {access: "admin"},
	"GET /api/v1/queues/{queue}":                 {access: "admin"},
	"POST /api/v1/queues/{queue}/pause":          {access: "admin"},
	"POST /api/v1/queues/{queue}/resume":         {access: "admin"},
	"POST /api/v1/task-types/{task_type}/pause":  {access: "admin"},
	"POST /api/v1/task-types/{task_type}/resume": {access: "admin"},
	"GET /api/v1/limits":                         {access: "admin"},
	"PUT /api/v1/limits":                         {access: "admin", body: `{"scope":"key","name":"tenant-1","concurrency":2}`},
	"DELETE /api/v1/limits/{scope}/{name}":       {access: "admin"},
	"GET /api/v1/stats/series":                   {access: "admin"},
	"GET /api/v1/queues/status/stream":           {access: "admin", stream: true},
	"POST /api/v1/queues/dlq/retry":              {access: "admin", body: `{"all":true}`},
	"POST /api/v1/queues/dlq/delete":             {access: "admin", body: `{"task_ids":["0193ffff-0000-7000-8000-000000000000"]}`},
	"GET /api/v1/queues/dlq":                     {access: "admin"},
	"GET /api/v1/queues/{queue}/tasks":           {access: "admin"},
	"GET /api/v1/workers":                        {access: "admin"},
	"GET /api/v1/services":                       {access: "session"},
	"GET /api/v1/task-types":                     {access: "session"},
	"POST /api/v1/workers/reset-circuit-breaker": {access: "admin"},
	"POST /api/v1/workers/open-circuit-breaker":  {access: "admin", body: `{"duration_seconds":1}`},
	"GET /metrics":                               {access: "admin"},
	"POST /api/v1/plans/{name}/execute":          {access: "session", body: `{"user_id":"u1"}`},
	"GET /api/v1/plans":                          {access: "session"},
	"GET /api/v1/plans/{name}":                   {access: "session"},
	"GET /api/v1/results":                        {access: "session"},
	"GET /api/v1/results/{task_id}":              {access: "owner"},
	"GET /api/v1/results/{task_id}/files/{name}": {access: "owner"},
	"POST /mcp":                                  {access: "mcp", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"matrix","version":"1"}}}`},
	"GET /mcp":                                   {access: "mcp"},
	"DELETE /mcp":                                {access: "mcp"},
	"GET /api/v1/notifications":                  {access: "session"},
	"GET /api/v1/notifications/ws":               {access: "session"},
	"GET /api/v1/notifications/stream":           {access: "session", stream: true},
}

// TestAuthMatrixEveryRoute: on the assembled server (`taskflow dev` with an
// admin key, so every mount is there), every route /openapi.json lists is
// tried without credentials, with a bad token, with another session's
// token and with the right one (the owner's, the admin's); streams are
// opened and their first event read.
func TestAuthMatrixEveryRoute(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	const admin = "auth-matrix-admin-key-0123456789abc"
	base, _ := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin})

	type answer struct {
		code  int
		body  string
		event string // a stream's first event
	}
	do := func(method, path, token, body string, stream bool) answer {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err, "%s %s", method, path)
		defer res.Body.Close()
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			require.True(t, stream, "%s %s answered a stream", method, path)
			var ev strings.Builder
			rd := bufio.NewReader(res.Body)
			for {
				line, err := rd.ReadString('\n')
				require.NoError(t, err, "%s %s: no first event", method, path)
				if line == "\n" && ev.Len() > 0 {
					break
				}
				ev.WriteString(line)
			}
			return answer{code: res.StatusCode, event: ev.String()}
		}
		raw, err := io.ReadAll(res.Body)
		if err != nil && !errors.Is(err, context.Canceled) {
			require.NoError(t, err)
		}
		return answer{code: res.StatusCode, body: string(raw)}
	}
	session := func() string {
		a := do("POST", "/api/v1/sessions", "", "", false)
		require.Equal(t, http.StatusCreated, a.code, a.body)
		var s struct {
			Token string `json:"token"`
		}
		require.NoError(t, json.Unmarshal([]byte(a.body), &s))
		return s.Token
	}
	create := func(token, path, body, field string) string {
		a := do("POST", path, token, body, false)
		require.Equal(t, http.StatusCreated, a.code, a.body)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(a.body), &out))
		return out[field].(string)
	}
	owner, other := session(), session()

	a := do("GET", "/openapi.json", "", "", false)
	require.Equal(t, http.StatusOK, a.code)
	var spec struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &spec))
	var routes []string
	for p, ops := range spec.Paths {
		for m := range ops {
			routes = append(routes, strings.ToUpper(m)+" "+p)
		}
	}
	sort.Strings(routes)
	for _, r := range routes {
		require.Contains(t, authMatrix, r, "route %s has no row in the auth matrix", r)
	}
	for r := range authMatrix {
		require.Contains(t, routes, r, "the auth matrix has a row for %s, which the server does not list", r)
	}
	t.Logf("%d routes", len(routes))

	for _, r := range routes {
		row := authMatrix[r]
		method, tmpl, _ := strings.Cut(r, " ")
		// a fresh task and schedule of the owner per route (DELETE, cancel)
		fill := func() string {
			id := create(owner, "/api/v1/tasks/summarize", `{"content":"The owner's text. Two sentences."}`, "task_id")
			sid := create(owner, "/api/v1/schedules", `{"cron":"@hourly","task_type":"noop"}`, "schedule_id")
			return strings.NewReplacer("{task_id}", id, "{schedule_id}", sid, "{queue}", "primary", "{name}", "diamond").Replace(tmpl)
		}
		path := fill()
		what := r + " (" + path + ")"
		if row.access == "public" {
			a := do(method, path, "", row.body, row.stream)
			require.Less(t, a.code, 400, "%s without credentials: %s", what, a.body)
			continue
		}
		a := do(method, path, "", row.body, row.stream)
		require.Equal(t, http.StatusUnauthorized, a.code, "%s without credentials: %s", what, a.body)
		a = do(method, path, "tfs_not-a-real-token", row.body, row.stream)
		require.Equal(t, http.StatusUnauthorized, a.code, "%s with a bad token: %s", what, a.body)

		if row.access == "self" { // a session ends only itself
			victim := session()
			a = do(method, path, victim, row.body, row.stream)
			require.Equal(t, http.StatusOK, a.code, "%s: %s", what, a.body)
			require.Equal(t, http.StatusOK, do("GET", "/api/v1/tasks", owner, "", false).code, "the owner's session lives on")
			continue
		}
		if row.access == "mcp" { // any session or the admin may speak MCP
			for _, tok := range []string{other, admin} {
				a = do(method, path, tok, row.body, row.stream)
				require.NotContains(t, []int{401, 403}, a.code, "%s with a token: %s", what, a.body)
				require.Less(t, a.code, 500, "%s: %s", what, a.body)
			}
			continue
		}
		a = do(method, path, other, row.body, row.stream)
		switch row.access {
		case "session":
			require.NotContains(t, []int{401, 403}, a.code, "%s with a session's token: %s", what, a.body)
			require.Less(t, a.code, 500, "%s with a session's token: %s", what, a.body)
		case "owner":
			require.Equal(t, http.StatusNotFound, a.code, "%s with another session's token: %s", what, a.body)
		case "admin":
			require.Equal(t, http.StatusForbidden, a.code, "%s with a session's token: %s", what, a.body)
		}

		tok := owner
		if row.access == "admin" {
			tok = admin
		}
		if row.access == "owner" {
			path = fill()
		}
		a = do(method, path, tok, row.body, row.stream)
		require.NotContains(t, []int{401, 403}, a.code, "%s with the right token: %s", what, a.body)
		require.Less(t, a.code, 500, "%s with the right token: %s", what, a.body)
		if row.stream {
			require.Equal(t, http.StatusOK, a.code, what)
			require.NotEmpty(t, a.event, what)
		}
		if r == "GET /api/v1/queues/status/stream" {
			require.Contains(t, a.event, "event: snapshot", "the status stream starts with the snapshot")
			// a browser's EventSource: the key in the query, trailing slash
			a = do(method, path+"/?access_token="+url.QueryEscape(admin), "", "", true)
			require.Equal(t, http.StatusOK, a.code)
			require.Contains(t, a.event, "event: snapshot")
		}
		if row.access == "owner" { // the admin may do what the owner may
			a = do(method, fill(), admin, row.body, row.stream)
			require.NotContains(t, []int{401, 403}, a.code, "%s as the admin: %s", what, a.body)
			require.Less(t, a.code, 500, "%s as the admin: %s", what, a.body)
		}
	}
}
