package taskflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// installs tp as the global provider until the test or benchmark ends
func installTracing(tb testing.TB, opts ...sdktrace.TracerProviderOption) {
	tp := sdktrace.NewTracerProvider(opts...)
	tracing.Install(tp)
	tb.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		otel.SetTracerProvider(noop.NewTracerProvider())
	})
}

// TestEnqueueTrace: with a TracerProvider installed, the Go client's
// Enqueue is a client span whose trace the task carries: the submit, the
// wait in the queue and the worker's attempt (whose context the handler
// gets) are its spans.
func TestEnqueueTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	installTracing(t, sdktrace.WithSpanProcessor(rec))
	d := newDeployment(t)
	w, err := taskflow.NewWorker(d.cfg)
	require.NoError(t, err)
	inHandler := make(chan trace.SpanContext, 1)
	w.HandleFunc("traced", func(ctx context.Context, _ *task.Task) (json.RawMessage, error) {
		inHandler <- trace.SpanContextFromContext(ctx)
		return nil, nil
	})
	w.HandleFunc("traced.fail", func(ctx context.Context, _ *task.Task) (json.RawMessage, error) {
		return nil, task.Permanent(errors.New("boom"))
	})
	d.run(t, w)
	c := d.client(t)
	var tk *task.Task
	require.Eventually(t, func() bool {
		tk, err = c.Enqueue(d.ctx, "traced", nil)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the worker's types are never published")
	_, err = c.Wait(d.ctx, tk.ID)
	require.NoError(t, err)
	hs := <-inHandler

	byName := map[string]sdktrace.ReadOnlySpan{}
	require.Eventually(t, func() bool {
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID() == hs.TraceID() {
				byName[s.Name()] = s
			}
		}
		return len(byName) == 4
	}, 5*time.Second, 10*time.Millisecond)
	enq, sub, wait, proc := byName["enqueue traced"], byName["submit traced"], byName["queue wait"], byName["process traced"]
	require.NotNil(t, enq, "%v", byName)
	require.Equal(t, trace.SpanKindClient, enq.SpanKind())
	require.False(t, enq.Parent().IsValid(), "the enqueue is the trace's root")
	require.Equal(t, enq.SpanContext().SpanID(), sub.Parent().SpanID())
	require.Equal(t, sub.SpanContext().SpanID(), wait.Parent().SpanID())
	require.Equal(t, sub.SpanContext().SpanID(), proc.Parent().SpanID())
	require.Equal(t, proc.SpanContext().SpanID(), hs.SpanID(), "the handler runs in the attempt's span")
	require.Equal(t, trace.SpanKindConsumer, proc.SpanKind())
	require.Equal(t, codes.Unset, proc.Status().Code)

	// a failed attempt: an error span saying what became of the task
	ft, err := c.Enqueue(d.ctx, "traced.fail", nil, taskflow.MaxRetries(0))
	require.NoError(t, err)
	var failed sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		for _, s := range rec.Ended() {
			for _, a := range s.Attributes() {
				if s.Name() == "process traced.fail" && a.Key == tracing.AttrMessageID && a.Value.AsString() == ft.ID {
					failed = s
				}
			}
		}
		return failed != nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, codes.Error, failed.Status().Code)
	got := map[attribute.Key]string{}
	for _, a := range failed.Attributes() {
		got[a.Key] = a.Value.Emit()
	}
	require.Equal(t, "dlq", got[tracing.AttrOutcome], "%v", got)
	require.NotEmpty(t, got[tracing.AttrErrorType], "%v", got)
	require.Equal(t, "taskflow", got[tracing.AttrSystem])
	require.Equal(t, "1", got[tracing.AttrAttempt])
}

// BenchmarkEnqueueProcessTracing: the public API's enqueue and the
// worker's processing of no-op tasks (8 enqueuers, a worker of
// concurrency 16), per op one task from Enqueue to its completion, with
// tracing off (OTel's no-op global provider, as a process without
// OTEL_EXPORTER_OTLP_ENDPOINT runs) and on (tracing.Setup as the binary
// does it: every trace sampled, the batch span processor and the real
// OTLP/HTTP exporter posting protobuf to a local stand-in collector).
// cpu-µs/task is the process's CPU per task, the figure that holds on a
// shared machine where ns/op swings with the load.
func BenchmarkEnqueueProcessTracing(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "on" {
				// a stand-in collector: reads each POST and answers 200
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
				}))
				shutdown, err := tracing.Setup(context.Background(), tracing.Config{Endpoint: srv.URL}, "bench")
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					if err := shutdown(context.Background()); err != nil {
						b.Error(err)
					}
					otel.SetTracerProvider(noop.NewTracerProvider())
					srv.Close()
				}()
			}
			_, ns := testredis.Client(b)
			cfg := taskflow.Config{RedisURL: testredis.URL(), Namespace: ns, Concurrency: 16, ShutdownGrace: 2 * time.Second}
			ctx := context.Background()
			w, err := taskflow.NewWorker(cfg)
			if err != nil {
				b.Fatal(err)
			}
			w.HandleFunc("noop", func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil })
			wctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(wctx) }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					b.Error(err)
				}
			}()
			c, err := taskflow.NewClient(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			deadline := time.Now().Add(10 * time.Second)
			for { // the type is known once the worker published it
				if _, err = c.Enqueue(ctx, "noop", nil); err == nil {
					break
				} else if time.Now().After(deadline) {
					b.Fatal(err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			for w.Stats().Completed < 1 {
				time.Sleep(time.Millisecond)
			}
			base := w.Stats().Completed
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			var wg sync.WaitGroup
			per := (b.N + 7) / 8
			for g := 0; g < 8; g++ {
				n := min(per, b.N-g*per)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < n; i++ {
						if _, err := c.Enqueue(ctx, "noop", nil); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			for w.Stats().Completed-base < int64(b.N) {
				time.Sleep(100 * time.Microsecond) // benchmark: poll the counter
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
			// the benchmark process's CPU (client, worker, exporter; not
			// Redis's) per task
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/task")
		})
	}
}
