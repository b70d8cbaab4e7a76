package httpapi_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxBody: 4096, maxContent: 1000})
	tok := b.session().Token
	big := strings.Repeat("a", 5000)
	for name, tc := range map[string]struct {
		method, path string
		body         any
		code         int
		errCode      string
		field        string
	}{
		"EmptyBody":           {"POST", "/api/v1/tasks/summarize", "", 400, "invalid_json", ""},
		"MalformedJSON":       {"POST", "/api/v1/tasks/summarize", `{"content": "x"`, 400, "invalid_json", ""},
		"NotAnObject":         {"POST", "/api/v1/tasks/summarize", `["content"]`, 400, "invalid_json", ""},
		"TrailingData":        {"POST", "/api/v1/tasks/summarize", `{"content":"x"} {}`, 400, "invalid_json", ""},
		"UnknownField":        {"POST", "/api/v1/tasks/summarize", `{"content":"x","colour":"red"}`, 400, "unknown_field", "colour"},
		"WrongType":           {"POST", "/api/v1/tasks/summarize", `{"content": 12}`, 400, "invalid_type", "content"},
		"MissingContent":      {"POST", "/api/v1/tasks/summarize", `{}`, 422, "validation_failed", "content"},
		"BlankContent":        {"POST", "/api/v1/tasks/summarize", `{"content":"   "}`, 422, "validation_failed", "content"},
		"BodyTooLarge":        {"POST", "/api/v1/tasks/summarize", `{"content":"` + big + `"}`, 413, "body_too_large", ""},
		"ContentTooLarge":     {"POST", "/api/v1/tasks", `{"task_type":"summarize","content":"` + strings.Repeat("b", 1500) + `"}`, 413, "content_too_large", "content"},
		"MissingType":         {"POST", "/api/v1/tasks", `{"content":"x"}`, 422, "validation_failed", "task_type"},
		"SummarizeTextTwice":  {"POST", "/api/v1/tasks", `{"task_type":"summarize","content":"x","params":{"content":"y"}}`, 422, "validation_failed", "params.content"},
		"SummarizeNoText":     {"POST", "/api/v1/tasks", `{"task_type":"summarize","params":{"max_sentences":2}}`, 422, "validation_failed", "content"},
		"SummarizeBlankParam": {"POST", "/api/v1/tasks", `{"task_type":"summarize","params":{"content":"  "}}`, 422, "validation_failed", "params.content"},
		"ParamsContentLarge":  {"POST", "/api/v1/tasks", `{"task_type":"summarize","params":{"content":"` + strings.Repeat("b", 1500) + `"}}`, 413, "content_too_large", "params.content"},
		"UnknownType":         {"POST", "/api/v1/tasks", `{"task_type":"nope"}`, 422, "unknown_task_type", "task_type"},
		"BadPriority":         {"POST", "/api/v1/tasks", `{"task_type":"noop","priority":"urgent"}`, 422, "validation_failed", "priority"},
		"BadTimeout":          {"POST", "/api/v1/tasks", `{"task_type":"noop","timeout":-1}`, 422, "validation_failed", "timeout"},
		"BadMaxRetries":       {"POST", "/api/v1/tasks", `{"task_type":"noop","max_retries":1000}`, 422, "validation_failed", "max_retries"},
		"HugeDelay":           {"POST", "/api/v1/tasks", `{"task_type":"noop","delay":9999999999}`, 422, "validation_failed", "delay"},
		"DelayUnixMillis":     {"POST", "/api/v1/tasks", `{"task_type":"noop","delay":1764000000000}`, 422, "validation_failed", "delay"},
		"DelayNegative":       {"POST", "/api/v1/tasks", `{"task_type":"noop","delay":-1}`, 422, "validation_failed", "delay"},
		"HugeTimeout":         {"POST", "/api/v1/tasks", `{"task_type":"noop","timeout":1e10}`, 422, "validation_failed", "timeout"},
		"HugerTimeout":        {"POST", "/api/v1/tasks", `{"task_type":"noop","timeout":1e300}`, 422, "validation_failed", "timeout"},
		"BadRunAt":            {"POST", "/api/v1/tasks", `{"task_type":"noop","run_at":"tomorrow"}`, 422, "validation_failed", "run_at"},
		"ParamsNotObject":     {"POST", "/api/v1/tasks", `{"task_type":"noop","params":[1]}`, 422, "validation_failed", "params"},
		"WrongContentType":    {"POST", "/api/v1/tasks", "CT:text/plain", 400, "unsupported_media_type", ""},
		"UnknownQuery":        {"GET", "/api/v1/tasks?colour=red", nil, 400, "unknown_parameter", "colour"},
		"BadStatus":           {"GET", "/api/v1/tasks?status=DONE", nil, 400, "invalid_parameter", "status"},
		"BadLimit":            {"GET", "/api/v1/tasks?limit=abc", nil, 400, "invalid_parameter", "limit"},
		"HugePageSize":        {"GET", "/api/v1/tasks?page_size=5000", nil, 400, "invalid_parameter", "page_size"},
		"PageZero":            {"GET", "/api/v1/tasks?page=0", nil, 400, "invalid_parameter", "page"},
		"PageSizeZero":        {"GET", "/api/v1/tasks?page_size=0", nil, 400, "invalid_parameter", "page_size"},
		"LimitZero":           {"GET", "/api/v1/tasks?limit=0", nil, 400, "invalid_parameter", "limit"},
		"LimitAndPageSize":    {"GET", "/api/v1/tasks?limit=2&page_size=3", nil, 400, "invalid_parameter", "limit"},
		"BadSort":             {"GET", "/api/v1/tasks?sort_by=colour", nil, 400, "invalid_parameter", "sort_by"},
		"BadOrder":            {"GET", "/api/v1/tasks?sort_order=up", nil, 400, "invalid_parameter", "sort_order"},
		"BadSummary":          {"GET", "/api/v1/tasks?summary=perhaps", nil, 400, "invalid_parameter", "summary"},
		"RepeatedParam":       {"GET", "/api/v1/tasks?status=PENDING&status=DLQ", nil, 400, "invalid_parameter", "status"},
		"UnknownTask":         {"GET", "/api/v1/tasks/00000000-0000-0000-0000-000000000000", nil, 404, "task_not_found", ""},
		"UnknownTaskRetry":    {"POST", "/api/v1/tasks/nope/retry", nil, 404, "task_not_found", ""},
		"UnknownTaskDelete":   {"DELETE", "/api/v1/tasks/nope", nil, 404, "task_not_found", ""},
		"BadTaskID":           {"GET", "/api/v1/tasks/a%7Bb%7D", nil, 400, "invalid_parameter", "task_id"},
		"UnknownRoute":        {"GET", "/api/v1/nothing", nil, 404, "not_found", ""},
		"WrongMethod":         {"PUT", "/api/v1/tasks/summarize", `{}`, 405, "method_not_allowed", ""},
		"WrongMethodTasks":    {"PATCH", "/api/v1/tasks", nil, 405, "method_not_allowed", ""},
		"UnknownQueue":        {"GET", "/api/v1/queues/nope/tasks", "ADMIN", 404, "queue_not_found", ""},
		"DLQBadLimit":         {"GET", "/api/v1/queues/dlq?limit=0", "ADMIN", 400, "invalid_parameter", "limit"},
		"DLQNegativeOffset":   {"GET", "/api/v1/queues/dlq?offset=-1", "ADMIN", 400, "invalid_parameter", "offset"},
		"BreakerUnknownField": {"POST", "/api/v1/workers/open-circuit-breaker", "ADMIN:{\"dep\":\"x\"}", 400, "unknown_field", "dep"},
		"BreakerBadDuration":  {"POST", "/api/v1/workers/open-circuit-breaker", "ADMIN:{\"duration_seconds\":-5}", 422, "validation_failed", "duration_seconds"},
		"BadLastEventID":      {"GET", "/api/v1/queues/status/stream?after=xyz", "ADMIN", 400, "invalid_parameter", "Last-Event-ID"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := b.with(t)
			token, body := tok, tc.body
			if s, ok := body.(string); ok && strings.HasPrefix(s, "ADMIN") {
				token, body = adminKey, strings.TrimPrefix(strings.TrimPrefix(s, "ADMIN"), ":")
				if body == "" {
					body = nil
				}
			}
			var r resp
			if s, ok := body.(string); ok && strings.HasPrefix(s, "CT:") {
				req, err := http.NewRequest(tc.method, b.srv.URL+tc.path, strings.NewReader("hello"))
				require.NoError(t, err)
				req.Header.Set("Content-Type", strings.TrimPrefix(s, "CT:"))
				req.Header.Set("Authorization", "Bearer "+token)
				res, err := b.srv.Client().Do(req)
				require.NoError(t, err)
				res.Body.Close()
				require.Equal(t, tc.code, res.StatusCode)
				return
			}
			r = b.do(tc.method, tc.path, token, body)
			require.Equal(t, tc.code, r.code, string(r.raw))
			require.Equal(t, tc.errCode, r.errCode(), string(r.raw))
			require.Equal(t, tc.field, r.errField(), string(r.raw))
			if tc.code == 405 {
				require.NotEmpty(t, r.hdr.Get("Allow"))
			}
		})
	}
}

func TestTrailingSlash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.session().Token
	id := b.submit(tok, "With a slash. Without a slash.")
	for _, p := range []string{"/api/v1/tasks/" + id, "/api/v1/tasks/" + id + "/"} {
		r := b.do("GET", p, tok, nil)
		require.Equal(t, http.StatusOK, r.code, p)
	}
	for _, p := range []string{"/api/v1/tasks", "/api/v1/tasks/"} {
		r := b.do("GET", p, tok, nil)
		require.Equal(t, http.StatusOK, r.code, p)
	}
	for _, p := range []string{"/api/v1/tasks/summarize", "/api/v1/tasks/summarize/"} {
		r := b.do("POST", p, tok, map[string]any{"content": "Slash. Or not."})
		require.Equal(t, http.StatusCreated, r.code, p)
	}
	for _, p := range []string{"/api/v1/queues/status", "/api/v1/queues/status/", "/health/", "/ready/"} {
		r := b.do("GET", p, adminKey, nil)
		require.Contains(t, []int{200, 503}, r.code, p)
	}
}

// TestEveryRouteWithAndWithoutSlash: every route of the auth matrix (every
// documented route) answers the same with and without a trailing slash,
// each form on a task of its own; neither form is a 404 or 405.
func TestEveryRouteWithAndWithoutSlash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.session().Token
	for _, e := range endpoints() {
		t.Run(e.method+strings.ReplaceAll(e.path, "/", "_"), func(t *testing.T) {
			b := &streamBundle{b.with(t)} // the status stream: its first event is read
			var codes [2]int
			for i, slash := range []string{"", "/"} {
				id := b.submit(tok, "A task for the slash test. It has two sentences.")
				sid := b.schedule(tok)
				path := strings.NewReplacer("{id}", id, "{sid}", sid).Replace(e.path) + slash
				token := adminKey
				if e.access == "self" {
					token = b.session().Token
				}
				r := b.do(e.method, path, token, e.body)
				require.NotContains(t, []int{404, 405}, r.code, "%s %s: %s", e.method, path, r.raw)
				if e.path != "/health" { // no worker runs here: 503 unhealthy, but answered
					require.Less(t, r.code, 500, "%s %s: %s", e.method, path, r.raw)
				}
				codes[i] = r.code
				if e.method == "POST" && e.path == "/api/v1/keys" { // each form creates it anew
					require.Equal(t, http.StatusOK, b.do("DELETE", "/api/v1/keys/matrix-key", adminKey, nil).code)
				}
			}
			require.Equal(t, codes[0], codes[1], "%s %s: without and with the slash", e.method, e.path)
		})
	}
}

func TestRedisDown(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	var logs lockedBuffer
	b := setup(t, setupOpts{server: srv, logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	tok := b.session().Token
	require.Equal(t, http.StatusOK, b.do("GET", "/ready", "", nil).code)
	srv.Stop()
	r := b.do("GET", "/ready", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.code, string(r.raw))
	require.Equal(t, "unavailable", r.errCode())
	r = b.do("GET", "/health", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.code)
	require.Equal(t, false, r.body["components"].(map[string]any)["redis"])
	r = b.do("POST", "/api/v1/tasks", adminKey, map[string]any{"task_type": "noop"})
	require.Equal(t, http.StatusServiceUnavailable, r.code, string(r.raw))
	// The session token is cached: the request gets past auth to the store.
	r = b.do("GET", "/api/v1/tasks", tok, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.code, string(r.raw))
	// the client sees "unavailable"; the log names the cause (and never
	// the credentials the requests carried)
	require.Regexp(t, `"cause":"[^"]*(connection refused|deadline exceeded)`, logs.String())
	require.NotContains(t, logs.String(), adminKey)
	require.NotContains(t, logs.String(), tok)
}

// Numbers too large for a duration are refused with their range, not turned
// into another meaning (a delay that overflowed ran the task at once; a huge
// timeout was called negative).
func TestDurationOverflowMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	tok := b.session().Token
	for body, want := range map[string]string{
		`{"task_type":"noop","delay":9999999999}`:    "delay must be between 0 and 2592000 seconds (got 9.999999999e+09); it looks like a timestamp: give run_at",
		`{"task_type":"noop","delay":1764000000000}`: "it looks like a timestamp",
		`{"task_type":"noop","timeout":1e10}`:        "timeout must be more than 0 and at most 86400 seconds (got 1e+10)",
	} {
		r := b.do("POST", "/api/v1/tasks", tok, body)
		require.Equal(t, http.StatusUnprocessableEntity, r.code, body)
		require.Contains(t, string(r.raw), want, body)
	}
}

// A value of the wrong JSON type is named in words a person reads: the
// field, what it must be, and the value given.
func TestTypeErrorMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	tok := b.session().Token
	for body, want := range map[string]string{
		`{"task_type":"noop","max_retries":2.5}`:   "field max_retries must be a whole number in range, not 2.5",
		`{"task_type":"noop","max_retries":1e30}`:  "field max_retries must be a whole number in range, not 1e30",
		`{"task_type":"noop","max_retries":"3"}`:   "field max_retries must be a number, not a string",
		`{"task_type":"summarize","content":12}`:   "field content must be a string, not a number",
		`{"task_type":"summarize","content":true}`: "field content must be a string, not a boolean",
		`{"task_type":"noop","priority":["high"]}`: "field priority must be a string, not an array",
	} {
		r := b.do("POST", "/api/v1/tasks", tok, body)
		require.Equal(t, http.StatusBadRequest, r.code, body)
		require.Equal(t, "invalid_type", r.errCode(), body)
		require.Contains(t, string(r.raw), want, body)
	}
}

// A Redis that stops answering (SIGSTOP: a fork, swap or frozen VM) is a
// 503 within the request deadline (RequestTimeout, 1 s by default), for a
// submit, a listing, the queue status and /ready alike: no request hangs
// for the client's read timeouts and retries.
func TestRedisStallIsAFast503(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	b := setup(t, setupOpts{server: srv})
	tok := b.session().Token
	require.Equal(t, http.StatusOK, b.do("GET", "/ready", "", nil).code)
	srv.Pause()
	defer srv.Resume()
	for _, c := range []struct {
		method, path, token string
		body                any
	}{
		{"GET", "/ready", "", nil},
		{"POST", "/api/v1/tasks", adminKey, map[string]any{"task_type": "noop"}},
		{"GET", "/api/v1/tasks", tok, nil},
		{"GET", "/api/v1/queues/status", adminKey, nil},
	} {
		t0 := time.Now()
		r := b.do(c.method, c.path, c.token, c.body)
		took := time.Since(t0)
		require.Equal(t, http.StatusServiceUnavailable, r.code, "%s %s: %s", c.method, c.path, r.raw)
		require.Less(t, took, 1500*time.Millisecond, "%s %s answered after %s", c.method, c.path, took)
	}
}
