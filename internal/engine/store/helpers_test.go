package store

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

type testBundle struct {
	s   *Store
	rdb redis.UniversalClient
	clk *clock.Fake
	ctx context.Context
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func setup(t *testing.T, mod ...func(*Config)) *testBundle {
	t.Helper()
	rdb, ns := testredis.Client(t)
	clk := clock.NewFake(t0)
	cfg := Config{Namespace: ns, Clock: clk}
	for _, m := range mod {
		m(&cfg)
	}
	s, err := New(rdb, cfg)
	require.NoError(t, err)
	return &testBundle{s: s, rdb: rdb, clk: clk, ctx: context.Background()}
}

func (b *testBundle) enqueue(t *testing.T, r EnqueueRequest) *task.Task {
	t.Helper()
	if r.Type == "" {
		r.Type = "noop"
	}
	tk, err := b.s.Enqueue(b.ctx, r)
	require.NoError(t, err)
	return tk
}

func (b *testBundle) fetch(t *testing.T, n int) []*task.Task {
	t.Helper()
	got, err := b.s.Fetch(b.ctx, FetchRequest{N: n, WorkerID: "w1", TokenPrefix: "w1-" + time.Now().Format("150405.000000000"), Lease: 30 * time.Second})
	require.NoError(t, err)
	return got
}

func (b *testBundle) fetchOne(t *testing.T) *task.Task {
	t.Helper()
	got := b.fetch(t, 1)
	require.Len(t, got, 1)
	return got[0]
}

func (b *testBundle) state(t *testing.T, id string) task.State {
	t.Helper()
	tk, err := b.s.Get(b.ctx, id)
	require.NoError(t, err)
	return tk.State
}

func (b *testBundle) status(t *testing.T) *QueueStatus {
	t.Helper()
	qs, err := b.s.QueueStatus(b.ctx)
	require.NoError(t, err)
	return qs
}

func ids(ts []*task.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}
