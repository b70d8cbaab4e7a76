package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/task"
)

// publicType is the bench's user-defined task type.
const publicType = "bench.noop"

// benchPublic measures the public Go API on the bench's namespace: the
// client's single and batched enqueues (2×tasks in all, the first
// backlog), then three drains of equal backlogs — the engine with the
// built-in noop handler, a taskflow.Worker with a user-defined no-op, the
// engine again.
func benchPublic(ctx context.Context, o benchOpts, ns string, st *store.Store, res *benchResult, account func(string, int)) error {
	if o.prefetch != 0 || o.ackBatch != 64 {
		return errors.New("--public: the public Worker takes the default --prefetch (0) and --ack-batch (64)")
	}
	cfg := taskflow.Config{RedisURL: o.redisURL, Namespace: ns, Partitions: o.partitions, Concurrency: o.concurrency,
		NoScheduler: true, Types: []taskflow.TypeInfo{{Name: publicType}},
		Getenv: func(k string) string {
			if k == "TASKFLOW_FETCH_BATCH" {
				return strconv.Itoa(o.fetchBatch)
			}
			return ""
		}}
	c, err := taskflow.NewClient(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()

	// one Enqueue per task from --concurrency goroutines
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, o.concurrency+4)
	for range o.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(o.tasks) {
				if _, err := c.Enqueue(ctx, publicType, nil); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := firstErr(errc); err != nil {
		return err
	}
	res.EnqueueClientSinglePerSec = float64(o.tasks) / time.Since(start).Seconds()
	account("enqueue_client_single", o.tasks)

	// EnqueueMany of --batch from 4 goroutines
	start = time.Now()
	var chunks atomic.Int64
	nChunks := int64((o.tasks + o.batch - 1) / o.batch)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reqs := make([]taskflow.Request, o.batch)
			for i := range reqs {
				reqs[i] = taskflow.Request{Type: publicType}
			}
			for n := chunks.Add(1); n <= nChunks; n = chunks.Add(1) {
				k := min(o.batch, o.tasks-int(n-1)*o.batch)
				if _, err := c.EnqueueMany(ctx, reqs[:k]); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := firstErr(errc); err != nil {
		return err
	}
	res.EnqueueClientPerSec = float64(o.tasks) / time.Since(start).Seconds()
	account("enqueue_client_batched", o.tasks)

	// Drains of equal backlogs, one after the other: the engine serving the
	// built-in noop handler, a user's taskflow.Worker, the engine again (the
	// ratio takes the mean of the two engine drains, so a drift over the
	// run — a longer COMPLETED index, the stream's trim — cancels out).
	backlog := 2 * o.tasks
	builtin1, err := drainEngine(ctx, st, o, backlog)
	if err != nil {
		return err
	}
	account("drain_builtin_before", backlog)
	if err := refill(ctx, c, backlog, o.batch); err != nil {
		return err
	}
	account("refill_1", backlog)
	public, err := drainPublic(ctx, cfg, backlog)
	if err != nil {
		return err
	}
	res.ProcessedPublicPerSec = public
	account("drain_public", backlog)
	if err := refill(ctx, c, backlog, o.batch); err != nil {
		return err
	}
	account("refill_2", backlog)
	builtin2, err := drainEngine(ctx, st, o, backlog)
	if err != nil {
		return err
	}
	account("drain_builtin_after", backlog)
	res.ProcessedBuiltinAdjacentPerSec = (builtin1 + builtin2) / 2

	// Batched enqueues, the store's and the client's, in alternating rounds
	// of the same size (the single-pass phases above run one after the
	// other, and a later phase meets a larger dataset).
	var storeDur, clientDur time.Duration
	per := max(o.batch, o.tasks/2)
	for range 4 {
		d, err := timedBatches(per, o.batch, func(k int) error {
			reqs := make([]store.EnqueueRequest, k)
			for i := range reqs {
				reqs[i] = store.EnqueueRequest{Type: publicType}
			}
			_, err := st.EnqueueBatch(ctx, reqs)
			return err
		})
		if err != nil {
			return err
		}
		storeDur += d
		d, err = timedBatches(per, o.batch, func(k int) error {
			reqs := make([]taskflow.Request, k)
			for i := range reqs {
				reqs[i] = taskflow.Request{Type: publicType}
			}
			_, err := c.EnqueueMany(ctx, reqs)
			return err
		})
		if err != nil {
			return err
		}
		clientDur += d
	}
	account("enqueue_interleaved", 8*per)
	res.EnqueueStoreInterleavedPerSec = float64(4*per) / storeDur.Seconds()
	res.EnqueueClientInterleavedPerSec = float64(4*per) / clientDur.Seconds()
	res.PublicVsBuiltin = math.Round(public/res.ProcessedBuiltinAdjacentPerSec*1000) / 1000
	return nil
}

// refill enqueues n tasks of the bench's type through the client, in
// batches (not timed).
func refill(ctx context.Context, c *taskflow.Client, n, batch int) error {
	reqs := make([]taskflow.Request, batch)
	for i := range reqs {
		reqs[i] = taskflow.Request{Type: publicType}
	}
	for sent := 0; sent < n; sent += batch {
		if _, err := c.EnqueueMany(ctx, reqs[:min(batch, n-sent)]); err != nil {
			return err
		}
	}
	return nil
}

// drainEngine drains n tasks of the bench's type with the engine's worker
// serving the built-in noop handler function, and returns tasks/s.
func drainEngine(ctx context.Context, st *store.Store, o benchOpts, n int) (float64, error) {
	w, stop, err := benchWorker(ctx, st, o, publicType, nil)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	waitCompleted(w, int64(n))
	rate := float64(n) / time.Since(start).Seconds()
	stop()
	return rate, nil
}

// drainPublic drains n tasks with a user's taskflow.Worker running a
// user-defined no-op handler, and returns tasks/s.
func drainPublic(ctx context.Context, cfg taskflow.Config, n int) (float64, error) {
	w, err := taskflow.NewWorker(cfg)
	if err != nil {
		return 0, err
	}
	w.HandleFunc(publicType, func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil })
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Run(wctx) }()
	for w.Stats().Completed < int64(n) {
		select {
		case err := <-done:
			cancel()
			return 0, err
		case <-time.After(200 * time.Microsecond):
		}
	}
	rate := float64(n) / time.Since(start).Seconds()
	cancel()
	return rate, <-done
}

// timedBatches enqueues n tasks in batches of batch from 4 goroutines
// through enqueue and returns how long it took.
func timedBatches(n, batch int, enqueue func(k int) error) (time.Duration, error) {
	start := time.Now()
	var next atomic.Int64
	chunks := int64((n + batch - 1) / batch)
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := next.Add(1); c <= chunks; c = next.Add(1) {
				if err := enqueue(min(batch, n-int(c-1)*batch)); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), firstErr(errc)
}
