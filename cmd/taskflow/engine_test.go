package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

func TestEngineCommandsNeedRedis(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"worker", "scheduler"} {
		var out bytes.Buffer
		err := testMain(map[string]string{}, &out).Run(context.Background(), []string{cmd})
		require.ErrorContains(t, err, "REDIS_URL", cmd)
	}
}

func TestWorkerCommandRunsTasks(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	m := testMain(map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns}, &out)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"worker", "--concurrency", "2"}) }()
	// a noop task enqueued through the store is completed by the command's worker
	cfg, err := app.Load(m.Getenv)
	require.NoError(t, err)
	st, err := store.New(rdb, cfg.Engine.Store)
	require.NoError(t, err)
	tk, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "noop"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := st.Get(ctx, tk.ID)
		return err == nil && got.State == "COMPLETED"
	}, 20*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}
