package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// BenchmarkDrain: one worker (concurrency 50) drains b.N no-op tasks that
// were enqueued beforehand; per op = one task, end to end (fetch, handler,
// batched completion).
func BenchmarkDrain(b *testing.B) {
	rdb, ns := testredis.Client(b)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	reqs := make([]store.EnqueueRequest, 500)
	for i := range reqs {
		reqs[i] = store.EnqueueRequest{Type: "noop"}
	}
	for n := 0; n < b.N; n += 500 {
		if _, err := st.EnqueueBatch(ctx, reqs[:min(500, b.N-n)]); err != nil {
			b.Fatal(err)
		}
	}
	mux := NewMux()
	mux.HandleFunc("noop", func(ctx context.Context, t *task.Task) (json.RawMessage, error) { return nil, nil })
	w, err := New(st, mux, Config{Concurrency: 50})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	for w.Stats().Completed < int64(b.N) {
		time.Sleep(100 * time.Microsecond) // benchmark: poll the counter
	}
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}
