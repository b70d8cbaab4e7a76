package summarize_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/breaker"
	"github.com/taskflow/taskflow/internal/llm"
	"github.com/taskflow/taskflow/internal/llmfake"
	"github.com/taskflow/taskflow/internal/ratelimit"
	"github.com/taskflow/taskflow/internal/retry"
	"github.com/taskflow/taskflow/internal/scheduler"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/summarize"
	"github.com/taskflow/taskflow/internal/task"
	"github.com/taskflow/taskflow/internal/testredis"
	"github.com/taskflow/taskflow/internal/worker"
)

// scenario is what the fake LLM does to one task and what spec 001's rules
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

// TestEndToEnd runs 1,000 summarize tasks through the real store, two
// workers, the scheduler and the fleet-wide rate limit against the fake LLM
// with injected 429/503/500/400/401/timeouts, and checks that every task
// ends COMPLETED or DLQ exactly as the rules say, that the fake saw exactly
// the calls the rules imply, and that the store's queue status agrees with
// the tasks themselves.
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
	client, err := llm.New(llm.Config{APIKey: key, BaseURL: base, Model: "fake/model", Timeout: 3 * time.Second}, hc)
	require.NoError(t, err)
	// Low enough that the two workers (2 × 25 handlers) run into it.
	lim, err := ratelimit.New(rdb, ratelimit.Config{Limit: 300, Interval: 250 * time.Millisecond, Name: summarize.Dependency, Namespace: ns})
	require.NoError(t, err)
	h, err := summarize.New(summarize.Config{LLM: client, Limiter: lim})
	require.NoError(t, err)
	mux := worker.NewMux()
	mux.Handle(summarize.TaskType, h)

	reqs := make([]store.EnqueueRequest, n)
	want := map[string]scenario{}
	wantAttempts := 0
	for i := range reqs {
		sc := scenarioOf(i)
		id := fmt.Sprintf("e2e-%04d", i)
		reqs[i] = store.EnqueueRequest{ID: id, Type: summarize.TaskType,
			Content: fmt.Sprintf("Task %d asks for a summary. Otters sleep holding hands. %s", i, sc.marker)}
		want[id] = sc
		wantAttempts += sc.attempts
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Registered after the fake's cleanup, so it runs first: workers stop
	// before the fake does, also when the test fails half-way.
	t.Cleanup(func() { cancel(); wg.Wait() })
	_, err = st.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)

	for i := range 2 {
		w, err := worker.New(st, mux, worker.Config{
			ID:           fmt.Sprintf("e2e-w%d", i),
			Concurrency:  25,
			Dependencies: map[string]string{summarize.TaskType: summarize.Dependency},
			Breaker:      breaker.Config{Timeout: 100 * time.Millisecond},
			Retry:        retry.Policy{Scale: 0.001}, // spec 001's schedules in ms
		})
		require.NoError(t, err)
		wg.Go(func() { require.NoError(t, w.Run(ctx)) })
	}
	sch, err := scheduler.New(st, scheduler.Config{Interval: 20 * time.Millisecond})
	require.NoError(t, err)
	wg.Go(func() { require.NoError(t, sch.Run(ctx)) })

	// Wait until every task is final (poll with a deadline).
	start := time.Now()
	deadline := time.Now().Add(2 * time.Minute)
	var qs *store.QueueStatus
	for {
		qs, err = st.QueueStatus(ctx)
		require.NoError(t, err)
		if qs.States[task.StateCompleted]+qs.States[task.StateDLQ] == n {
			break
		}
		require.True(t, time.Now().Before(deadline), "tasks not final in time: %+v", qs.States)
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()

	ids := make([]string, 0, n)
	for id := range want {
		ids = append(ids, id)
	}
	tasks, err := st.GetMany(context.Background(), ids)
	require.NoError(t, err)
	counted := map[task.State]int64{}
	for _, tk := range tasks {
		require.NotNil(t, tk)
		sc := want[tk.ID]
		counted[tk.State]++
		require.Equal(t, sc.state, tk.State, "task %s (%q): %s", tk.ID, sc.marker, tk.LastError)
		require.Equal(t, sc.retries, tk.RetryCount, "task %s (%q) retry_count: %+v", tk.ID, sc.marker, tk.ErrorHistory)
		require.Len(t, tk.ErrorHistory, sc.attempts-boolInt(sc.state == task.StateCompleted), "task %s error history", tk.ID)
		for _, e := range tk.ErrorHistory {
			require.NotContains(t, e.Message, key, "the API key never reaches a task")
		}
		switch sc.state {
		case task.StateDLQ:
			require.Equal(t, sc.errType, tk.ErrorType, "task %s (%q)", tk.ID, sc.marker)
		case task.StateCompleted:
			var res summarize.Result
			require.NoError(t, json.Unmarshal(tk.Result, &res))
			require.Equal(t, summarize.SummarizerLLM, res.Summarizer)
			num := strings.TrimPrefix(tk.ID, "e2e-")
			require.Equal(t, fmt.Sprintf("Fake summary: Task %d asks for a summary.", atoi(t, num)), res.Summary)
		}
	}
	require.Equal(t, wantAttempts, fake.Stats().Requests, "each attempt made exactly one call")

	// The store's O(1) status agrees with the tasks themselves.
	qs, err = st.QueueStatus(context.Background())
	require.NoError(t, err)
	for _, s := range task.States {
		require.Equal(t, counted[s], qs.States[s], "state %s", s)
	}
	require.Equal(t, counted[task.StateDLQ], qs.DLQ)
	require.Zero(t, qs.Primary)
	require.Zero(t, qs.Retry)
	require.Zero(t, qs.Scheduled)
	dlq, total, err := st.ListDLQ(context.Background(), store.ListOptions{Limit: 1000})
	require.NoError(t, err)
	require.Equal(t, counted[task.StateDLQ], total)
	require.Len(t, dlq, int(total))
	t.Logf("completed %d, dead-lettered %d, LLM calls %d, in %s", counted[task.StateCompleted], counted[task.StateDLQ], wantAttempts, time.Since(start))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func atoi(t *testing.T, s string) int {
	var n int
	_, err := fmt.Sscanf(s, "%d", &n)
	require.NoError(t, err)
	return n
}
