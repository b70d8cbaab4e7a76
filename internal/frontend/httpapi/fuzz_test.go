package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzSubmitBody posts arbitrary bodies: the answer is always a created
// task or a 4xx envelope naming what is wrong, never a 5xx or a panic.
func FuzzSubmitBody(f *testing.F) {
	for _, s := range []string{
		`{"task_type":"noop"}`, `{"task_type":"summarize","content":"a. b."}`, `{}`, `[]`, `null`, ``, `{"task_type":1}`,
		`{"task_type":"noop","params":{"a":[1,2,{"b":null}]}}`, `{"task_type":"noop","run_at":"2026-01-01T00:00:00Z"}`,
		`{"task_type":"noop","timeout":1e308}`, `{"task_type":"noop","max_retries":-1}`, `{"task_type":"noop","priority":"HIGH"}`,
		`{"task_type":"summarize","content":"\u0000\ud800"}`, `{"task_type":"noop"}garbage`, `{"task_type":"noop","x":1}`,
	} {
		f.Add(s)
	}
	b := setup(f)
	f.Fuzz(func(t *testing.T, body string) {
		b := b.with(t)
		r := b.do("POST", "/api/v1/tasks", adminKey, body)
		require.Contains(t, []int{http.StatusCreated, 400, 413, 422}, r.code, "body %q → %s", body, r.raw)
	})
}

// FuzzListQuery sends arbitrary query strings to the task listing: a page
// or a 400 naming the parameter, never a 5xx.
func FuzzListQuery(f *testing.F) {
	for _, s := range []string{"status=PENDING&limit=5", "page=2&page_size=3", "sort_by=created_at&sort_order=asc", "summary=true",
		"status=processing", "page=0", "limit=-1", "x=y", "status=%00", "page=99999999999999999999", "task_type=noop&page=100"} {
		f.Add(s)
	}
	b := setup(f)
	f.Fuzz(func(t *testing.T, q string) {
		b := b.with(t)
		r := b.do("GET", "/api/v1/tasks?"+url.PathEscape(q), adminKey, nil)
		require.Contains(t, []int{http.StatusOK, http.StatusBadRequest}, r.code, "query %q → %s", q, r.raw)
		if r.code == http.StatusBadRequest {
			require.NotEmpty(t, r.errField(), "query %q → %s", q, r.raw)
		}
	})
}

// FuzzScheduleBody: any body to POST /api/v1/schedules is a 201 or a
// client error naming the field, never a 500.
func FuzzScheduleBody(f *testing.F) {
	for _, s := range []string{
		`{"cron":"@hourly","task_type":"noop"}`, `{"cron":"*/5 * * * *","task_type":"noop","params":{"a":1},"timeout":30}`,
		`{"cron":"@every 1s","task_type":"noop"}`, `{"cron":"0 0 31 2 *","task_type":"noop"}`, `{"cron":"@every -1s","task_type":"noop"}`,
		`{"cron":"* * * * * * *","task_type":"noop"}`, `{"id":"","cron":"@daily","task_type":"noop"}`, `{}`, `[]`, `{"cron":"TZ=Mars/X * * * * *"}`,
	} {
		f.Add(s)
	}
	b := setup(f)
	f.Fuzz(func(t *testing.T, body string) {
		b := b.with(t)
		r := b.do("POST", "/api/v1/schedules", adminKey, body)
		require.Contains(t, []int{http.StatusCreated, 400, 409, 413, 422}, r.code, "body %q → %s", body, r.raw)
		if r.code == 422 {
			require.NotEmpty(t, r.errField(), "body %q → %s", body, r.raw)
		}
	})
}

// FuzzDependsOn: any depends_on value is a 201 or a client error naming
// depends_on.
func FuzzDependsOn(f *testing.F) {
	for _, s := range []string{`[]`, `["x"]`, `["a","a"]`, `[1]`, `"x"`, `null`, `[""]`, `["{bad}"]`} {
		f.Add(s)
	}
	b := setup(f)
	f.Fuzz(func(t *testing.T, deps string) {
		b := b.with(t)
		r := b.do("POST", "/api/v1/tasks", adminKey, `{"task_type":"noop","depends_on":`+deps+`}`)
		require.Contains(t, []int{http.StatusCreated, 400, 413, 422}, r.code, "depends_on %q → %s", deps, r.raw)
	})
}

// FuzzQueueQuery sends arbitrary queue names and query strings to the DLQ
// and queue listings: a page, a 400 naming the parameter or a 404 for an
// unknown queue — never a 5xx.
func FuzzQueueQuery(f *testing.F) {
	for _, s := range [][2]string{{"dlq", "limit=5&offset=0"}, {"primary", "limit=0"}, {"retry", "offset=-1"}, {"scheduled", "limit=abc"},
		{"primary:high", "limit=1000&offset=99999999999999999999"}, {"nope", ""}, {"dlq", "x=y"}, {"%00", "limit=%00"}, {"primary", "limit=1&limit=2"}} {
		f.Add(s[0], s[1])
	}
	b := setup(f)
	f.Fuzz(func(t *testing.T, queue, q string) {
		b := b.with(t)
		r := b.do("GET", "/api/v1/queues/dlq?"+url.PathEscape(q), adminKey, nil)
		require.Contains(t, []int{http.StatusOK, http.StatusBadRequest}, r.code, "dlq?%q → %s", q, r.raw)
		if r.code == http.StatusBadRequest {
			require.NotEmpty(t, r.errField(), "dlq?%q → %s", q, r.raw)
		}
		r = b.do("GET", "/api/v1/queues/"+url.PathEscape(queue)+"/tasks?"+url.PathEscape(q), adminKey, nil)
		require.Contains(t, []int{http.StatusOK, http.StatusBadRequest, http.StatusNotFound}, r.code, "%q?%q → %s", queue, q, r.raw)
	})
}

// FuzzBreakerBody posts arbitrary bodies to the breaker commands: applied
// (200, or 202 with no worker) or a client error naming what is wrong.
func FuzzBreakerBody(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"dependency":"openrouter"}`, `{"duration_seconds":30}`, `{"duration_seconds":-1}`,
		`{"duration_seconds":1e308}`, `{"dependency":1}`, `{"dep":"x"}`, `[]`, `null`, `{"dependency":"` + "\u0000" + `"}`,
		`{"dependency":"a b{c}"}`, `{"duration_seconds":"5"}`} {
		f.Add(s)
	}
	b := setup(f, setupOpts{breakerControl: true})
	f.Fuzz(func(t *testing.T, body string) {
		b := b.with(t)
		for _, op := range []string{"open", "reset"} {
			r := b.do("POST", "/api/v1/workers/"+op+"-circuit-breaker", adminKey, body)
			require.Contains(t, []int{http.StatusOK, http.StatusAccepted, 400, 413, 422}, r.code, "%s %q → %s", op, body, r.raw)
			if r.code == 422 {
				require.NotEmpty(t, r.errField(), "%s %q → %s", op, body, r.raw)
			}
		}
	})
}

// FuzzSessionQueries sends arbitrary query strings to the notification
// poll and the results listing: an answer, or a 400 naming the parameter,
// never a 5xx.
func FuzzSessionQueries(f *testing.F) {
	for _, s := range []string{"after=0&limit=5&mark_read=false", "limit=1000", "limit=0", "limit=1001", "after=1700000000000-0",
		"after=x", "mark_read=maybe", "a=b", "limit=1&limit=1", "session_id=x", "status_filter=failed", "=", "%zz"} {
		f.Add(s)
	}
	b := setup(f)
	s := b.session()
	f.Fuzz(func(t *testing.T, q string) {
		b := b.with(t)
		for _, path := range []string{"/api/v1/notifications", "/api/v1/results"} {
			r := b.do("GET", path+"?"+url.PathEscape(q), s.Token, nil)
			require.Contains(t, []int{http.StatusOK, http.StatusBadRequest, http.StatusForbidden}, r.code, "%s?%q → %s", path, q, r.raw)
			if r.code != http.StatusOK {
				require.NotEmpty(t, r.errField(), "%s?%q → %s", path, q, r.raw)
			}
		}
	})
}

// FuzzLimitBody: any body to PUT /api/v1/limits is the limit set or a
// client error naming the field, never a 5xx.
func FuzzLimitBody(f *testing.F) {
	for _, s := range []string{
		`{"scope":"queue","name":"emails","concurrency":2}`, `{"scope":"task_type","name":"noop","rate":{"limit":10,"per":1}}`,
		`{"scope":"key","name":"*","rate":{"limit":1,"per":0.0001}}`, `{"scope":"key","name":"","concurrency":1}`,
		`{"scope":"x","name":"y","concurrency":1}`, `{"scope":"queue","name":"A B","concurrency":1}`, `{}`, `[]`, `null`,
		`{"scope":"queue","name":"q","rate":{"limit":1e99,"per":1e308}}`, `{"scope":"queue","name":"q","concurrency":-1}`,
		`{"scope":"task_type","name":"noop","rate":null,"concurrency":null}`,
	} {
		f.Add(s)
	}
	b := setup(f)
	f.Fuzz(func(t *testing.T, body string) {
		b := b.with(t)
		r := b.do("PUT", "/api/v1/limits", adminKey, body)
		require.Contains(t, []int{http.StatusOK, 400, 413, 422}, r.code, "body %q → %s", body, r.raw)
		if r.code == http.StatusUnprocessableEntity {
			require.NotEmpty(t, r.errField(), "body %q → %s", body, r.raw)
		}
	})
}
