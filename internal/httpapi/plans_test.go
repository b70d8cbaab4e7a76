package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/planapi"
)

func TestPlanRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxBody: 4096})
	s := b.session()
	r := b.do("POST", "/api/v1/plans/follows/execute", s.Token, map[string]any{"user_id": 1, "request_id": "r1"})
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, "r1", r.body["request_id"])
	require.Contains(t, r.body, "candidates")

	long := strings.Repeat("p", 300)
	for _, tc := range []struct {
		name, path string
		status     int
		code       string
	}{
		{"FileSystemTooLong", "/api/v1/plans/" + long + "/execute", 400, "invalid_plan_name"},
		{"JustTooLong", "/api/v1/plans/" + strings.Repeat("p", planapi.MaxNameLen+1) + "/execute", 400, "invalid_plan_name"},
		{"Longest", "/api/v1/plans/" + strings.Repeat("p", planapi.MaxNameLen) + "/execute", 404, "plan_not_found"},
		{"Dots", "/api/v1/plans/..%2Ffollows/execute", 400, "invalid_plan_name"},
		{"Space", "/api/v1/plans/fol%20lows/execute", 400, "invalid_plan_name"},
		{"Unicode", "/api/v1/plans/f%C3%B6llows/execute", 400, "invalid_plan_name"},
		{"Nul", "/api/v1/plans/f%00/execute", 400, "invalid_plan_name"},
		{"Unknown", "/api/v1/plans/nothere/execute", 404, "plan_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.with(t).do("POST", tc.path, s.Token, map[string]any{"user_id": 1})
			require.Equal(t, tc.status, r.code, string(r.raw))
			require.Equal(t, tc.code, r.errCode())
			require.Equal(t, "name", r.errField())
			require.NotContains(t, string(r.raw), long, "the name is not echoed whole")
		})
	}

	r = b.do("POST", "/api/v1/plans/follows/execute", s.Token, map[string]any{"user_id": 1, "nope": 1})
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "nope", r.errField())
	r = b.do("POST", "/api/v1/plans/follows/execute", s.Token, `{"user_id":1,"request_id":"`+strings.Repeat("x", 5000)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, r.code)
	require.Equal(t, "body_too_large", r.errCode())
	r = b.do("GET", "/api/v1/plans/follows/execute", s.Token, nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.code)
	require.Equal(t, "POST", r.hdr.Get("Allow"))
	require.Equal(t, http.StatusUnauthorized, b.do("POST", "/api/v1/plans/follows/execute", "", map[string]any{"user_id": 1}).code)
}

// TestPlanTaskCheckedAtSubmit: a plan task whose run could only fail (bad
// or unknown plan name, bad request fields) is refused at submit with the
// params field, by the same name rule as the route.
func TestPlanTaskCheckedAtSubmit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.session()
	for _, tc := range []struct {
		name   string
		params any
		field  string
	}{
		{"LongName", map[string]any{"plan_name": strings.Repeat("p", 300), "user_id": 1}, "params.plan_name"},
		{"OddName", map[string]any{"plan_name": "../etc/passwd", "user_id": 1}, "params.plan_name"},
		{"UnknownPlan", map[string]any{"plan_name": "nothere", "user_id": 1}, "params.plan_name"},
		{"NoName", map[string]any{"user_id": 1}, "params.plan_name"},
		{"NoUser", map[string]any{"plan_name": "follows"}, "params.user_id"},
		{"UnknownField", map[string]any{"plan_name": "follows", "user_id": 1, "deadline": 5}, "params.deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.with(t).do("POST", "/api/v1/tasks", s.Token, map[string]any{"task_type": "plan", "params": tc.params})
			require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
			require.Equal(t, tc.field, r.errField(), string(r.raw))
		})
	}
	r := b.do("POST", "/api/v1/tasks", s.Token, map[string]any{"task_type": "plan", "params": map[string]any{"plan_name": "follows", "user_id": 1}})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
}

// TestWrongMethodOnLiteralPath: a literal path asked with a method it does
// not serve is a 405 with Allow, not a wildcard route's 404 (GET
// /api/v1/tasks/summarize is not a task named "summarize").
func TestWrongMethodOnLiteralPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.session()
	for _, tc := range []struct{ method, path, allow string }{
		{"GET", "/api/v1/tasks/summarize", "POST"},
		{"DELETE", "/api/v1/tasks/summarize/", "POST"},
		{"GET", "/api/v1/tasks/requeue-orphaned", "POST"},
		{"DELETE", "/api/v1/sessions", "POST"},
	} {
		r := b.do(tc.method, tc.path, s.Token, nil)
		require.Equal(t, http.StatusMethodNotAllowed, r.code, "%s %s: %s", tc.method, tc.path, r.raw)
		require.Equal(t, tc.allow, r.hdr.Get("Allow"), "%s %s", tc.method, tc.path)
		require.Equal(t, "method_not_allowed", r.errCode())
	}
	// the wildcard still serves every other id
	r := b.do("GET", "/api/v1/tasks/summarizer", s.Token, nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "task_not_found", r.errCode())
}

// FuzzPlanRoute runs plans of arbitrary names: the answer is a run, or a
// 400/404 naming the name, never a 5xx (a name never reaches the file
// system unchecked).
func FuzzPlanRoute(f *testing.F) {
	for _, s := range []string{"follows", "", "..", "a.b", strings.Repeat("x", 255), strings.Repeat("y", 4096), "f%00", "ö", "a/b", "follows ", "CON", "_"} {
		f.Add(s)
	}
	b := setup(f)
	f.Fuzz(func(t *testing.T, name string) {
		b := b.with(t)
		r := b.do("POST", "/api/v1/plans/"+url.PathEscape(name)+"/execute", adminKey, `{"user_id":1}`)
		switch r.code {
		case http.StatusOK:
			require.Equal(t, "follows", name)
		case http.StatusBadRequest, http.StatusNotFound:
			require.Contains(t, []string{"name", ""}, r.errField(), "%q → %s", name, r.raw)
		case http.StatusMethodNotAllowed: // a name with "/" routes elsewhere
		default:
			t.Fatalf("%q → %d %s", name, r.code, r.raw)
		}
	})
}
