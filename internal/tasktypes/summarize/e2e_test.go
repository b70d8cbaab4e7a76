package summarize_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/engine/breaker"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/maintenance"
	"github.com/taskflow/taskflow/internal/engine/ratelimit"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/frontend/httpapi"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/internal/tasktypes/llm"
	"github.com/taskflow/taskflow/internal/tasktypes/llmfake"
	"github.com/taskflow/taskflow/internal/tasktypes/summarize"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
	"github.com/taskflow/taskflow/task"
)

// scenario is what the fake LLM does to one task and what rules
// then say must become of it (max_retries 3: up to 4 attempts).
type scenario struct {
	marker   string
	state    task.State
	retries  int    // retry_count at the end
	attempts int    // calls that reach the fake
	errType  string // error_type of a dead-lettered task
}

var scenarios = []scenario{
	{"", task.StateCompleted, 0, 1, ""},
	{"[[llmfake:429*1 retry-after=1]]", task.StateCompleted, 1, 2, ""},
	{"[[llmfake:429*2]]", task.StateCompleted, 2, 3, ""},
	{"[[llmfake:503*3]]", task.StateCompleted, 3, 4, ""},
	{"[[llmfake:hang*1]]", task.StateCompleted, 1, 2, ""},
	{"[[llmfake:500*1]]", task.StateCompleted, 1, 2, ""},
	{"[[llmfake:503]]", task.StateDLQ, 3, 4, task.ErrTypeServiceUnavailable},
	{"[[llmfake:429*4]]", task.StateDLQ, 3, 4, task.ErrTypeRateLimit},
	{"[[llmfake:400]]", task.StateDLQ, 0, 1, task.ErrTypeInvalidInput},
	{"[[llmfake:401]]", task.StateDLQ, 0, 1, task.ErrTypeAuth},
}

// scenarioOf spreads the scenarios over tasks: about half succeed at once.
func scenarioOf(i int) scenario {
	if i%2 == 0 {
		return scenarios[0]
	}
	return scenarios[(i/2)%len(scenarios)]
}

// TestEndToEnd is issue 3's end-to-end check: 1,000 summarize tasks
// submitted through the real HTTP API, run by two workers, the scheduler,
// the breaker and the fleet-wide rate limit against the fake LLM with
// injected 429/503/500/400/401/timeouts. Every task must end COMPLETED or
// DLQ exactly as rules say (state, retry_count, error history,
// error type), the fake must see exactly one call per attempt, and
// GET /api/v1/queues/status must agree with the tasks themselves.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	const n = 1000
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)

	fake := llmfake.New(llmfake.Options{APIKey: key})
	base, err := fake.Start("127.0.0.1:0")
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(func() {
		require.NoError(t, fake.Close())
		hc.CloseIdleConnections()
	})
	api := startAPI(t, rdb, st, ns)

	client, err := llm.New(llm.Config{APIKey: key, BaseURL: base, Model: "fake/model", Timeout: 3 * time.Second}, hc)
	require.NoError(t, err)
	// Low enough that the two workers (2 × 25 handlers) run into it.
	lim, err := ratelimit.New(rdb, ratelimit.Config{Limit: 300, Interval: 250 * time.Millisecond, Name: summarize.Dependency, Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	h, err := summarize.New(summarize.Config{LLM: client, Limiter: lim})
	require.NoError(t, err)
	mux := taskflow.NewMux()
	mux.Handle(summarize.TaskType, h)

	// Submit through the API, 8 clients at once.
	want := make(map[string]scenario, n)
	var mu sync.Mutex
	wantAttempts := 0
	var submit sync.WaitGroup
	for c := range 8 {
		submit.Go(func() {
			for i := c; i < n; i += 8 {
				sc := scenarioOf(i)
				content := fmt.Sprintf("Task %d asks for a summary. Otters sleep holding hands. %s", i, sc.marker)
				var created struct {
					TaskID string     `json:"task_id"`
					State  task.State `json:"state"`
				}
				code := api.do(t, http.MethodPost, "/api/v1/tasks/summarize/", map[string]string{"content": content}, &created)
				require.Equal(t, http.StatusCreated, code)
				require.Equal(t, task.StatePending, created.State)
				mu.Lock()
				want[created.TaskID] = sc
				wantAttempts += sc.attempts
				mu.Unlock()
			}
		})
	}
	submit.Wait()
	require.Len(t, want, n)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Registered after the fake's cleanup, so it runs first: workers stop
	// before the fake does, also when the test fails half-way.
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range 2 {
		w, err := worker.New(st, mux, worker.Config{
			ID:           fmt.Sprintf("e2e-w%d", i),
			Concurrency:  25,
			Dependencies: map[string]string{summarize.TaskType: summarize.Dependency},
			Breaker:      breaker.Config{Timeout: 100 * time.Millisecond},
			Retry:        retry.Policy{Scale: 0.001}, // schedules in ms
		})
		require.NoError(t, err)
		wg.Go(func() { require.NoError(t, w.Run(ctx)) })
	}
	sch, err := maintenance.New(st, maintenance.Config{Interval: 20 * time.Millisecond})
	require.NoError(t, err)
	wg.Go(func() { require.NoError(t, sch.Run(ctx)) })

	// Wait until every task is final (poll the API with a deadline).
	type queueStatus struct {
		Queues map[string]int64     `json:"queues"`
		States map[task.State]int64 `json:"states"`
	}
	start := time.Now()
	var qs queueStatus
	testwait.Until(t, 2*time.Minute, 50*time.Millisecond, func() bool {
		require.Equal(t, http.StatusOK, api.do(t, http.MethodGet, "/api/v1/queues/status", nil, &qs))
		return qs.States[task.StateCompleted]+qs.States[task.StateDLQ] == n
	}, func() string { return fmt.Sprintf("tasks not final in time: %+v", qs.States) })
	cancel()
	wg.Wait()

	counted := map[task.State]int64{}
	for id, sc := range want {
		var tk task.Task
		require.Equal(t, http.StatusOK, api.do(t, http.MethodGet, "/api/v1/tasks/"+id, nil, &tk))
		counted[tk.State]++
		require.Equal(t, sc.state, tk.State, "task %s (%q): %s", id, sc.marker, tk.LastError)
		require.Equal(t, sc.retries, tk.RetryCount, "task %s (%q) retry_count: %+v", id, sc.marker, tk.ErrorHistory)
		require.Len(t, tk.ErrorHistory, sc.attempts-boolInt(sc.state == task.StateCompleted), "task %s error history", id)
		for _, e := range tk.ErrorHistory {
			require.NotContains(t, e.Message, key, "the API key never reaches a task")
		}
		switch sc.state {
		case task.StateDLQ:
			require.Equal(t, sc.errType, tk.ErrorType, "task %s (%q)", id, sc.marker)
		case task.StateCompleted:
			var res summarize.Result
			require.NoError(t, json.Unmarshal(tk.Result, &res))
			require.Equal(t, summarize.SummarizerLLM, res.Summarizer)
			require.True(t, strings.HasPrefix(res.Summary, "Fake summary: Task "), res.Summary)
			require.Contains(t, tk.Content, strings.TrimPrefix(res.Summary, "Fake summary: "), "the summary is of this task's text")
		}
	}
	require.Equal(t, wantAttempts, fake.Stats().Requests, "each attempt made exactly one call")

	// The API's queue status agrees with the tasks themselves.
	require.Equal(t, http.StatusOK, api.do(t, http.MethodGet, "/api/v1/queues/status", nil, &qs))
	for _, s := range task.States {
		require.Equal(t, counted[s], qs.States[s], "state %s", s)
	}
	require.Equal(t, map[string]int64{"primary": 0, "retry": 0, "scheduled": 0, "dlq": counted[task.StateDLQ]}, qs.Queues)
	t.Logf("completed %d, dead-lettered %d, LLM calls %d, in %s", counted[task.StateCompleted], counted[task.StateDLQ], wantAttempts, time.Since(start))
}

// apiClient talks to a real API server (open mode: no credentials needed).
type apiClient struct {
	url  string
	http *http.Client
}

func startAPI(t *testing.T, rdb redis.UniversalClient, st *store.Store, ns string) *apiClient {
	t.Helper()
	au, err := auth.New(rdb, auth.Config{Namespace: keyspace.MustParse(ns), Open: true})
	require.NoError(t, err)
	svc, err := service.New(service.Config{Store: st, Auth: au,
		Types: mustTypes(t, summarize.Type)})
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	srv, err := httpapi.New(httpapi.Config{Service: svc, Auth: au})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &apiClient{url: ts.URL, http: ts.Client()}
}

// do sends body as JSON, decodes the answer into out, and returns the status.
func (a *apiClient) do(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := a.http.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if out != nil && res.StatusCode < 300 {
		require.NoError(t, json.Unmarshal(raw, out), "%s %s: %s", method, path, raw)
	}
	return res.StatusCode
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mustTypes(t *testing.T, types ...tasktypes.Type) *tasktypes.Registry {
	t.Helper()
	r, err := tasktypes.New(tasktypes.Config{Local: types})
	require.NoError(t, err)
	return r
}
