package summarize_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/engine/breaker"
	"github.com/taskflow/taskflow/internal/engine/maintenance"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/tasktypes/llm"
	"github.com/taskflow/taskflow/internal/tasktypes/llmfake"
	"github.com/taskflow/taskflow/internal/tasktypes/summarize"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
	"github.com/taskflow/taskflow/task"
)

// TestBreakerHoldsTasksDuringOutage: while the LLM answers 503 to
// everything, the openrouter breaker opens and summarize tasks wait instead
// of burning their retries (200 tasks × 4 attempts would be 800 calls);
// when the LLM recovers, a probe closes the breaker and the tasks complete.
// Waits spend no retry: the retries on the tasks add up to the failed calls.
func TestBreakerHoldsTasksDuringOutage(t *testing.T) {
	t.Parallel()
	const n = 200
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	fake := llmfake.New(llmfake.Options{APIKey: key, Ratio: []llmfake.Weighted{{Outcome: llmfake.Outcome{Kind: llmfake.Unavailable}, Weight: 1}}})
	base, err := fake.Start("127.0.0.1:0")
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		require.NoError(t, fake.Close())
		hc.CloseIdleConnections()
	})
	client, err := llm.New(llm.Config{APIKey: key, BaseURL: base, Timeout: 3 * time.Second}, hc)
	require.NoError(t, err)
	h, err := summarize.New(summarize.Config{LLM: client})
	require.NoError(t, err)
	mux := taskflow.NewMux()
	mux.Handle(summarize.TaskType, h)

	reqs := make([]store.EnqueueRequest, n)
	ids := make([]string, n)
	for i := range reqs {
		ids[i] = fmt.Sprintf("brk-%03d", i)
		reqs[i] = store.EnqueueRequest{ID: ids[i], Type: summarize.TaskType, Content: fmt.Sprintf("Outage task %d. It waits.", i)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	_, err = st.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)

	w, err := worker.New(st, mux, worker.Config{
		Concurrency:  10,
		Dependencies: map[string]string{summarize.TaskType: summarize.Dependency},
		Breaker:      breaker.Config{VolumeThreshold: 10, FailureThreshold: 0.5, Timeout: 100 * time.Millisecond},
		Retry:        retry.Policy{Scale: 0.001},
	})
	require.NoError(t, err)
	wg.Go(func() { require.NoError(t, w.Run(ctx)) })
	sch, err := maintenance.New(st, maintenance.Config{Interval: 20 * time.Millisecond})
	require.NoError(t, err)
	wg.Go(func() { require.NoError(t, sch.Run(ctx)) })

	// The breaker opens, and a few half-open probes fail.
	require.Eventually(t, func() bool { return w.Breakers().State(summarize.Dependency) == breaker.Open }, time.Minute, 10*time.Millisecond,
		"timed out waiting for the breaker to open")
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	require.NoError(t, fake.WaitRequests(wctx, fake.Stats().Requests+3))
	fake.SetRatio([]llmfake.Weighted{{Outcome: llmfake.Outcome{Kind: llmfake.OK}, Weight: 1}})

	var qs *store.QueueStatus
	testwait.Until(t, time.Minute, 10*time.Millisecond, func() bool {
		var err error
		qs, err = st.QueueStatus(ctx)
		require.NoError(t, err)
		return qs.States[task.StateCompleted]+qs.States[task.StateDLQ] == n
	}, func() string { return fmt.Sprintf("timed out waiting for every task to end: %v", qs.States) })
	cancel()
	wg.Wait()

	tasks, err := st.GetMany(context.Background(), ids)
	require.NoError(t, err)
	var completed, dlq, retries, failures int
	for _, tk := range tasks {
		retries += tk.RetryCount
		failures += len(tk.ErrorHistory)
		switch tk.State {
		case task.StateCompleted:
			completed++
		case task.StateDLQ:
			dlq++
			require.Equal(t, 3, tk.RetryCount)
			require.Equal(t, task.ErrTypeServiceUnavailable, tk.ErrorType)
		default:
			t.Fatalf("task %s ended %s", tk.ID, tk.State)
		}
	}
	stats := fake.Stats()
	unavailable := stats.ByKind[llmfake.Unavailable]
	require.Equal(t, unavailable, failures, "every failed call is in one task's error history, and nothing else is")
	require.Equal(t, unavailable-dlq, retries, "breaker waits spent no retry")
	require.Equal(t, completed, stats.ByKind[llmfake.OK])
	require.Less(t, unavailable, 100, "the breaker stopped the retry storm (without it: %d calls)", n*4)
	t.Logf("503s %d, completed %d, dead-lettered %d, released by the breaker %d", unavailable, completed, dlq, w.Stats().Released)
}
