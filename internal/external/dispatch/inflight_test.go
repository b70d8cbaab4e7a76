package dispatch_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/task"
)

// TestInFlightBoundKeepsPrioritiesOnTheExternalPath: with a service that
// runs one task at a time (the bottleneck) and a bound of 2 attempts in
// flight, a backlog of low tasks stays PENDING in the core's queues instead
// of draining into task.create, so high tasks submitted after them start
// before most of them; the low ones all run (no starvation) and the bound
// is never exceeded.
func TestInFlightBoundKeepsPrioritiesOnTheExternalPath(t *testing.T) {
	t.Parallel()
	const nLow, nHigh, bound = 30, 5, 2
	var (
		mu      sync.Mutex
		order   []string
		maxSeen int64
	)
	hold := make(chan struct{})
	var b *externaltest.Bundle
	run := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		n, err := dispatch.InFlight(ctx, b.Redis, b.Namespace, "prio.run", time.Now())
		if err != nil {
			return nil, err
		}
		mu.Lock()
		order = append(order, tk.Priority)
		first := len(order) == 1
		maxSeen = max(maxSeen, n)
		mu.Unlock()
		if first {
			<-hold // the service is busy while the test looks at the backlog
		}
		time.Sleep(5 * time.Millisecond) // the work: the service is the bottleneck
		return json.RawMessage(`{}`), nil
	}
	b = externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"prio.run": run}, WorkerConcurrency: 4, SkipArchive: true,
		Service: extsvc.Config{Concurrency: 1}, Dispatch: dispatch.Config{InFlight: bound}})
	var released sync.Once
	release := func() { released.Do(func() { close(hold) }) }
	t.Cleanup(release) // before the bundle stops, should an assertion fail
	ctx := context.Background()
	var reqs []store.EnqueueRequest
	for range nLow {
		reqs = append(reqs, store.EnqueueRequest{Type: "prio.run", Priority: task.PriorityLow, SessionID: "s1"})
	}
	lows, err := b.Store.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)

	// The backlog waits in the core's queue: at most the bound is
	// dispatched, at most the bound again was in its round trip outside the
	// worker's slots when the type turned full (Dispatcher.HandsOff), and
	// at most the worker's 4 slots wait for a place.
	require.Eventually(t, func() bool {
		n, err := b.Redis.XLen(ctx, b.Streams.Create()).Result()
		return err == nil && n == bound
	}, 10*time.Second, 5*time.Millisecond)
	pending := 0
	for _, tk := range lows {
		cur, err := b.Store.Get(ctx, tk.ID)
		require.NoError(t, err)
		if cur.State == task.StatePending {
			pending++
		}
	}
	require.GreaterOrEqual(t, pending, nLow-2*bound-4, "the backlog stays PENDING in the priority queue")
	n, err := b.Redis.XLen(ctx, b.Streams.Create()).Result()
	require.NoError(t, err)
	require.EqualValues(t, bound, n, "no more than the bound dispatched while the service is busy")

	reqs = reqs[:0]
	for range nHigh {
		reqs = append(reqs, store.EnqueueRequest{Type: "prio.run", Priority: task.PriorityHigh, SessionID: "s1"})
	}
	highs, err := b.Store.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)
	release()
	for _, tk := range append(lows, highs...) {
		b.WaitState(t, tk.ID, task.StateCompleted) // every low runs too
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, order, nLow+nHigh)
	lastHigh := 0
	for i, p := range order {
		if p == "high" {
			lastHigh = i
		}
	}
	// Ahead of the last high: the bound dispatched (2), the worker's slots
	// waiting (4) and the lows the weighted fetch (6:1) takes meanwhile;
	// without the bound all 30 lows were in task.create first.
	lowsBefore := lastHigh - (nHigh - 1)
	require.LessOrEqual(t, lowsBefore, nLow/2, "high tasks start before most low ones: %v", order)
	require.LessOrEqual(t, maxSeen, int64(bound), "in-flight places never exceed the bound")
}
