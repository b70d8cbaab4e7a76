package handoff_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/handoff"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// BenchmarkWatcherDropsEndedAttempts: how fast one watcher clears the
// index entries of handed-off attempts that ended without removing their
// entry (a completion removes it itself; a failure or cancel leaves it):
// each is read back (the task), its place released and its entry dropped,
// one at a time. One op = one entry; it reports entries/s. The index
// entries of 3,000 completed attempts are written back after their
// completion, as completions left them before they removed their own.
func BenchmarkWatcherDropsEndedAttempts(b *testing.B) {
	rdb, name := testredis.Client(b)
	ns := keyspace.MustParse(name)
	st, err := store.New(rdb, store.Config{Namespace: name})
	require.NoError(b, err)
	ctx := context.Background()
	w, err := handoff.New(st, nil, nil, handoff.Config{})
	require.NoError(b, err)
	idx := ns.PartitionPrefixes(1)[0] + "tasks:handoff"
	const n = 3000
	ended := func() {
		reqs := make([]store.EnqueueRequest, n)
		for i := range reqs {
			reqs[i] = store.EnqueueRequest{Type: "x.run", SessionID: "s", Params: json.RawMessage(`{}`), Timeout: time.Minute}
		}
		_, err := st.EnqueueBatch(ctx, reqs)
		require.NoError(b, err)
		members := []any{"ZADD", idx}
		for got := 0; got < n; {
			ts, err := st.Fetch(ctx, store.FetchRequest{N: 500, WorkerID: "w", TokenPrefix: fmt.Sprint("w", time.Now().UnixNano()), Lease: time.Minute})
			require.NoError(b, err)
			require.NotEmpty(b, ts)
			hs := make([]store.HandoffRequest, len(ts))
			cs := make([]store.Completion, len(ts))
			now := time.Now()
			for i, tk := range ts {
				hs[i] = store.HandoffRequest{ID: tk.ID, Token: tk.Lease, Holder: "external:x.run", TimeoutAt: now.Add(time.Minute),
					LeaseUntil: now.Add(2 * time.Minute), CheckAt: now}
				cs[i] = store.Completion{ID: tk.ID, Token: tk.Lease, Result: json.RawMessage(`{}`)}
				members = append(members, 0, fmt.Sprintf("%s %s %d", tk.ID, tk.Lease, now.Add(time.Minute).UnixMilli()))
			}
			for _, r := range st.HandoffMany(ctx, hs) {
				require.NoError(b, r.Err)
			}
			errs, err := st.CompleteBatch(ctx, cs)
			require.NoError(b, err)
			for _, err := range errs {
				require.NoError(b, err)
			}
			got += len(ts)
		}
		require.NoError(b, rdb.Do(ctx, members...).Err())
	}
	b.ResetTimer()
	var dropped int
	var spent time.Duration
	for dropped < b.N {
		b.StopTimer()
		ended()
		b.StartTimer()
		start := time.Now()
		for left := n; left > 0; {
			k, err := w.Tick(ctx)
			require.NoError(b, err)
			require.Positive(b, k)
			left -= k
			dropped += k
		}
		spent += time.Since(start)
	}
	zs, err := rdb.ZCard(ctx, idx).Result()
	require.NoError(b, err)
	require.Zero(b, zs, "every entry dropped")
	b.ReportMetric(float64(dropped)/spent.Seconds(), "entries/s")
}
