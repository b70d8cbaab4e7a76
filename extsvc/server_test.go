package extsvc

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	rdb  redis.UniversalClient
	ns   string
	keys protocol.Keys
	pub  *protocol.Publisher
}

func setup(t *testing.T) *bundle {
	t.Helper()
	rdb, ns := testredis.Client(t)
	return &bundle{rdb: rdb, ns: ns, keys: protocol.NewKeys(keyspace.MustParse(ns)), pub: protocol.NewPublisher(rdb, 0, nil)}
}

func (b *bundle) create(t *testing.T, id, typ, params string) {
	t.Helper()
	e, err := protocol.New(protocol.TypeCreate, time.Now(), protocol.CreateData{TaskID: id, TaskType: typ,
		Params: json.RawMessage(params), SessionID: "s1", Timeout: 60, Priority: "normal", CreatedBy: "agent", Attempt: 1, Token: "tok-" + id})
	require.NoError(t, err)
	_, err = b.pub.Publish(context.Background(), b.keys.Create(), e)
	require.NoError(t, err)
}

// waitOutcome polls the completed and failed streams (deadline 10 s) for
// the outcome of task id.
func (b *bundle) waitOutcome(t *testing.T, id string) protocol.Event {
	t.Helper()
	var out protocol.Event
	others := 0 // outcomes of other tasks at the last look
	testwait.Until(t, 10*time.Second, 10*time.Millisecond, func() bool {
		others = 0
		for _, s := range []string{b.keys.Completed(), b.keys.Failed()} {
			xs, err := b.rdb.XRange(context.Background(), s, "-", "+").Result()
			require.NoError(t, err)
			for _, x := range xs {
				e, err := protocol.Decode(x.ID, x.Values)
				require.NoError(t, err)
				var d struct {
					TaskID string `json:"task_id"`
				}
				require.NoError(t, json.Unmarshal(e.Data, &d))
				if d.TaskID == id {
					out = e
					return true
				}
				others++
			}
		}
		return false
	}, func() string { return fmt.Sprintf("no outcome for %s (%d of other tasks)", id, others) })
	return out
}

func (b *bundle) start(t *testing.T, svc *Server) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

func TestServiceCompletesOnlyItsTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc, err := New(b.rdb, Config{Name: "echo", Namespace: b.ns, Block: 50 * time.Millisecond})
	require.NoError(t, err)
	var calls atomic.Int32
	svc.HandleFunc("echo.run", func(ctx context.Context, tk *Task) (json.RawMessage, error) {
		calls.Add(1)
		var p struct{ Word string }
		if err := tk.UnmarshalParams(&p); err != nil {
			return nil, err
		}
		require.NoError(t, tk.Progress(ctx, 50, "half", time.Second))
		return Result("", "echo "+p.Word, nil), nil
	})
	stop := b.start(t, svc)
	defer stop()

	b.create(t, "t-other", "other.type", `{}`)
	b.create(t, "t1", "echo.run", `{"word":"hi"}`)
	b.create(t, "t2", "echo.run", `{"bogus":1}`)

	e := b.waitOutcome(t, "t1")
	require.Equal(t, protocol.TypeCompleted, e.Type)
	d, err := protocol.As[protocol.CompletedData](e)
	require.NoError(t, err)
	require.Equal(t, "tok-t1", d.Token)
	require.Equal(t, "echo", d.CompletedBy)
	require.JSONEq(t, `{"file_url":"","summary":"echo hi","metadata":{}}`, string(d.Result))

	e = b.waitOutcome(t, "t2")
	f, err := protocol.As[protocol.FailedData](e)
	require.NoError(t, err)
	require.Equal(t, "INVALID_PARAMS", f.Error.Code)
	require.False(t, f.Error.IsTransient())

	// Progress reached its stream; the other type was never run.
	n, err := b.rdb.XLen(context.Background(), b.keys.Progress()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.EqualValues(t, 2, calls.Load())

	// Everything acknowledged (an outcome is published first, then its
	// entry acknowledged: wait for the last ack), and the service is
	// registered with its types.
	require.Eventually(t, func() bool {
		_, pending, err := protocol.Lag(context.Background(), b.rdb, b.keys.Create(), "echo-group")
		return err == nil && pending == 0
	}, 5*time.Second, 10*time.Millisecond)
	types, err := b.rdb.HGet(context.Background(), b.keys.Service("echo"), "types").Result()
	require.NoError(t, err)
	require.Equal(t, "echo.run", types)
}

func TestServiceCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc, err := New(b.rdb, Config{Name: "slow", Namespace: b.ns, Block: 50 * time.Millisecond})
	require.NoError(t, err)
	started := make(chan struct{})
	svc.HandleFunc("slow.run", func(ctx context.Context, tk *Task) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	stop := b.start(t, svc)
	defer stop()
	b.create(t, "c1", "slow.run", `{}`)
	<-started
	e, err := protocol.New(protocol.TypeCancel, time.Now(), protocol.CancelData{TaskID: "c1", Reason: "user"})
	require.NoError(t, err)
	_, err = b.pub.Publish(context.Background(), b.keys.Cancel(), e)
	require.NoError(t, err)
	f, err := protocol.As[protocol.FailedData](b.waitOutcome(t, "c1"))
	require.NoError(t, err)
	require.Equal(t, "CANCELLED", f.Error.Code)
}

// TestDeadWorkerEntriesAreClaimed: a consumer that read an entry and died
// (never acknowledged, never touched) loses it to a live worker.
func TestDeadWorkerEntriesAreClaimed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, protocol.EnsureGroup(ctx, b.rdb, b.keys.Create(), "claim-group", "0"))
	b.create(t, "d1", "claim.run", `{}`)
	msgs, err := protocol.ReadGroup(ctx, b.rdb, "claim-group", "dead-worker", []string{b.keys.Create()}, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)

	svc, err := New(b.rdb, Config{Name: "claim", Namespace: b.ns, Block: 50 * time.Millisecond,
		HeartbeatInterval: 20 * time.Millisecond, ClaimIdle: 100 * time.Millisecond})
	require.NoError(t, err)
	svc.HandleFunc("claim.run", func(ctx context.Context, tk *Task) (json.RawMessage, error) {
		return json.RawMessage(`{"ok":true}`), nil
	})
	stop := b.start(t, svc)
	defer stop()
	require.Equal(t, protocol.TypeCompleted, b.waitOutcome(t, "d1").Type)
}

// TestGracefulStopLeavesUnfinishedWork: past the grace period a running
// task is not reported; its entry stays pending for another worker.
func TestGracefulStopLeavesUnfinishedWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc, err := New(b.rdb, Config{Name: "stop", Namespace: b.ns, Block: 50 * time.Millisecond, Grace: 10 * time.Millisecond})
	require.NoError(t, err)
	started := make(chan struct{})
	svc.HandleFunc("stop.run", func(ctx context.Context, tk *Task) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	stop := b.start(t, svc)
	b.create(t, "g1", "stop.run", `{}`)
	<-started
	stop()
	_, pending, err := protocol.Lag(context.Background(), b.rdb, b.keys.Create(), "stop-group")
	require.NoError(t, err)
	require.EqualValues(t, 1, pending)
	n, err := b.rdb.XLen(context.Background(), b.keys.Failed()).Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	_, err := New(nil, Config{})
	require.Error(t, err)
	_, err = New(nil, Config{Name: "x", HeartbeatInterval: time.Second, ClaimIdle: time.Second})
	require.ErrorContains(t, err, "ClaimIdle")
}

// TestHeartbeatKeepsALongTaskFromBeingClaimed: two live workers of one
// service share its group; a task runs ~7× longer than ClaimIdle. The
// running worker's heartbeat (XCLAIM … JUSTID every HeartbeatInterval)
// keeps its entry from looking idle, so the other worker, claiming idle
// entries all the while, never takes it: the task runs once and one
// outcome is published.
func TestHeartbeatKeepsALongTaskFromBeingClaimed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const work = 2 * time.Second
	var mu sync.Mutex
	runs := map[string]int{}
	started := make(chan struct{}, 2)
	newWorker := func(consumer string) *Server {
		svc, err := New(b.rdb, Config{Name: "hb", Namespace: b.ns, Consumer: consumer, Block: 50 * time.Millisecond,
			HeartbeatInterval: 50 * time.Millisecond, ClaimIdle: 300 * time.Millisecond})
		require.NoError(t, err)
		svc.HandleFunc("long.run", func(ctx context.Context, tk *Task) (json.RawMessage, error) {
			mu.Lock()
			runs[consumer]++
			mu.Unlock()
			started <- struct{}{}
			select { // the work itself
			case <-time.After(work):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return json.RawMessage(`{"ok":true}`), nil
		})
		return svc
	}
	stop1 := b.start(t, newWorker("hb-1"))
	defer stop1()
	b.create(t, "long-1", "long.run", `{}`)
	<-started // hb-1 runs it
	stop2 := b.start(t, newWorker("hb-2"))
	defer stop2()

	require.Equal(t, protocol.TypeCompleted, b.waitOutcome(t, "long-1").Type)
	// every entry acknowledged: nothing is left for hb-2 to claim later
	require.Eventually(t, func() bool {
		p, err := b.rdb.XPending(ctx, b.keys.Create(), "hb-group").Result()
		return err == nil && p.Count == 0
	}, 5*time.Second, 10*time.Millisecond)
	mu.Lock()
	require.Equal(t, map[string]int{"hb-1": 1}, runs, "run once, by the worker that took it")
	mu.Unlock()
	n, err := b.rdb.XLen(ctx, b.keys.Completed()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "one outcome")
}

// TestServicePublishesConcurrency: each instance's registration carries its
// concurrency in a field of its own, valid until the registration would
// expire, so the dispatchers can bound the service's types by it.
func TestServicePublishesConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range []string{"w1", "w2"} {
		svc, err := New(b.rdb, Config{Name: "sized", Namespace: b.ns, Consumer: c, Concurrency: 7, Block: 50 * time.Millisecond})
		require.NoError(t, err)
		svc.HandleFunc("sized.run", func(context.Context, *Task) (json.RawMessage, error) { return nil, nil })
		wg.Add(1)
		go func() { defer wg.Done(); _ = svc.Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	require.Eventually(t, func() bool {
		h, err := b.rdb.HGetAll(context.Background(), b.keys.Service("sized")).Result()
		if err != nil || len(h) == 0 {
			return false
		}
		total := 0
		for _, c := range []string{"w1", "w2"} {
			n, until, ok := protocol.ParseConcurrency(h[protocol.ConcurrencyFieldPrefix+c])
			if !ok || until <= time.Now().UnixMilli() {
				return false
			}
			total += n
		}
		return total == 14
	}, 5*time.Second, 10*time.Millisecond)
}
