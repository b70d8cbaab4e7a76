package httpapi_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontend/httpapi"
)

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{mounts: []httpapi.Mount{{Method: "POST", Path: "/api/v1/extras/{name}/run", Access: "session",
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }), Summary: "Run an extra", Tag: "extras"}}})
	b.submit(adminKey, "A task for the listings. It waits.")
	r := b.do("GET", "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "3.0.3", r.body["openapi"])
	paths := r.body["paths"].(map[string]any)
	schemas := r.body["components"].(map[string]any)["schemas"].(map[string]any)

	// Every endpoint of docs/api.md is there.
	for _, p := range []string{"/api/v1/tasks/summarize", "/api/v1/tasks/{task_id}", "/api/v1/tasks/{task_id}/retry",
		"/api/v1/tasks", "/api/v1/tasks/requeue-orphaned", "/api/v1/queues/status", "/api/v1/queues/dlq",
		"/api/v1/queues/{queue}/tasks", "/health", "/api/v1/queues/status/stream", "/api/v1/workers", "/api/v1/plans", "/api/v1/plans/{name}", "/api/v1/plans/{name}/execute",
		"/api/v1/results", "/api/v1/results/{task_id}", "/api/v1/notifications", "/api/v1/notifications/ws", "/api/v1/notifications/stream", "/api/v1/extras/{name}/run"} {
		require.Contains(t, paths, p)
	}
	// Every $ref resolves, every operation has responses and an id.
	ids := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				name := strings.TrimPrefix(ref, "#/components/schemas/")
				require.Contains(t, schemas, name, "dangling $ref %s", ref)
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(r.body)
	for path, ops := range paths {
		for m, op := range ops.(map[string]any) {
			o := op.(map[string]any)
			require.NotEmpty(t, o["responses"], "%s %s", m, path)
			id := o["operationId"].(string)
			require.False(t, ids[id], "duplicate operationId %s", id)
			ids[id] = true
			// Every documented route answers something other than 404/405,
			// and a JSON answer is what the document says of its status.
			if !strings.Contains(path, "{") && m == "get" && path != "/api/v1/queues/status/stream" {
				res := b.do("GET", path, adminKey, nil)
				require.NotContains(t, []int{404, 405}, res.code, path)
				if res.body != nil {
					doc, ok := o["responses"].(map[string]any)[strconv.Itoa(res.code)].(map[string]any)
					require.True(t, ok, "GET %s answered %d, which the document does not list: %s", path, res.code, res.raw)
					if content, ok := doc["content"].(map[string]any); ok { // /openapi.json says no more than JSON
						schema := content["application/json"].(map[string]any)["schema"].(map[string]any)
						require.NoError(t, schemaErr(schemas, schema, map[string]any(res.body), path), "%s", res.raw)
					}
				}
			}
		}
	}
	// A mounted handler is served behind its access check.
	res := b.do("POST", "/api/v1/extras/x/run", "", map[string]any{})
	require.Equal(t, http.StatusUnauthorized, res.code)
	res = b.do("POST", "/api/v1/extras/x/run", adminKey, map[string]any{})
	require.Equal(t, http.StatusNoContent, res.code)
}

func TestDocsPageIsSelfContained(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do("GET", "/docs", "", nil)
	require.Equal(t, http.StatusOK, r.code)
	require.True(t, strings.HasPrefix(r.hdr.Get("Content-Type"), "text/html"))
	page := string(r.raw)
	require.Contains(t, page, "/openapi.json")
	for _, remote := range []string{"http://", "https://", "//cdn", "<script src", "<link "} {
		require.NotContains(t, page, remote, "the docs page must work offline")
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.api.Run(ctx) }()
	defer func() { cancel(); <-done }()

	tok := b.session().Token
	b.submit(tok, "Metric task. It waits.")
	r := b.do("GET", "/metrics", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code)
	text := string(r.raw)
	for _, want := range []string{
		`taskflow_queue_depth{queue="primary"} 1`,
		`taskflow_tasks{state="PENDING"} 1`,
		`taskflow_redis_up 1`,
		`taskflow_named_queue_pending{priority="normal",queue="default"} 1`,
		`taskflow_named_queue_paused{queue="default"} 0`,
		`taskflow_named_queue_active{queue="default"} 0`,
		`taskflow_http_request_duration_seconds_bucket{code="201",method="POST",route="POST /api/v1/tasks/summarize"`,
	} {
		require.Contains(t, text, want)
	}
	// Transitions are counted from the event stream once Run follows it.
	require.Eventually(t, func() bool {
		b.submit(tok, "Another. Seen by the follower.")
		m := string(b.do("GET", "/metrics", adminKey, nil).raw)
		return strings.Contains(m, `taskflow_task_transitions_total{from="",task_type="summarize",to="PENDING"}`)
	}, 10*time.Second, 50*time.Millisecond)

	// A task run to completion is timed from ACTIVE to COMPLETED.
	ts := b.activate(1)
	require.Len(t, ts, 1)
	b.clock.Advance(1500 * time.Millisecond) // the store's clock: the attempt took 1.5 s
	require.NoError(t, b.st.Complete(context.Background(), ts[0].ID, ts[0].Lease, []byte(`{}`)))
	require.Eventually(t, func() bool {
		m := string(b.do("GET", "/metrics", adminKey, nil).raw)
		return strings.Contains(m, `taskflow_task_duration_seconds_bucket{task_type="summarize",to="COMPLETED",le="1.024"} 0`) &&
			strings.Contains(m, `taskflow_task_duration_seconds_bucket{task_type="summarize",to="COMPLETED",le="4.096"} 1`)
	}, 10*time.Second, 50*time.Millisecond)
}

func TestHealthProbes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do("GET", "/health", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.code, "no worker runs")
	require.Equal(t, "unhealthy", r.body["status"])
	comp := r.body["components"].(map[string]any)
	require.Equal(t, true, comp["redis"])
	require.Equal(t, false, comp["workers"])
	require.Contains(t, r.body, "timestamp")

	// A worker heartbeat (as the worker publishes it) makes it healthy.
	require.NoError(t, b.st.PublishWorker(context.Background(), "w1", map[string]string{
		"concurrency": "8", "in_flight": "2", "types": `["noop","summarize"]`, "breakers": `[{"dependency":"openrouter","state":"OPEN","failures":6}]`}, time.Minute))
	r = b.do("GET", "/health", "", nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, "healthy", r.body["status"])
	require.Equal(t, "OPEN", r.body["components"].(map[string]any)["circuit_breaker"].(map[string]any)["openrouter"])

	// A worker that does not publish in_flight gets its ACTIVE tasks counted.
	require.NoError(t, b.st.PublishWorker(context.Background(), "test-worker", map[string]string{"concurrency": "4"}, time.Minute))
	b.submit(b.session().Token, "Held by test-worker. It runs.")
	require.Len(t, b.activate(1), 1)
	r = b.do("GET", "/api/v1/workers", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code)
	require.EqualValues(t, 2, r.body["count"])
	byID := map[string]map[string]any{}
	for _, x := range r.body["workers"].([]any) {
		byID[x.(map[string]any)["worker_id"].(string)] = x.(map[string]any)
	}
	require.EqualValues(t, 1, byID["test-worker"]["in_flight"])
	w := byID["w1"]
	require.Equal(t, "w1", w["worker_id"])
	require.EqualValues(t, 8, w["concurrency"])
	require.EqualValues(t, 2, w["in_flight"])
	require.Equal(t, map[string]any{"openrouter": "OPEN"}, w["circuit_breakers"])
	require.Contains(t, w, "heartbeat_age_seconds")
	require.Equal(t, []any{"noop", "summarize"}, w["task_types"])

	require.Equal(t, http.StatusOK, b.do("GET", "/live", "", nil).code)
	require.Equal(t, http.StatusOK, b.do("GET", "/ready", "", nil).code)
}

// TestRouteMiddlewareSeesPrincipal: the route middleware (notifications on
// the next response) runs after authentication, on every route.
func TestRouteMiddlewareSeesPrincipal(t *testing.T) {
	t.Parallel()
	seen := make(chan auth.Principal, 10)
	mw := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen <- auth.FromContext(r.Context())
			next.ServeHTTP(w, r)
		})
	}
	b := setup(t, setupOpts{middleware: mw})
	s := b.session()
	<-seen // the session creation (public: no principal)
	b.submit(s.Token, "Seen by the middleware. With its session.")
	require.Equal(t, auth.Principal{SessionID: s.ID}, <-seen)
	r := b.do("GET", "/api/v1/queues/status", s.Token, nil)
	require.Equal(t, http.StatusForbidden, r.code)
	select {
	case p := <-seen:
		t.Fatalf("the middleware ran for a refused request: %+v", p)
	default:
	}
}

// TestMetricsWorkersAndBreakers: /metrics counts the live workers and shows
// each dependency's worst breaker state across them (0 closed, 1 half-open,
// 2 open), as the workers publish them with their heartbeat.
func TestMetricsWorkersAndBreakers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	scrape := func() string {
		r := b.do("GET", "/metrics", adminKey, nil)
		require.Equal(t, http.StatusOK, r.code)
		return string(r.raw)
	}
	m := scrape()
	require.Contains(t, m, "\ntaskflow_workers 0\n")
	require.NotContains(t, m, "taskflow_circuit_breaker_state{")

	require.NoError(t, b.st.PublishWorker(ctx, "w1", map[string]string{"concurrency": "2",
		"breakers": `[{"dependency":"openrouter","state":"HALF_OPEN"},{"dependency":"billing","state":"CLOSED"}]`}, time.Minute))
	m = scrape()
	require.Contains(t, m, "\ntaskflow_workers 1\n")
	require.Contains(t, m, `taskflow_circuit_breaker_state{dependency="openrouter"} 1`)
	require.Contains(t, m, `taskflow_circuit_breaker_state{dependency="billing"} 0`)

	// A second worker whose openrouter breaker is OPEN: the worst state.
	require.NoError(t, b.st.PublishWorker(ctx, "w2", map[string]string{"concurrency": "2",
		"breakers": `[{"dependency":"openrouter","state":"OPEN","failures":5}]`}, time.Minute))
	m = scrape()
	require.Contains(t, m, "\ntaskflow_workers 2\n")
	require.Contains(t, m, `taskflow_circuit_breaker_state{dependency="openrouter"} 2`)
	require.Contains(t, m, `taskflow_circuit_breaker_state{dependency="billing"} 0`)

	// The worker that goes away is no longer counted.
	require.NoError(t, b.st.RemoveWorker(ctx, "w2"))
	m = scrape()
	require.Contains(t, m, "\ntaskflow_workers 1\n")
	require.Contains(t, m, `taskflow_circuit_breaker_state{dependency="openrouter"} 1`)
}
