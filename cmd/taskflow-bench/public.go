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
	"github.com/taskflow/taskflow/task"
)

// publicType is the bench's user-defined task type.
const publicType = "bench.noop"

// benchPublic measures the public Go API on the bench's namespace: the
// client's single and batched enqueues (2×tasks in all, the backlog), then
// a taskflow.Worker draining it with a user-defined no-op handler. The
// ratio to the built-in drain needs the drain phase in the same run.
func benchPublic(ctx context.Context, o benchOpts, ns string, res *benchResult, account func(string, int)) error {
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

	// a user's worker drains the backlog
	w, err := taskflow.NewWorker(cfg)
	if err != nil {
		return err
	}
	w.HandleFunc(publicType, func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil })
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	backlog := int64(2 * o.tasks)
	start = time.Now()
	go func() { done <- w.Run(wctx) }()
	for w.Stats().Completed < backlog {
		select {
		case err := <-done:
			cancel()
			return err
		case <-time.After(200 * time.Microsecond):
		}
	}
	res.ProcessedPublicPerSec = float64(backlog) / time.Since(start).Seconds()
	cancel()
	if err := <-done; err != nil {
		return err
	}
	account("drain_public", int(backlog))
	if res.ProcessedPerSec > 0 {
		res.PublicVsBuiltin = math.Round(res.ProcessedPublicPerSec/res.ProcessedPerSec*1000) / 1000
	}
	return nil
}
