package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/breaker"
	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
	"github.com/taskflow/taskflow/task"
)

type bundle struct {
	st  *store.Store
	rdb redis.UniversalClient
	ctx context.Context
}

func setup(t *testing.T) *bundle {
	t.Helper()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	return &bundle{st: st, rdb: rdb, ctx: context.Background()}
}

// start runs a worker until the test ends (or stop is called).
func (b *bundle) start(t *testing.T, h Handler, cfg Config) (*Worker, func()) {
	t.Helper()
	w, err := New(b.st, h, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return w, stop
}

// waitState polls the task until it is in want or the deadline passes.
func (b *bundle) waitState(t *testing.T, id string, want task.State) *task.Task {
	t.Helper()
	var tk *task.Task
	testwait.Until(t, 15*time.Second, 5*time.Millisecond, func() bool {
		var err error
		tk, err = b.st.Get(b.ctx, id)
		require.NoError(t, err)
		return tk.State == want
	}, func() string { return fmt.Sprintf("task %s stayed %s, want %s", id, tk.State, want) })
	return tk
}

func TestProcessesTasks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mux := NewMux()
	mux.HandleFunc("echo", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		if _, ok := ctx.Deadline(); !ok {
			return nil, errors.New("no deadline")
		}
		return json.RawMessage(`"` + tk.Content + `"`), nil
	})
	var reqs []store.EnqueueRequest
	for i := 0; i < 300; i++ {
		reqs = append(reqs, store.EnqueueRequest{Type: "echo", Content: "hi"})
	}
	created, err := b.st.EnqueueBatch(b.ctx, reqs)
	require.NoError(t, err)
	w, _ := b.start(t, mux, Config{Concurrency: 8})
	for _, c := range created {
		got := b.waitState(t, c.ID, task.StateCompleted)
		require.JSONEq(t, `"hi"`, string(got.Result))
		require.Equal(t, w.ID(), got.Worker)
	}
	require.Eventually(t, func() bool { return w.Stats().Completed == 300 }, 5*time.Second, 5*time.Millisecond)
	// unknown type: permanent failure
	tk, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "nobody"})
	require.NoError(t, err)
	got := b.waitState(t, tk.ID, task.StateDLQ)
	require.Contains(t, got.LastError, "no handler registered")
	ws, err := b.st.Workers(b.ctx, 60_000)
	require.NoError(t, err)
	require.Len(t, ws, 1)
	require.Equal(t, "8", ws[0].Fields["concurrency"])
}

// TestIdleWorkerWakesOnEnqueue: an idle worker blocks on the wake-up list
// (no polling: its IdleWait is a minute) and starts a task enqueued while
// it waits within about a round trip. Each sample lets the worker go idle,
// then measures enqueue → handler start.
func TestIdleWorkerWakesOnEnqueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan time.Time, 1)
	mux := NewMux()
	mux.HandleFunc("x", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		started <- time.Now()
		return nil, nil
	})
	w, _ := b.start(t, mux, Config{Concurrency: 2, IdleWait: time.Minute})
	const samples = 5
	lat := make([]time.Duration, 0, samples)
	for range samples {
		// idle: its fetch found nothing and it waits for a wake-up
		require.Eventually(t, w.idle.Load, 5*time.Second, time.Millisecond)
		at := time.Now()
		_, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "x"})
		require.NoError(t, err)
		select {
		case s := <-started:
			lat = append(lat, s.Sub(at))
		case <-time.After(10 * time.Second):
			t.Fatal("the idle worker did not wake for a new task")
		}
	}
	slices.Sort(lat)
	t.Logf("enqueue → start on an idle worker: min %s, median %s, max %s", lat[0], lat[samples/2], lat[samples-1])
	// a poll would take up to IdleWait (a minute); a wake-up a round trip
	require.Less(t, lat[samples-1], time.Second, "slowest wake-up")
	require.Less(t, lat[samples/2], 100*time.Millisecond, "median wake-up")
}

// TestDeepQueueFetchedInBatches: on a deep queue one fetch script call
// starts up to FetchBatch tasks (each call writes one event stream entry,
// so the entries holding PENDING → ACTIVE events count the calls).
func TestDeepQueueFetchedInBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n, batch = 500, 64
	gate := make(chan struct{})
	mux := NewMux()
	mux.HandleFunc("x", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		<-gate
		return nil, nil
	})
	reqs := make([]store.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = store.EnqueueRequest{Type: "x"}
	}
	_, err := b.st.EnqueueBatch(b.ctx, reqs)
	require.NoError(t, err)
	fetches := func() []int { // PENDING → ACTIVE events per stream entry, in order
		evs, _, err := b.st.Events().Read(b.ctx, "0", 100000, 0)
		require.NoError(t, err)
		var out []int
		last := ""
		for _, e := range evs {
			if e.From != task.StatePending || e.To != task.StateActive {
				continue
			}
			entry := e.ID[:strings.LastIndexByte(e.ID, '.')]
			if entry != last {
				out = append(out, 0)
				last = entry
			}
			out[len(out)-1]++
		}
		return out
	}
	w, _ := b.start(t, mux, Config{Concurrency: batch, FetchBatch: batch})
	require.Eventually(t, func() bool {
		qs, err := b.st.QueueStatus(b.ctx)
		return err == nil && qs.States[task.StateActive] == batch
	}, 10*time.Second, time.Millisecond)
	require.Equal(t, []int{batch}, fetches(), "one call started the first %d tasks", batch)
	close(gate)
	require.Eventually(t, func() bool { return w.Stats().Completed == n }, 30*time.Second, 5*time.Millisecond)
	got := fetches()
	total := 0
	for _, k := range got {
		require.LessOrEqual(t, k, batch)
		total += k
	}
	require.Equal(t, n, total)
	require.Less(t, len(got), n/2, "fetched in batches: %v", got)
	t.Logf("%d tasks in %d fetch calls: %v", n, len(got), got)
}

func TestCancelActiveTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	running := make(chan struct{})
	mux := NewMux()
	mux.HandleFunc("block", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		close(running)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	b.start(t, mux, Config{Concurrency: 1, Lease: time.Minute})
	tk, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "block"})
	require.NoError(t, err)
	<-running
	out, err := b.st.Cancel(b.ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, store.CancelRequested, out)
	// the pub/sub message arrives long before the 20s heartbeat
	got := b.waitState(t, tk.ID, task.StateCancelled)
	require.Equal(t, task.StateCancelled, got.State)
}

func TestHandlerOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mux := NewMux()
	mux.HandleFunc("panic", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) { panic("kaboom") })
	mux.HandleFunc("perm", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		return nil, &retry.StatusError{Code: 404}
	})
	mux.HandleFunc("cancel", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		return nil, task.Cancel(errors.New("not wanted"))
	})
	mux.HandleFunc("later", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		return nil, task.RetryAfter(errors.New("busy"), time.Hour)
	})
	mux.HandleFunc("slow", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	mux.HandleFunc("bad", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		return nil, task.Permanent(errors.New("no such account"))
	})
	mux.HandleFunc("outbound", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		<-cctx.Done()
		return nil, fmt.Errorf("GET /quote: %w", cctx.Err())
	})
	b.start(t, mux, Config{Concurrency: 4})
	enq := func(typ string, timeout time.Duration) string {
		tk, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: typ, Timeout: timeout})
		require.NoError(t, err)
		return tk.ID
	}
	p := b.waitState(t, enq("panic", 0), task.StateFailed)
	require.Equal(t, task.ErrTypePanic, p.ErrorType)
	require.Contains(t, p.ErrorHistory[0].Message, "kaboom")
	require.Contains(t, p.ErrorHistory[0].Message, "worker.(*Worker).call", "the stack is recorded")

	n := b.waitState(t, enq("perm", 0), task.StateDLQ)
	require.Equal(t, task.ErrTypeNotFound, n.ErrorType)

	b.waitState(t, enq("cancel", 0), task.StateCancelled)

	l := b.waitState(t, enq("later", 0), task.StateFailed)
	require.WithinDuration(t, time.Now().Add(time.Hour), *l.RetryAfter, time.Minute)

	// the task's own timeout is named as such, not as a network timeout
	s := b.waitState(t, enq("slow", 50*time.Millisecond), task.StateFailed)
	require.Equal(t, task.ErrTypeTaskTimeout, s.ErrorType)
	require.Contains(t, s.ErrorHistory[0].Message, "the task's timeout of 50ms was exceeded")

	// a permanent failure without a type of its own
	d := b.waitState(t, enq("bad", 0), task.StateDLQ)
	require.Equal(t, task.ErrTypePermanent, d.ErrorType)

	// a handler's own deadline (an outbound call's) stays a network timeout
	o := b.waitState(t, enq("outbound", 0), task.StateFailed)
	require.Equal(t, task.ErrTypeNetworkTimeout, o.ErrorType)
}

func TestGracefulShutdownHandsBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var finished atomic.Int32
	started := make(chan string, 4)
	mux := NewMux()
	mux.HandleFunc("quick", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		started <- tk.ID
		time.Sleep(20 * time.Millisecond) // the handler's own work
		finished.Add(1)
		return nil, nil
	})
	mux.HandleFunc("stuck", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		started <- tk.ID
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	_, stop := b.start(t, mux, Config{Concurrency: 2, ShutdownGrace: 200 * time.Millisecond})
	q, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "quick"})
	require.NoError(t, err)
	s, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "stuck"})
	require.NoError(t, err)
	<-started
	<-started
	stop()
	require.Equal(t, task.StateCompleted, b.waitState(t, q.ID, task.StateCompleted).State, "finished within grace")
	got := b.waitState(t, s.ID, task.StatePending)
	require.Zero(t, got.RetryCount, "handed back without spending a retry")
	last := got.StateHistory[len(got.StateHistory)-1]
	require.Equal(t, "shutdown", last.Cause)
	qs, err := b.st.QueueStatus(b.ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), qs.Primary)
	ws, err := b.st.Workers(b.ctx, 60_000)
	require.NoError(t, err)
	require.Empty(t, ws, "a stopped worker removes its entry")
}

func TestLeaseLostStopsHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	causes := make(chan error, 1)
	mux := NewMux()
	mux.HandleFunc("block", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	w, _ := b.start(t, mux, Config{Concurrency: 1, Lease: 300 * time.Millisecond, HeartbeatInterval: 50 * time.Millisecond})
	tk, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "block"})
	require.NoError(t, err)
	b.waitState(t, tk.ID, task.StateActive)
	// someone else takes the task over: the fencing token changes
	require.NoError(t, b.rdb.HSet(b.ctx, "{"+b.st.Config().Namespace+"}:task:"+tk.ID, "lease", "someone-else").Err())
	select {
	case c := <-causes:
		require.ErrorIs(t, c, task.ErrLeaseLost)
	case <-time.After(10 * time.Second):
		t.Fatal("handler not stopped after its lease was lost")
	}
	require.Eventually(t, func() bool { return w.Stats().LeaseLost == 1 }, 5*time.Second, 5*time.Millisecond)
	got, err := b.st.Get(b.ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateActive, got.State, "the old holder wrote nothing")
}

func TestBreakerOpenReschedules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls atomic.Int32
	mux := NewMux()
	mux.HandleFunc("api", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		calls.Add(1)
		return nil, &retry.StatusError{Code: 503}
	})
	w, _ := b.start(t, mux, Config{Concurrency: 1, Dependencies: map[string]string{"api": "openrouter"},
		Breaker: breaker.Config{VolumeThreshold: 2, Timeout: time.Hour}, HeartbeatInterval: 50 * time.Millisecond, Lease: time.Second})
	var last string
	for i := 0; i < 3; i++ {
		tk, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "api"})
		require.NoError(t, err)
		last = tk.ID
	}
	var got *task.Task
	require.Eventually(t, func() bool {
		var err error
		got, err = b.st.Get(b.ctx, last)
		require.NoError(t, err)
		h := got.StateHistory
		return len(h) > 2 && strings.HasPrefix(h[len(h)-1].Cause, "breaker_open")
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, task.StatePending, got.State)
	require.Zero(t, got.RetryCount, "waiting for the breaker spends no retry")
	require.Equal(t, int32(2), calls.Load(), "the third task never ran")
	require.Equal(t, breaker.Open, w.Breakers().State("openrouter"))
	qs, err := b.st.QueueStatus(b.ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), qs.Scheduled, "two retries and one breaker wait")
	// the breaker state is visible in Redis
	require.Eventually(t, func() bool {
		ws, err := b.st.Workers(b.ctx, 60_000)
		return err == nil && len(ws) == 1 && strings.Contains(ws[0].Fields["breakers"], `"OPEN"`)
	}, 5*time.Second, 10*time.Millisecond)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := New(b.st, NewMux(), Config{ID: "a,b"})
	require.Error(t, err)
	_, err = New(b.st, NewMux(), Config{Lease: time.Second, HeartbeatInterval: 2 * time.Second})
	require.Error(t, err)
	_, err = New(b.st, NewMux(), Config{Concurrency: -1})
	require.Error(t, err)
	fc := clock.NewFake(time.Unix(0, 0))
	require.Equal(t, clock.Clock(fc), Config{Clock: fc}.WithDefaults().Breaker.Clock, "the breakers use the worker's clock")
	other := clock.NewFake(time.Unix(1, 0))
	require.Equal(t, clock.Clock(other), Config{Clock: fc, Breaker: breaker.Config{Clock: other}}.WithDefaults().Breaker.Clock)
}

func TestShutdownHandsBackPrefetched(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls atomic.Int32
	mux := NewMux()
	mux.HandleFunc("block", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		calls.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	var ids []string
	for i := 0; i < 6; i++ {
		tk, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "block"})
		require.NoError(t, err)
		ids = append(ids, tk.ID)
	}
	_, stop := b.start(t, mux, Config{Concurrency: 1, Prefetch: 5, ShutdownGrace: 50 * time.Millisecond})
	require.Eventually(t, func() bool {
		qs, err := b.st.QueueStatus(b.ctx)
		return err == nil && qs.States[task.StateActive] == 6 && calls.Load() == 1
	}, 10*time.Second, 5*time.Millisecond, "one running, five prefetched")
	stop()
	for _, id := range ids {
		got := b.waitState(t, id, task.StatePending)
		require.Zero(t, got.RetryCount)
	}
	require.Equal(t, int32(1), calls.Load(), "prefetched tasks never started")
	qs, err := b.st.QueueStatus(b.ctx)
	require.NoError(t, err)
	require.Equal(t, int64(6), qs.Primary)
}

// A handler that must wait for its dependency (summarize's fleet rate
// limit) hands the task back for the wait: no retry spent, no breaker
// failure, the cause in the state history, and the task runs when due.
func TestDependencyUnavailableWaitsWithoutRetry(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	fc := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	st, err := store.New(rdb, store.Config{Namespace: ns, Clock: fc})
	require.NoError(t, err)
	b := &bundle{st: st, rdb: rdb, ctx: context.Background()}
	var calls atomic.Int32
	mux := NewMux()
	mux.HandleFunc("llm", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			// the shape internal/tasktypes/summarize returns: wrapped in a transient error
			return nil, &task.TransientError{Type: task.ErrTypeRateLimit, After: 5 * time.Second,
				Err: &task.DependencyUnavailableError{Dependency: "openrouter", Wait: 5 * time.Second, Reason: "rate limit reached"}}
		}
		return json.RawMessage(`"done"`), nil
	})
	// one failure would open this breaker
	w, _ := b.start(t, mux, Config{Concurrency: 1, Clock: fc, Dependencies: map[string]string{"llm": "openrouter"},
		Breaker: breaker.Config{VolumeThreshold: 1, FailureThreshold: 0.5, Timeout: time.Hour, Clock: fc}})
	tk, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "llm"})
	require.NoError(t, err)

	var got *task.Task
	require.Eventually(t, func() bool {
		got, err = b.st.Get(b.ctx, tk.ID)
		require.NoError(t, err)
		return got.State == task.StatePending && len(got.StateHistory) >= 3
	}, 10*time.Second, 5*time.Millisecond)
	last := got.StateHistory[len(got.StateHistory)-1]
	require.Equal(t, task.StateActive, last.From)
	require.Equal(t, "dependency_unavailable openrouter: rate limit reached", last.Cause)
	require.Zero(t, got.RetryCount, "a dependency wait spends no retry")
	require.Empty(t, got.ErrorHistory, "a dependency wait is not a failure")
	require.Equal(t, breaker.Closed, w.Breakers().State("openrouter"))
	for _, sn := range w.Breakers().Snapshots() {
		require.Zero(t, sn.Failures, "nothing recorded on the breaker")
	}
	ids, _, err := b.st.QueueContents(b.ctx, store.QueueScheduled, store.ListOptions{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{tk.ID}, ids, "waiting in the scheduled set")

	// not due before the wait has passed
	fc.Advance(4 * time.Second)
	n, err := b.st.PromoteDue(b.ctx, 100)
	require.NoError(t, err)
	require.Zero(t, n)
	fc.Advance(time.Second)
	n, err = b.st.PromoteDue(b.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	done := b.waitState(t, tk.ID, task.StateCompleted)
	require.Zero(t, done.RetryCount)
	require.Equal(t, int32(2), calls.Load())
	require.Equal(t, int64(1), w.Stats().Released)
}

// TestHalfOpenProbeOutcomes: after the breaker's timeout (by the worker's
// injected clock, which the breakers use unless told otherwise) one task
// probes the dependency. A probe the dependency answered with a 400 closes
// the breaker (the dependency is up); a probe that was cancelled or had to
// wait for the dependency tells nothing, so it frees the probe slot and the
// next task probes at once instead of being held for another timeout.
func TestHalfOpenProbeOutcomes(t *testing.T) {
	t.Parallel()
	for _, probe := range []string{"perm400", "cancel", "unavailable"} {
		t.Run(probe, func(t *testing.T) {
			t.Parallel()
			rdb, ns := testredis.Client(t)
			fc := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			st, err := store.New(rdb, store.Config{Namespace: ns, Clock: fc})
			require.NoError(t, err)
			b := &bundle{st: st, rdb: rdb, ctx: context.Background()}
			mux := NewMux()
			mux.HandleFunc("api", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
				switch tk.Content {
				case "fail":
					return nil, &retry.StatusError{Code: 503}
				case "perm400":
					return nil, &retry.StatusError{Code: 400, Err: errors.New("bad request")}
				case "cancel":
					return nil, task.Cancel(errors.New("not wanted any more"))
				case "unavailable":
					return nil, &task.DependencyUnavailableError{Dependency: "openrouter", Wait: time.Hour, Reason: "quota"}
				}
				return json.RawMessage(`"ok"`), nil
			})
			w, _ := b.start(t, mux, Config{Concurrency: 1, Clock: fc, Dependencies: map[string]string{"api": "openrouter"},
				Breaker: breaker.Config{VolumeThreshold: 1, Timeout: time.Minute}})
			enq := func(content string) string {
				zero := 0
				tk, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "api", Content: content, MaxRetries: &zero})
				require.NoError(t, err)
				return tk.ID
			}
			lastCause := func(id string) string {
				got, err := b.st.Get(b.ctx, id)
				require.NoError(t, err)
				return got.StateHistory[len(got.StateHistory)-1].Cause
			}

			b.waitState(t, enq("fail"), task.StateDLQ)
			require.Equal(t, breaker.Open, w.Breakers().State("openrouter"), "one transient failure opens it")
			// the probe's task waits for the breaker (rescheduled by the fake clock)
			p := enq(probe)
			require.Eventually(t, func() bool { return strings.HasPrefix(lastCause(p), "breaker_open") }, 10*time.Second, 5*time.Millisecond)
			fc.Advance(time.Minute)
			n, err := b.st.PromoteDue(b.ctx, 10)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			switch probe {
			case "perm400":
				b.waitState(t, p, task.StateDLQ)
				require.Equal(t, breaker.Closed, w.Breakers().State("openrouter"), "the dependency answered")
			case "cancel":
				b.waitState(t, p, task.StateCancelled)
			case "unavailable":
				require.Eventually(t, func() bool { return strings.HasPrefix(lastCause(p), "dependency_unavailable") }, 10*time.Second, 5*time.Millisecond)
			}
			if probe != "perm400" {
				require.Equal(t, breaker.HalfOpen, w.Breakers().State("openrouter"), "the probe decided nothing")
			}
			// the next task runs now, without the clock moving: no second timeout
			next := b.waitState(t, enq("ok"), task.StateCompleted)
			for _, c := range next.StateHistory {
				require.NotContains(t, c.Cause, "breaker_open")
			}
			require.Equal(t, breaker.Closed, w.Breakers().State("openrouter"))
		})
	}
}
