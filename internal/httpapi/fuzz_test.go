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
