package outcome_test

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
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/task"
)

func TestEndToEndCompletion(t *testing.T) {
	t.Parallel()
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"echo.run": externaltest.Echo}})
	ctx := context.Background()
	// freeing the attempt's in-flight place is announced (a dispatcher
	// waiting for a place of the type asks again at once)
	freed := b.Redis.Subscribe(ctx, dispatch.FreedChannel(b.Namespace))
	defer freed.Close()
	_, err := freed.Receive(ctx) // subscribed
	require.NoError(t, err)
	tk := b.Enqueue(t, "echo.run", "s1", `{"word":"hi"}`, time.Minute)
	done := b.WaitState(t, tk.ID, task.StateCompleted)
	set, _ := dispatch.Place(b.Namespace, "echo.run", tk.ID, "")
	select {
	case m := <-freed.Channel():
		require.Equal(t, set+" 1", m.Payload)
	case <-time.After(10 * time.Second):
		t.Fatal("the freed place was not announced")
	}
	require.JSONEq(t, `{"file_url":"","summary":"echo hi","metadata":{"attempt":1}}`, string(done.Result))
	ns := b.WaitNotes(t, "s1", 1) // the notification is the last effect

	// The result cache (task:{id}:result).
	raw, err := b.Redis.Get(ctx, b.Results.Cache(tk.ID)).Result()
	require.NoError(t, err)
	var cached struct {
		Result   json.RawMessage `json:"result"`
		CachedAt string          `json:"cached_at"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &cached))
	require.JSONEq(t, string(done.Result), string(cached.Result))
	ttl, err := b.Redis.TTL(ctx, b.Results.Cache(tk.ID)).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 23*time.Hour)

	require.Equal(t, notify.KindCompleted, ns[0].Type)
	require.Equal(t, tk.ID, ns[0].TaskID)
	require.Equal(t, "retrieve_result", ns[0].Action)

	// Progress was recorded; the task is archived; events are acknowledged.
	pr, err := b.Redis.HGetAll(ctx, b.Results.Progress(tk.ID)).Result()
	require.NoError(t, err)
	require.Equal(t, "50", pr["percent"])
	require.Eventually(t, func() bool {
		a, err := b.Archive.Get(ctx, tk.ID)
		return err == nil && a.State == task.StateCompleted
	}, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		_, pending, err := protocol.Lag(ctx, b.Redis, b.Streams.Completed(), protocol.AgentGroup)
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
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"flaky.run": flaky}})
	tk := b.Enqueue(t, "flaky.run", "s1", `{}`, time.Minute)
	done := b.WaitState(t, tk.ID, task.StateCompleted)
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
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"bad.run": bad}})
	ctx := context.Background()
	tk := b.Enqueue(t, "bad.run", "s1", `{}`, time.Minute)
	dl := b.WaitState(t, tk.ID, task.StateDLQ)
	require.Equal(t, 0, dl.RetryCount, "a permanent failure is not retried")
	require.Equal(t, "INSUFFICIENT_DATA", dl.ErrorType)
	ns := b.WaitNotes(t, "s1", 1)
	require.Equal(t, notify.KindFailed, ns[0].Type)
	require.Contains(t, ns[0].Message, "Not enough data")

	xs, err := b.Redis.XRange(ctx, b.Streams.DLQ(), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, xs, 1)
	e, err := protocol.Decode(xs[0].ID, xs[0].Values)
	require.NoError(t, err)
	d, err := protocol.As[protocol.DLQData](e)
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
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"down.run": down}, MaxRetries: 3})
	tk := b.Enqueue(t, "down.run", "s1", `{}`, time.Minute)
	dl := b.WaitState(t, tk.ID, task.StateDLQ)
	require.EqualValues(t, 4, calls.Load(), "1 attempt + 3 retries")
	require.Equal(t, 3, dl.RetryCount)
	b.WaitNotes(t, "s1", 1) // the DLQ effects come after the transition
	xs, err := b.Redis.XRange(context.Background(), b.Streams.DLQ(), "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, xs, 1)
	e, _ := protocol.Decode(xs[0].ID, xs[0].Values)
	d, err := protocol.As[protocol.DLQData](e)
	require.NoError(t, err)
	require.Equal(t, "retries_exhausted", d.Reason)
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
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"dup.run": dup}, Outcome: outcome.Config{
		Observe: func(kind string, _ *task.Task, _ time.Duration) {
			if kind == "stale" {
				stale.Add(1)
			}
		}}})
	ctx := context.Background()
	tk := b.Enqueue(t, "dup.run", "s1", `{}`, time.Minute)
	b.WaitState(t, tk.ID, task.StateCompleted)
	<-gate
	// Republish the completion as a second delivery would.
	tok := b.LastToken(t, tk.ID)
	pub := protocol.NewPublisher(b.Redis, 0, nil)
	for i := 0; i < 2; i++ {
		e, err := protocol.New(protocol.TypeCompleted, time.Now(), protocol.CompletedData{TaskID: tk.ID, Status: "success",
			Result: json.RawMessage(`{"n":2}`), CompletedBy: "test-service", Token: tok})
		require.NoError(t, err)
		_, err = pub.Publish(ctx, b.Streams.Completed(), e)
		require.NoError(t, err)
	}
	// (one snapshot of lag and pending: two calls could see pending 0
	// before the read and lag 0 after it, while both are being applied)
	b.Drained(t, b.Streams.Completed())
	got, err := b.Store.Get(ctx, tk.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1}`, string(got.Result), "the first completion stands")
	ns, err := b.Notifier.List(ctx, "s1", "", 100)
	require.NoError(t, err)
	require.Len(t, ns, 1, "one notification")
	require.EqualValues(t, 2, stale.Load(), "each ignored duplicate is counted as stale")
}

// TestOrchestratorKilledMidEvent: a consumer that applied a completion
// and died before acknowledging it loses nothing: another consumer claims
// the event, finishes its effects, and the task is notified once.
func TestOrchestratorKilledMidEvent(t *testing.T) {
	t.Parallel()
	b := externaltest.Setup(t, externaltest.Options{NoOrchestrator: true, Handlers: map[string]extsvc.HandlerFunc{"echo.run": externaltest.Echo}})
	ctx := context.Background()
	dying, err := outcome.New(b.Store, b.Notifier, b.Archive, outcome.Config{Consumer: "agent-dying", Block: 50 * time.Millisecond})
	require.NoError(t, err)
	crashed := make(chan struct{})
	outcome.CrashAfterApply(dying, func(m protocol.Message) bool { close(crashed); return true })
	b.Run(t, "dying", dying.Run)

	tk := b.Enqueue(t, "echo.run", "s1", `{"word":"x"}`, time.Minute)
	<-crashed
	b.WaitState(t, tk.ID, task.StateCompleted) // the transition happened
	ns, err := b.Notifier.List(ctx, "s1", "", 10)
	require.NoError(t, err)
	require.Empty(t, ns, "died before notifying")
	_, pending, err := protocol.Lag(ctx, b.Redis, b.Streams.Completed(), protocol.AgentGroup)
	require.NoError(t, err)
	require.EqualValues(t, 1, pending, "the event is still pending")

	b.StartConsumer(t, outcome.Config{Consumer: "agent-2", ClaimIdle: 200 * time.Millisecond})
	ns = b.WaitNotes(t, "s1", 1)
	require.Equal(t, notify.KindCompleted, ns[0].Type)
	_, err = b.Redis.Get(ctx, b.Results.Cache(tk.ID)).Result()
	require.NoError(t, err, "the result is cached by the claimer")
	require.Eventually(t, func() bool {
		_, pending, err := protocol.Lag(ctx, b.Redis, b.Streams.Completed(), protocol.AgentGroup)
		return err == nil && pending == 0
	}, 10*time.Second, 10*time.Millisecond)
	ns, err = b.Notifier.List(ctx, "s1", "", 10)
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
	b := externaltest.Setup(t, externaltest.Options{NoService: true, Handlers: map[string]extsvc.HandlerFunc{"hang.run": nil}})
	_, stopFirst := b.StartService(t, extsvc.Config{Name: "svc", Consumer: "svc-1", Grace: time.Millisecond,
		HeartbeatInterval: 20 * time.Millisecond, ClaimIdle: 300 * time.Millisecond}, map[string]extsvc.HandlerFunc{"hang.run": hang})
	tk := b.Enqueue(t, "hang.run", "s1", `{}`, time.Minute)
	<-started
	stopFirst() // the first worker goes away without reporting

	b.StartService(t, extsvc.Config{Name: "svc", Consumer: "svc-2", HeartbeatInterval: 20 * time.Millisecond,
		ClaimIdle: 300 * time.Millisecond}, map[string]extsvc.HandlerFunc{"hang.run": externaltest.Echo})
	done := b.WaitState(t, tk.ID, task.StateCompleted)
	require.Contains(t, string(done.Result), "echo")
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
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"slow.run": slow}, SkipArchive: true})
	ctx := context.Background()
	tk := b.Enqueue(t, "slow.run", "s1", `{}`, time.Minute)
	<-running
	pub := protocol.NewPublisher(b.Redis, 0, nil)
	for _, typ := range []protocol.Type{protocol.TypeCompleted, protocol.TypeFailed} {
		var data any = protocol.CompletedData{TaskID: tk.ID, Status: "success", Result: json.RawMessage(`{"by":"stale"}`),
			CompletedBy: "old", Token: "w:stale-attempt:1"}
		if typ == protocol.TypeFailed {
			data = protocol.FailedData{TaskID: tk.ID, Status: "failed", Error: protocol.ErrorInfo{Code: "BAD", Message: "stale"},
				FailedBy: "old", Token: "w:stale-attempt:1"}
		}
		e, err := protocol.New(typ, time.Now(), data)
		require.NoError(t, err)
		key := b.Streams.Completed()
		if typ == protocol.TypeFailed {
			key = b.Streams.Failed()
		}
		_, err = pub.Publish(ctx, key, e)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			lag, pending, err := protocol.Lag(ctx, b.Redis, key, protocol.AgentGroup)
			return err == nil && pending == 0 && lag == 0
		}, 10*time.Second, 10*time.Millisecond, "the stale %s is acknowledged", typ)
	}
	got, err := b.Store.Get(ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateActive, got.State, "the stale outcomes changed nothing")
	require.Zero(t, got.RetryCount)
	ns, err := b.Notifier.List(ctx, "s1", "", 10)
	require.NoError(t, err)
	require.Empty(t, ns)

	close(release)
	done := b.WaitState(t, tk.ID, task.StateCompleted)
	require.JSONEq(t, `{"by":"current attempt"}`, string(done.Result))
}
