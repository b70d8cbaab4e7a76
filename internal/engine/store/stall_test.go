package store

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestEnqueueResentAfterStall: Redis stalls (SIGSTOP) while an enqueue is
// in flight; the client library times out its read and sends the same
// script call again on a new connection. When Redis goes on it runs both:
// the second finds the tasks the first created. That second run must be
// recognised as the same enqueue, not answered "duplicate task id" (which
// the API turned into a 409 for a task that exists and runs).
func TestEnqueueResentAfterStall(t *testing.T) {
	srv := testredis.StartServer(t)
	// The resend happens when the stall ends while the retry's new
	// connection waits for its handshake: the first send times out at
	// 500 ms, the retry dials at ~550 ms and waits until ~1050 ms; the
	// stall ends at 800 ms.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 500 * time.Millisecond,
		MaxRetries: 3, MinRetryBackoff: 50 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	st, err := New(rdb, Config{Namespace: "stall"})
	require.NoError(t, err)
	ctx := context.Background()
	// the script is loaded, so the resend is an EVALSHA like the first send
	_, err = st.Enqueue(ctx, EnqueueRequest{Type: "noop"})
	require.NoError(t, err)

	for round := range 3 {
		srv.Pause()
		type res struct {
			tasks []*task.Task
			err   error
		}
		done := make(chan res, 1)
		go func() {
			ts, err := st.EnqueueBatch(ctx, []EnqueueRequest{{Type: "noop"}, {Type: "noop"}, {Type: "noop"}})
			done <- res{ts, err}
		}()
		time.Sleep(800 * time.Millisecond)
		srv.Resume()
		r := <-done
		require.NoError(t, r.err, "round %d: the resent enqueue is the same enqueue", round)
		require.Len(t, r.tasks, 3)
		for _, tk := range r.tasks {
			got, err := st.Get(ctx, tk.ID)
			require.NoError(t, err)
			require.Equal(t, task.StatePending, got.State)
		}
	}
	n, err := rdb.LLen(ctx, st.parts[0].primary(task.PriorityNormal)).Result()
	require.NoError(t, err)
	require.EqualValues(t, 10, n, "every task queued once: a resend queues nothing")
	calls := rdb.Info(ctx, "commandstats").Val()
	// 1 (NOSCRIPT, then EVAL) + 3 rounds of 2 or more: the stall really
	// made the client resend every round
	require.Regexp(t, `cmdstat_evalsha:calls=([7-9]|\d\d)`, calls)
}
