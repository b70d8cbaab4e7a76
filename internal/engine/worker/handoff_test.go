package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
	"github.com/taskflow/taskflow/task"
)

// TestHandOffTypesRunOutsideTheSlots: the tasks of a HandOff type (the
// external path's dispatcher) free their handler slot at once and run in
// goroutines of their own, at most HandOffConcurrency at once (then the
// fetch loop waits for a place: backpressure); the other types keep the
// Concurrency slots; shutdown waits for the running ones.
func TestHandOffTypesRunOutsideTheSlots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := make(chan struct{})
	var running, most atomic.Int64
	mux := NewMux()
	var inSlots, outside atomic.Int64 // tasks run where they should not
	mux.HandleFunc("hand.off", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		if !OutsideSlots(ctx) {
			inSlots.Add(1)
		}
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		defer running.Add(-1)
		select {
		case <-release:
			return json.RawMessage(`{}`), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	mux.HandleFunc("local", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		if OutsideSlots(ctx) {
			outside.Add(1)
		}
		return json.RawMessage(`{}`), nil
	})
	var ids []string
	enqueue := func(n int) {
		for range n {
			tk, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "hand.off"})
			require.NoError(t, err)
			ids = append(ids, tk.ID)
		}
	}
	enqueue(8)
	_, stop := b.start(t, mux, Config{Concurrency: 2, ShutdownGrace: time.Second, HandOff: func(typ string) bool { return typ == "hand.off" }, HandOffConcurrency: 8})

	// 8 run at once with 2 slots
	testwait.Until(t, 15*time.Second, 5*time.Millisecond, func() bool { return running.Load() == 8 },
		func() string { return fmt.Sprintf("%d hand-off tasks running, want 8", running.Load()) })

	// an in-process task still gets a slot
	local, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "local"})
	require.NoError(t, err)
	b.waitState(t, local.ID, task.StateCompleted)

	// more hand-off tasks wait for a place
	enqueue(4)
	time.Sleep(100 * time.Millisecond) // a ninth would start now if the bound let it
	require.EqualValues(t, 8, most.Load())

	close(release)
	for _, id := range ids {
		b.waitState(t, id, task.StateCompleted)
	}
	require.EqualValues(t, 8, most.Load())
	stop()
	require.Zero(t, running.Load())
	require.Zero(t, inSlots.Load(), "a hand-off task ran in a slot")
	require.Zero(t, outside.Load(), "an in-process task ran outside the slots")
}

// TestHandOffConfig: HandOffConcurrency has a default and a range.
func TestHandOffConfig(t *testing.T) {
	t.Parallel()
	require.Equal(t, 256, Config{}.WithDefaults().HandOffConcurrency)
	c := Config{HandOffConcurrency: -1}.WithDefaults()
	require.ErrorContains(t, c.Validate(), "HandOffConcurrency")
}

// fetchCounter counts the fetch script calls a client sends (an EVALSHA
// whose first key is a queue's high-priority list).
type fetchCounter struct{ n atomic.Int64 }

func (c *fetchCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *fetchCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 3 && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			if k, _ := a[3].(string); strings.HasSuffix(k, ":pending:primary:high") {
				c.n.Add(1)
			}
		}
		return next(ctx, cmd)
	}
}

func (c *fetchCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestHandOffFetchesBeyondTheSlots: while a queue's tasks are handed off,
// a fetch takes up to FetchBatch of them (as many as there are free
// HandOff places), not only as many as there are free slots; tasks of
// other types fetched with them beyond the slots wait for a slot each
// (nothing is lost or run outside the slots, nothing deadlocks).
func TestHandOffFetchesBeyondTheSlots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fc := &fetchCounter{}
	b.rdb.AddHook(fc)
	var inSlots, outside, localRunning, localMost atomic.Int64
	mux := NewMux()
	mux.HandleFunc("hand.off", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		if !OutsideSlots(ctx) {
			inSlots.Add(1)
		}
		return json.RawMessage(`{}`), nil
	})
	mux.HandleFunc("local", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		if OutsideSlots(ctx) {
			outside.Add(1)
		}
		n := localRunning.Add(1)
		defer localRunning.Add(-1)
		for {
			m := localMost.Load()
			if n <= m || localMost.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		return json.RawMessage(`{}`), nil
	})
	var reqs []store.EnqueueRequest
	for i := range 600 {
		typ := "hand.off"
		if i >= 300 && i < 340 { // a run of in-process tasks in the middle
			typ = "local"
		}
		reqs = append(reqs, store.EnqueueRequest{Type: typ})
	}
	ts, err := b.st.EnqueueBatch(b.ctx, reqs)
	require.NoError(t, err)
	_, stop := b.start(t, mux, Config{Concurrency: 2, FetchBatch: 50, ShutdownGrace: time.Second,
		HandOff: func(typ string) bool { return typ == "hand.off" }, HandOffConcurrency: 100, HandOffRoom: func() int { return 1000 }})
	for _, tk := range ts {
		b.waitState(t, tk.ID, task.StateCompleted)
	}
	stop()
	require.Zero(t, inSlots.Load(), "a hand-off task ran in a slot")
	require.Zero(t, outside.Load(), "an in-process task ran outside the slots")
	require.LessOrEqual(t, localMost.Load(), int64(2), "more in-process tasks ran at once than the slots")
	// two slots would take 300+ fetches; batches of up to 50 take a few dozen
	require.Less(t, fc.n.Load(), int64(100), "fetch calls for 600 tasks")
}

// TestHandOffOrderIsTheFetchOrder: the tasks handed off outside the slots
// carry their place in the order they were fetched (HandOffOrder), which
// their goroutines do not keep: here a FIFO queue's, the order they were
// submitted in. A task in a slot has none.
func TestHandOffOrderIsTheFetchOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 40
	var ids []string
	for range n {
		tk, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "hand.off"})
		require.NoError(t, err)
		ids = append(ids, tk.ID)
	}
	seqs := make(chan [2]any, n+1)
	mux := NewMux()
	mux.HandleFunc("hand.off", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		seq, ok := HandOffOrder(ctx)
		require.True(t, ok)
		seqs <- [2]any{tk.ID, seq}
		return json.RawMessage(`{}`), nil
	})
	mux.HandleFunc("local", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		_, ok := HandOffOrder(ctx)
		seqs <- [2]any{"local", ok}
		return json.RawMessage(`{}`), nil
	})
	_, stop := b.start(t, mux, Config{Concurrency: 2, HandOff: func(typ string) bool { return typ == "hand.off" }, HandOffConcurrency: 64})
	defer stop()
	got := map[string]uint64{}
	for range n {
		v := <-seqs
		got[v[0].(string)] = v[1].(uint64)
	}
	for i := 1; i < n; i++ {
		require.Less(t, got[ids[i-1]], got[ids[i]], "task %d was fetched before task %d", i-1, i)
	}
	local, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "local"})
	require.NoError(t, err)
	b.waitState(t, local.ID, task.StateCompleted)
	require.Equal(t, [2]any{"local", false}, <-seqs)
}

// planOf is a FetchDispatcher that plans the given types, its events on
// stream, and counts what fetches dispatched.
type planOf struct {
	types  []string
	stream string
	got    atomic.Int64
}

func (p *planOf) Plan(_ context.Context, n int) *store.FetchDispatch {
	d := &store.FetchDispatch{Stream: p.stream, MinID: "0-1", EventType: "task.create", Stamp: "2026-11-28T00:00:00.000Z",
		Grace: time.Second, DefaultTimeout: time.Minute, EventIDPrefix: "00000000-0000-4000-8000-00000000"}
	for _, t := range p.types {
		// its keys with the stream's hash tag (a cluster refuses a script
		// whose keys span slots)
		d.Types = append(d.Types, store.DispatchType{Name: t, Inflight: p.stream + ":inflight:" + t, Bound: -1})
	}
	return d
}

func (p *planOf) Dispatched(ds []store.Dispatched) { p.got.Add(int64(len(ds))) }

// TestFetchDispatchLeavesDependencyTypes: a type with a Dependency is
// never in what a fetch dispatches itself (Config.FetchDispatch): its
// circuit breaker is asked in the handler's path; the other types of the
// plan stay.
func TestFetchDispatchLeavesDependencyTypes(t *testing.T) {
	t.Parallel()
	p := &planOf{types: []string{"free.run", "guarded.run"}}
	w := &Worker{cfg: Config{FetchDispatch: p, Dependencies: map[string]string{"guarded.run": "api"}}}
	got := w.plan(context.Background(), 8)
	require.NotNil(t, got)
	require.Equal(t, []store.DispatchType{{Name: "free.run", Inflight: ":inflight:free.run", Bound: -1}}, got.Types)
	require.Nil(t, (&Worker{}).plan(context.Background(), 8), "no FetchDispatch: no plan")
}

// TestFetchDispatchedTasksSkipTheHandlers: the tasks a fetch dispatches
// itself (Config.FetchDispatch) never reach a handler: the worker counts
// them started, handed off and DispatchedByFetch, tells the dispatcher
// (Dispatched), and takes no slot for them; the fetch publishes one event
// each.
func TestFetchDispatchedTasksSkipTheHandlers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 40
	p := &planOf{types: []string{"ext.run"}, stream: b.st.Namespace().Prefix() + "test:create"}
	var handled atomic.Int64
	mux := NewMux()
	mux.HandleFunc("ext.run", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		handled.Add(1)
		return nil, ErrHandedOff
	})
	for range n {
		_, err := b.st.Enqueue(b.ctx, store.EnqueueRequest{Type: "ext.run"})
		require.NoError(t, err)
	}
	w, _ := b.start(t, mux, Config{Concurrency: 2, FetchDispatch: p})
	require.True(t, b.st.CanDispatch())
	require.Eventually(t, func() bool { return w.Stats().DispatchedByFetch == n }, 10*time.Second, 5*time.Millisecond,
		"every task dispatched by a fetch: %+v, %d handled", w.Stats(), handled.Load())
	s := w.Stats()
	require.EqualValues(t, n, s.Started)
	require.EqualValues(t, n, s.HandedOff)
	require.EqualValues(t, n, p.got.Load())
	require.Zero(t, handled.Load(), "no handler ran")
	entries, err := b.rdb.XLen(b.ctx, p.stream).Result()
	require.NoError(t, err)
	require.EqualValues(t, n, entries)
}
