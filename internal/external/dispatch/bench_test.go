package dispatch

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
)

// BenchmarkFetchAndDispatch64 is a worker's fetch of 64 tasks of a
// hand-off type that dispatches them all in its own call
// (store.FetchAndDispatch with the dispatcher's Plan), against the fetch
// of 64 that leaves the dispatch to the handler and its dispatch.lua
// batch (store.DispatchMany): the engine's side of the external path, per
// task. Redis' own time per task (its commandstats, scripts and all) is
// reported as redis_µs/task. The tasks are enqueued outside the timer.
func BenchmarkFetchAndDispatch64(b *testing.B) {
	for _, mode := range []string{"one-call", "two-calls"} {
		b.Run(mode, func(b *testing.B) {
			rdb, ns, st, d := oneStepRig(b, Config{InFlight: -1})
			ctx := context.Background()
			d.bound(ctx, "x.run")
			reqs := make([]store.EnqueueRequest, 64)
			for i := range reqs {
				reqs[i] = store.EnqueueRequest{Type: "x.run", SessionID: "s1", Timeout: time.Minute}
			}
			usec := func() float64 {
				info, err := rdb.Info(ctx, "commandstats").Result()
				require.NoError(b, err)
				total := 0.0
				for _, line := range strings.Split(info, "\n") {
					if !strings.HasPrefix(line, "cmdstat_evalsha:") {
						continue
					}
					for _, kv := range strings.Split(strings.TrimSpace(strings.TrimPrefix(line, "cmdstat_evalsha:")), ",") {
						if k, v, _ := strings.Cut(kv, "="); k == "usec" {
							f, _ := strconv.ParseFloat(v, 64)
							total += f
						}
					}
				}
				return total
			}
			var spent float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				_, err := st.EnqueueBatch(ctx, reqs)
				require.NoError(b, err)
				u0 := usec()
				b.StartTimer()
				r := store.FetchRequest{N: 64, WorkerID: "w1", TokenPrefix: "w1/" + strconv.Itoa(i), Lease: time.Minute}
				if mode == "one-call" {
					got, ds, _, err := st.FetchAndDispatch(ctx, r, d.Plan(ctx, 64))
					require.NoError(b, err)
					require.Empty(b, got)
					require.Len(b, ds, 64)
				} else {
					got, err := st.Fetch(ctx, r)
					require.NoError(b, err)
					cs := make([]*dispatchCall, len(got))
					for j, tk := range got {
						e := createOf(b, tk)
						cs[j] = &dispatchCall{req: store.DispatchRequest{ID: tk.ID, Token: tk.Lease, Holder: holder(tk),
							TimeoutAt: time.Now().Add(time.Minute), Inflight: newKeys(ns).inflight(tk.Type), Bound: -1, EventID: e.ID, Data: string(e.Data)}}
					}
					d.combined.Run(cs)
					for _, c := range cs {
						require.True(b, c.res.Published)
					}
				}
				b.StopTimer()
				spent += usec() - u0
				b.StartTimer()
			}
			b.ReportMetric(spent/float64(64*b.N), "redis_µs/task")
		})
	}
}
