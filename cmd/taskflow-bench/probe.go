package main

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The probe: a bare durable lifecycle (probe/*.lua) the engine's drain is
// compared with in the same run, so the ratio holds on a noisy machine.
var (
	//go:embed probe/fetch.lua
	probeFetchSrc string
	//go:embed probe/complete.lua
	probeCompleteSrc string

	probeFetch    = redis.NewScript(probeFetchSrc)
	probeComplete = redis.NewScript(probeCompleteSrc)
)

// probeLoops is how many fetch → complete loops the probe runs at once:
// enough to keep one Redis thread busy, as the worker's fetcher and its
// acknowledgement flushes do.
const probeLoops = 4

// runProbe puts n tasks in a queue under prefix (a hash each, as the
// engine's enqueue writes, and the queue entry), then drains them with the
// probe's scripts in batches of batch and returns the tasks per second of
// the drain.
func runProbe(ctx context.Context, rdb redis.UniversalClient, prefix string, n, batch int) (float64, error) {
	queue, leases, taskPrefix := prefix+"probe:queue", prefix+"probe:leases", prefix+"probe:task:"
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	for start := 0; start < n; start += 1000 {
		pipe := rdb.Pipeline()
		ids := make([]any, 0, 1000)
		for i := start; i < min(n, start+1000); i++ {
			id := fmt.Sprintf("p%08d", i)
			ids = append(ids, id)
			pipe.HSet(ctx, taskPrefix+id, "state", "PENDING", "task_type", "noop", "priority", "normal", "created_at", now,
				"updated_at", now, "retry_count", "0", "max_retries", "3", "queue", "primary", "state_history", now+",_,P,created")
		}
		pipe.RPush(ctx, queue, ids...)
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, fmt.Errorf("probe: fill: %w", err)
		}
	}
	var completed atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, probeLoops)
	start := time.Now()
	for g := range probeLoops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)
			for call := 0; ; call++ {
				res, err := probeFetch.Run(ctx, rdb, []string{queue, leases, taskPrefix}, batch, deadline,
					"g"+strconv.Itoa(g)+"."+strconv.Itoa(call)).StringSlice()
				if err != nil {
					errc <- fmt.Errorf("probe: fetch: %w", err)
					return
				}
				if len(res) == 0 {
					return
				}
				args := make([]any, len(res))
				for i, v := range res {
					args[i] = v
				}
				k, err := probeComplete.Run(ctx, rdb, []string{leases, taskPrefix}, args...).Int64()
				if err != nil {
					errc <- fmt.Errorf("probe: complete: %w", err)
					return
				}
				completed.Add(k)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := firstErr(errc); err != nil {
		return 0, err
	}
	if got := completed.Load(); got != int64(n) {
		return 0, fmt.Errorf("probe: completed %d of %d", got, n)
	}
	return float64(n) / elapsed.Seconds(), nil
}
