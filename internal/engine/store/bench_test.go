package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// Benchmarks run against TASKFLOW_TEST_REDIS_URL (a server of your own
// gives clean figures: other clients share the Redis thread).

func benchStore(b *testing.B) *Store {
	rdb, ns := testredis.Client(b)
	s, err := New(rdb, Config{Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkEnqueue(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	cpu0 := redisCPU(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Enqueue(ctx, EnqueueRequest{Type: "noop"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric((redisCPU(b, s)-cpu0)/float64(b.N), "redis-µs/task")
}

func BenchmarkEnqueueBatch500(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	reqs := make([]EnqueueRequest, 500)
	for i := range reqs {
		reqs[i] = EnqueueRequest{Type: "noop"}
	}
	cpu0 := redisCPU(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.EnqueueBatch(ctx, reqs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*500)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric((redisCPU(b, s)-cpu0)/float64(b.N*500), "redis-µs/task")
}

// BenchmarkLifecycle64 is the worker's hot path without the worker: fetch
// 64 tasks in one call, complete them in one call (per op: 64 tasks).
func BenchmarkLifecycle64(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	enqueueForBench(b, s, b.N*64)
	cs := make([]Completion, 0, 64)
	cpu0 := redisCPU(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := s.Fetch(ctx, FetchRequest{N: 64, WorkerID: "bench", TokenPrefix: fmt.Sprint(i), Lease: time.Minute})
		if err != nil || len(got) != 64 {
			b.Fatalf("fetch: %d tasks, %v", len(got), err)
		}
		cs = cs[:0]
		for _, t := range got {
			cs = append(cs, Completion{ID: t.ID, Token: t.Lease})
		}
		if _, err := s.CompleteBatch(ctx, cs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric((redisCPU(b, s)-cpu0)/float64(b.N*64), "redis-µs/task")
}

// enqueueForBench creates at least n noop tasks through the engine's
// enqueue, in batches of 500.
func enqueueForBench(b *testing.B, s *Store, n int) {
	reqs := make([]EnqueueRequest, 500)
	for i := range reqs {
		reqs[i] = EnqueueRequest{Type: "noop"}
	}
	for done := 0; done < n; done += 500 {
		if _, err := s.EnqueueBatch(context.Background(), reqs); err != nil {
			b.Fatal(err)
		}
	}
}

// redisCPU is the Redis main thread's CPU time in µs (every client of the
// server counts: use a server of your own for this figure).
func redisCPU(b *testing.B, s *Store) float64 {
	info, err := s.rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user_main_thread" || k == "used_cpu_sys_main_thread") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total * 1e6
}
