package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestCancelActiveTaskOverPartitions: with three partitions each cancel
// request is published on its task's partition's channel; the worker
// listens on all three and interrupts the handler, whichever partition
// the task is in, long before a heartbeat would notice.
func TestCancelActiveTaskOverPartitions(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns, Partitions: 3})
	require.NoError(t, err)
	b := &bundle{st: st, rdb: rdb, ctx: context.Background()}
	running := make(chan string, 3)
	mux := NewMux()
	mux.HandleFunc("block", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		running <- tk.ID
		<-ctx.Done()
		return nil, ctx.Err()
	})
	b.start(t, mux, Config{Concurrency: 3, Lease: time.Minute, HeartbeatInterval: 30 * time.Second})
	for p := range 3 {
		id := ""
		for j := 0; ; j++ {
			if id = fmt.Sprintf("block-%d-%d", p, j); st.PartitionOf(id) == p {
				break
			}
		}
		_, err := st.Enqueue(b.ctx, store.EnqueueRequest{ID: id, Type: "block"})
		require.NoError(t, err)
		select {
		case got := <-running:
			require.Equal(t, id, got)
		case <-time.After(10 * time.Second):
			t.Fatalf("task %s of partition %d not started", id, p)
		}
		out, err := st.Cancel(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.CancelRequested, out)
		t0 := time.Now()
		b.waitState(t, id, task.StateCancelled)
		require.Less(t, time.Since(t0), 5*time.Second, "partition %d: cancelled by the pub/sub message", p)
	}
}
