package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// failedCompletions counts completion script calls (the only scripts
// given the COMPLETED index) that Redis did not answer.
type failedCompletions struct {
	key string
	n   atomic.Int32
}

func (h *failedCompletions) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failedCompletions) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			for _, a := range cmd.Args() {
				if fmt.Sprint(a) == h.key {
					h.n.Add(1)
					break
				}
			}
		}
		return err
	}
}

func (h *failedCompletions) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestCompletionSurvivesRedisOutage is docs/guarantees.md's "Redis command
// fails during a completion": Redis goes away (killed) between the
// handler's end and its acknowledgement; the worker retries the batch with
// backoff, Redis comes back (its append-only file replayed), and the
// completion lands: COMPLETED once, the handler run once.
func TestCompletionSurvivesRedisOutage(t *testing.T) {
	t.Parallel()
	aof := []string{"--appendonly", "yes", "--appendfsync", "always"}
	srv := testredis.StartServer(t, aof...)
	const ns = "outage"
	// no retries inside the client: the worker's own retry is under test
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	failed := &failedCompletions{key: "{" + ns + "}:tasks:state:COMPLETED"}
	rdb.AddHook(failed)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	// the test observes through a client of its own (with retries)
	obs, err := store.New(srv.Client(), store.Config{Namespace: ns})
	require.NoError(t, err)
	b := &bundle{st: obs, rdb: rdb, ctx: context.Background()}

	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	mux := NewMux()
	mux.HandleFunc("work", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		runs.Add(1)
		close(started)
		<-release
		return json.RawMessage(`"done"`), nil
	})
	w, err := New(st, mux, Config{Concurrency: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	tk, err := st.Enqueue(b.ctx, store.EnqueueRequest{Type: "work"})
	require.NoError(t, err)

	<-started
	// Redis gone (its port closed): the acknowledgement cannot be written
	srv.Stop()
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", srv.Addr, 50*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, 5*time.Second, 5*time.Millisecond)
	close(release)
	require.Eventually(t, func() bool { return failed.n.Load() >= 2 }, 5*time.Second, time.Millisecond,
		"the completion is tried again while Redis is down")
	srv.Restart(aof...)

	got := b.waitState(t, tk.ID, task.StateCompleted)
	require.JSONEq(t, `"done"`, string(got.Result))
	require.Equal(t, int32(1), runs.Load(), "the handler ran once: the completion was retried, not the task")
	require.Eventually(t, func() bool { return w.Stats().Completed == 1 }, 5*time.Second, time.Millisecond)
	qs, err := obs.QueueStatus(b.ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), qs.States[task.StateCompleted])
	require.Zero(t, qs.States[task.StateActive])
}
