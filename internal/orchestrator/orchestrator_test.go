package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/notify"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/stream"
	"github.com/taskflow/taskflow/internal/task"
)

func echo(ctx context.Context, t *extsvc.Task) (json.RawMessage, error) {
	var p struct {
		Word string `json:"word"`
	}
	if err := t.UnmarshalParams(&p); err != nil {
		return nil, err
	}
	if err := t.Progress(ctx, 50, "halfway", 2*time.Second); err != nil {
		return nil, err
	}
	return extsvc.Result("", "echo "+p.Word, map[string]any{"attempt": t.Attempt}), nil
}

func TestEndToEndCompletion(t *testing.T) {
	t.Parallel()
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"echo.run": echo}})
	ctx := context.Background()
	tk := b.enqueue(t, "echo.run", "s1", `{"word":"hi"}`, time.Minute)
	done := b.waitState(t, tk.ID, task.StateCompleted)
	require.JSONEq(t, `{"file_url":"","summary":"echo hi","metadata":{"attempt":1}}`, string(done.Result))
	ns := b.waitNotes(t, "s1", 1) // the notification is the last effect

	// The result cache (task:{id}:result).
	raw, err := b.rdb.Get(ctx, b.rk.Cache(tk.ID)).Result()
	require.NoError(t, err)
	var cached struct {
		Result   json.RawMessage `json:"result"`
		CachedAt string          `json:"cached_at"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &cached))
	require.JSONEq(t, string(done.Result), string(cached.Result))
	ttl, err := b.rdb.TTL(ctx, b.rk.Cache(tk.ID)).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 23*time.Hour)

	require.Equal(t, notify.KindCompleted, ns[0].Type)
	require.Equal(t, tk.ID, ns[0].TaskID)
	require.Equal(t, "retrieve_result", ns[0].Action)

	// Progress was recorded; the task is archived; events are acknowledged.
	pr, err := b.rdb.HGetAll(ctx, b.rk.Progress(tk.ID)).Result()
	require.NoError(t, err)
	require.Equal(t, "50", pr["percent"])
	require.Eventually(t, func() bool {
		a, err := b.arc.Get(ctx, tk.ID)
		return err == nil && a.State == task.StateCompleted
	}, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		_, pending, err := stream.Lag(ctx, b.rdb, b.sk.Completed(), stream.AgentGroup)
		return err == nil && pending == 0
	}, 10*time.Second, 10*time.Millisecond)
}

func TestTransientFailuresRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	flaky := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		if calls.Add(1) <= 2 {
			return nil, extsvc.Fail("SERVICE_UNAVAILABLE", "try later", true)
		}
		return json.RawMessage(fmt.Sprintf(`{"attempt":%d}`, tk.Attempt)), nil
	}
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"flaky.run": flaky}})
	tk := b.enqueue(t, "flaky.run", "s1", `{}`, time.Minute)
	done := b.waitState(t, tk.ID, task.StateCompleted)
	require.JSONEq(t, `{"attempt":3}`, string(done.Result))
	require.Equal(t, 2, done.RetryCount)
	require.Len(t, done.ErrorHistory, 2)
	require.Equal(t, "SERVICE_UNAVAILABLE", done.ErrorHistory[0].ErrorType)
}

func TestPermanentFailureGoesToDLQ(t *testing.T) {
	t.Parallel()
	bad := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		return nil, extsvc.Fail("INSUFFICIENT_DATA", "Not enough data for Q4 2024", false)
	}
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"bad.run": bad}})
	ctx := context.Background()
	tk := b.enqueue(t, "bad.run", "s1", `{}`, time.Minute)
	dl := b.waitState(t, tk.ID, task.StateDLQ)
	require.Equal(t, 0, dl.RetryCount, "a permanent failure is not retried")
	require.Equal(t, "INSUFFICIENT_DATA", dl.ErrorType)
	ns := b.waitNotes(t, "s1", 1)
	require.Equal(t, notify.KindFailed, ns[0].Type)
	require.Contains(t, ns[0].Message, "Not enough data")

	xs, err := b.rdb.XRange(ctx, b.sk.DLQ(), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, xs, 1)
	e, err := stream.Decode(xs[0].ID, xs[0].Values)
	require.NoError(t, err)
	d, err := stream.As[stream.DLQData](e)
	require.NoError(t, err)
	require.Equal(t, tk.ID, d.TaskID)
	require.Equal(t, "permanent", d.Reason)
}

func TestRetriesExhaustedGoToDLQ(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	down := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		calls.Add(1)
		return nil, extsvc.Fail("RATE_LIMITED", "slow down", true)
	}
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"down.run": down}, maxRetries: 3})
	tk := b.enqueue(t, "down.run", "s1", `{}`, time.Minute)
	dl := b.waitState(t, tk.ID, task.StateDLQ)
	require.EqualValues(t, 4, calls.Load(), "1 attempt + 3 retries")
	require.Equal(t, 3, dl.RetryCount)
	b.waitNotes(t, "s1", 1) // the DLQ effects come after the transition
	xs, err := b.rdb.XRange(context.Background(), b.sk.DLQ(), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, xs, 1)
	e, _ := stream.Decode(xs[0].ID, xs[0].Values)
	d, err := stream.As[stream.DLQData](e)
	require.NoError(t, err)
	require.Equal(t, "retries_exhausted", d.Reason)
}

func TestCancelRunningTask(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	sawCancel := make(chan struct{}, 1)
	blocker := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		sawCancel <- struct{}{}
		return nil, ctx.Err()
	}
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"block.run": blocker}})
	tk := b.enqueue(t, "block.run", "s1", `{}`, time.Minute)
	<-started
	out, err := b.st.Cancel(context.Background(), tk.ID)
	require.NoError(t, err)
	require.Equal(t, "requested", string(out))
	b.waitState(t, tk.ID, task.StateCancelled)
	select {
	case <-sawCancel:
	case <-time.After(10 * time.Second):
		t.Fatal("the service's handler was never cancelled")
	}
}

func TestTimeoutThenLateCompletion(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`{"late":true}`), nil
	}
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"slow.run": slow}})
	tk := b.enqueue(t, "slow.run", "s1", `{}`, time.Second)
	b.waitState(t, tk.ID, task.StateTimeout)
	ns := b.waitNotes(t, "s1", 1)
	require.Equal(t, notify.KindTimeout, ns[0].Type)
	require.Contains(t, ns[0].Message, "still running")
	xs, err := b.rdb.XRange(context.Background(), b.sk.Timeout(), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, xs, 1)

	close(release)
	done := b.waitState(t, tk.ID, task.StateCompleted)
	require.JSONEq(t, `{"late":true}`, string(done.Result))
	ns = b.waitNotes(t, "s1", 2)
	require.Equal(t, notify.KindCompleted, ns[1].Type)
}

// TestDuplicateDeliveryAppliedOnce: the same completion delivered twice
// (a service that published, crashed before acking, and redid the task)
// completes the task and notifies once.
func TestDuplicateDeliveryAppliedOnce(t *testing.T) {
	t.Parallel()
	var once sync.Once
	gate := make(chan *extsvc.Task, 1)
	dup := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		once.Do(func() { gate <- tk })
		return json.RawMessage(`{"n":1}`), nil
	}
	var stale atomic.Int32
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"dup.run": dup}, orchCfg: Config{
		Observe: func(kind string, _ *task.Task, _ time.Duration) {
			if kind == "stale" {
				stale.Add(1)
			}
		}}})
	ctx := context.Background()
	tk := b.enqueue(t, "dup.run", "s1", `{}`, time.Minute)
	b.waitState(t, tk.ID, task.StateCompleted)
	<-gate
	// Republish the completion as a second delivery would.
	tok, err := b.rdb.Get(ctx, b.k.dispatch(tk.ID)).Result()
	require.NoError(t, err)
	pub := stream.NewPublisher(b.rdb, 0, nil)
	for i := 0; i < 2; i++ {
		e, err := stream.New(stream.TypeCompleted, time.Now(), stream.CompletedData{TaskID: tk.ID, Status: "success",
			Result: json.RawMessage(`{"n":2}`), CompletedBy: "test-service", Token: tok})
		require.NoError(t, err)
		_, err = pub.Publish(ctx, b.sk.Completed(), e)
		require.NoError(t, err)
	}
	// (one snapshot of lag and pending: two calls could see pending 0
	// before the read and lag 0 after it, while both are being applied)
	b.drained(t, b.sk.Completed())
	got, err := b.st.Get(ctx, tk.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1}`, string(got.Result), "the first completion stands")
	ns, err := b.note.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1, "one notification")
	require.EqualValues(t, 2, stale.Load(), "each ignored duplicate is counted as stale")
}

// TestOrchestratorKilledMidEvent: a consumer that applied a completion
// and died before acknowledging it loses nothing: another consumer claims
// the event, finishes its effects, and the task is notified once.
func TestOrchestratorKilledMidEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, options{noOrch: true, handlers: map[string]extsvc.HandlerFunc{"echo.run": echo}})
	ctx := context.Background()
	dying, err := New(b.st, b.note, b.arc, Config{Consumer: "agent-dying", Block: 50 * time.Millisecond})
	require.NoError(t, err)
	crashed := make(chan struct{})
	dying.crashAfterApply = func(m stream.Message) bool { close(crashed); return true }
	b.run(t, "dying", dying.Run, nil)

	tk := b.enqueue(t, "echo.run", "s1", `{"word":"x"}`, time.Minute)
	<-crashed
	b.waitState(t, tk.ID, task.StateCompleted) // the transition happened
	ns, err := b.note.List(ctx, "s1", "", 10)
	require.NoError(t, err)
	require.Empty(t, ns, "died before notifying")
	_, pending, err := stream.Lag(ctx, b.rdb, b.sk.Completed(), stream.AgentGroup)
	require.NoError(t, err)
	require.EqualValues(t, 1, pending, "the event is still pending")

	b.startOrchestrator(t, Config{Consumer: "agent-2", ClaimIdle: 200 * time.Millisecond})
	ns = b.waitNotes(t, "s1", 1)
	require.Equal(t, notify.KindCompleted, ns[0].Type)
	_, err = b.rdb.Get(ctx, b.rk.Cache(tk.ID)).Result()
	require.NoError(t, err, "the result is cached by the claimer")
	require.Eventually(t, func() bool {
		_, pending, err := stream.Lag(ctx, b.rdb, b.sk.Completed(), stream.AgentGroup)
		return err == nil && pending == 0
	}, 10*time.Second, 10*time.Millisecond)
	ns, err = b.note.List(ctx, "s1", "", 10)
	require.NoError(t, err)
	require.Len(t, ns, 1)
}

// TestServiceWorkerDiesMidTask: a service worker that stops holding a task
// (its process gone) leaves the task to another worker of the service,
// which completes it; nothing is lost.
func TestServiceWorkerDiesMidTask(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	hang := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	b := setup(t, options{noService: true, handlers: map[string]extsvc.HandlerFunc{"hang.run": nil}})
	first := b.startService(t, extsvc.Config{Name: "svc", Consumer: "svc-1", Grace: time.Millisecond,
		HeartbeatInterval: 20 * time.Millisecond, ClaimIdle: 300 * time.Millisecond}, map[string]extsvc.HandlerFunc{"hang.run": hang})
	_ = first
	tk := b.enqueue(t, "hang.run", "s1", `{}`, time.Minute)
	<-started
	b.stops[len(b.stops)-1]() // the first worker goes away without reporting

	b.startService(t, extsvc.Config{Name: "svc", Consumer: "svc-2", HeartbeatInterval: 20 * time.Millisecond,
		ClaimIdle: 300 * time.Millisecond}, map[string]extsvc.HandlerFunc{"hang.run": echo})
	done := b.waitState(t, tk.ID, task.StateCompleted)
	require.Contains(t, string(done.Result), "echo")
}

// TestScheduledExternalTask: a task with run_at waits in the core's
// scheduled set and is dispatched when due.
func TestScheduledExternalTask(t *testing.T) {
	t.Parallel()
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"echo.run": echo}})
	ctx := context.Background()
	runAt := time.Now().Add(400 * time.Millisecond)
	tk, err := b.st.Enqueue(ctx, store.EnqueueRequest{Type: "echo.run", SessionID: "s1", Params: json.RawMessage(`{"word":"later"}`), RunAt: runAt})
	require.NoError(t, err)
	require.Equal(t, task.StatePending, tk.State)
	done := b.waitState(t, tk.ID, task.StateCompleted)
	require.False(t, done.CompletedAt.Before(runAt), "ran before its time: %s < %s", done.CompletedAt, runAt)
}

// TestPrioritiesOnTheExternalPath: high-priority external tasks are
// dispatched ahead of low ones submitted earlier (the core's weighted
// fetch), and low ones are not starved: some are dispatched while high
// ones still wait (the order is task.create's, in the stream).
func TestPrioritiesOnTheExternalPath(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, *extsvc.Task) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"prio.run": ok}, workerConc: 1, skipArchive: true})
	ctx := context.Background()
	const nLow, nHigh = 15, 60
	var reqs []store.EnqueueRequest
	for i := 0; i < nLow; i++ {
		reqs = append(reqs, store.EnqueueRequest{Type: "prio.run", Priority: task.PriorityLow})
	}
	for i := 0; i < nHigh; i++ {
		reqs = append(reqs, store.EnqueueRequest{Type: "prio.run", Priority: task.PriorityHigh})
	}
	ts, err := b.st.EnqueueBatch(ctx, reqs) // one atomic call: all queued before the first fetch
	require.NoError(t, err)
	for _, tk := range ts {
		b.waitState(t, tk.ID, task.StateCompleted)
	}
	xs, err := b.rdb.XRange(ctx, b.sk.Create(), "-", "+").Result()
	require.NoError(t, err)
	var order []string
	for _, x := range xs {
		e, err := stream.Decode(x.ID, x.Values)
		require.NoError(t, err)
		d, err := e.Unmarshal()
		require.NoError(t, err)
		order = append(order, d.(*stream.CreateData).Priority)
	}
	require.Len(t, order, nLow+nHigh)
	highFirst30, firstLow, lastHigh := 0, -1, -1
	for i, p := range order {
		switch {
		case p == "high":
			lastHigh = i
			if i < 30 {
				highFirst30++
			}
		case firstLow < 0:
			firstLow = i
		}
	}
	// Weights 6:1 while both queues hold tasks: ~26 of the first 30 are
	// high (FIFO would give 15 low first); fewer than 18 is ~1e-5 likely.
	require.GreaterOrEqual(t, highFirst30, 18, "high dispatched ahead of low: %v", order)
	// Some low task ran while high ones waited (P(none in 60 picks) ≈ 1e-4).
	require.Less(t, firstLow, lastHigh, "a low task ran while high ones waited: %v", order)
}

// TestStaleOutcomeIgnored: an outcome carrying another attempt's token (an
// older attempt's, or a forged one) is acknowledged without effect: the
// running attempt is untouched and its own outcome completes the task.
func TestStaleOutcomeIgnored(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	running := make(chan struct{}, 1)
	slow := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		running <- struct{}{}
		<-release
		return json.RawMessage(`{"by":"current attempt"}`), nil
	}
	b := setup(t, options{handlers: map[string]extsvc.HandlerFunc{"slow.run": slow}, skipArchive: true})
	ctx := context.Background()
	tk := b.enqueue(t, "slow.run", "s1", `{}`, time.Minute)
	<-running
	pub := stream.NewPublisher(b.rdb, 0, nil)
	for _, typ := range []stream.Type{stream.TypeCompleted, stream.TypeFailed} {
		var data any = stream.CompletedData{TaskID: tk.ID, Status: "success", Result: json.RawMessage(`{"by":"stale"}`),
			CompletedBy: "old", Token: "w:stale-attempt:1"}
		if typ == stream.TypeFailed {
			data = stream.FailedData{TaskID: tk.ID, Status: "failed", Error: stream.ErrorInfo{Code: "BAD", Message: "stale"},
				FailedBy: "old", Token: "w:stale-attempt:1"}
		}
		e, err := stream.New(typ, time.Now(), data)
		require.NoError(t, err)
		key := b.sk.Completed()
		if typ == stream.TypeFailed {
			key = b.sk.Failed()
		}
		_, err = pub.Publish(ctx, key, e)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			lag, pending, err := stream.Lag(ctx, b.rdb, key, stream.AgentGroup)
			return err == nil && pending == 0 && lag == 0
		}, 10*time.Second, 10*time.Millisecond, "the stale %s is acknowledged", typ)
	}
	got, err := b.st.Get(ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateActive, got.State, "the stale outcomes changed nothing")
	require.Zero(t, got.RetryCount)
	ns, err := b.note.List(ctx, "s1", "", 10)
	require.NoError(t, err)
	require.Empty(t, ns)

	close(release)
	done := b.waitState(t, tk.ID, task.StateCompleted)
	require.JSONEq(t, `{"by":"current attempt"}`, string(done.Result))
}
