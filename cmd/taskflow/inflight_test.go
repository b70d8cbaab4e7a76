package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestExternalInFlightBadValue: a bad TASKFLOW_EXTERNAL_INFLIGHT stops
// `taskflow worker` and `taskflow dev` at startup with an error naming the
// variable.
func TestExternalInFlightBadValue(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"worker", "dev"} {
		for _, v := range []string{"lots", "0", "-2"} {
			t.Run(cmd+"/"+v, func(t *testing.T) {
				t.Parallel()
				_, ns := testredis.Client(t)
				env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_EXTERNAL_INFLIGHT": v}
				args := []string{cmd}
				if cmd == "dev" {
					args = append(args, "--addr", "127.0.0.1:0")
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err := testMain(env, io.Discard).Run(ctx, args)
				require.ErrorContains(t, err, "TASKFLOW_EXTERNAL_INFLIGHT")
				require.ErrorContains(t, err, fmt.Sprintf("%q", v))
				var ee *ExitError
				require.True(t, errors.As(err, &ee), "err = %v", err)
				require.Equal(t, 2, ee.Code)
			})
		}
	}
}

// TestExternalInFlightTakesEffect: `taskflow worker` with
// TASKFLOW_EXTERNAL_INFLIGHT=1 and 4 handler slots fetches all 3 tasks of
// an external type whose service is busy (here: not running, so nothing
// finishes) but publishes only 1 task.create; without the variable (the
// default bound, 64) all 3 are published.
func TestExternalInFlightTakesEffect(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		inFlight string
		want     int64
	}{{"1", 1}, {"", 3}} {
		t.Run("InFlight="+c.inFlight, func(t *testing.T) {
			t.Parallel()
			rdb, ns := testredis.Client(t)
			env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_CONCURRENCY": "4",
				"TASKFLOW_SHUTDOWN_GRACE": "1s", "TASKFLOW_EXTERNAL_TYPES": "slow.run", "TASKFLOW_EXTERNAL_INFLIGHT": c.inFlight}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- testMain(env, io.Discard).Run(ctx, []string{"worker", "--scheduler=false"}) }()
			t.Cleanup(func() {
				cancel()
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(30 * time.Second):
					t.Error("the worker did not stop")
				}
			})
			st, err := store.New(rdb, store.Config{Namespace: ns})
			require.NoError(t, err)
			var ids []string
			for range 3 {
				tk, err := st.Enqueue(context.Background(), store.EnqueueRequest{Type: "slow.run", SessionID: "s1"})
				require.NoError(t, err)
				ids = append(ids, tk.ID)
			}
			create := protocol.NewKeys(keyspace.MustParse(ns)).Create()
			published := func() int64 {
				n, err := rdb.XLen(context.Background(), create).Result()
				require.NoError(t, err)
				return n
			}
			// Every task is fetched (ACTIVE: dispatched or waiting for a place).
			require.Eventually(t, func() bool {
				for _, id := range ids {
					tk, err := st.Get(context.Background(), id)
					if err != nil || tk.State != task.StateActive {
						return false
					}
				}
				return true
			}, 10*time.Second, 10*time.Millisecond)
			require.Eventually(t, func() bool { return published() == c.want }, 10*time.Second, 10*time.Millisecond)
			require.Never(t, func() bool { return published() > c.want }, 500*time.Millisecond, 20*time.Millisecond,
				"only %d task.create outstanding", c.want)
		})
	}
}
