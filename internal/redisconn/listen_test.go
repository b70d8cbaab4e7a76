package redisconn

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testredis"
)

// TestListen: subscribed is told once the subscription holds, messages
// published after it are handled in order, and the end of ctx ends it
// without an error; a client that cannot reach Redis is told not ok and
// the error is returned.
func TestListen(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	channel := ns + ":listen-test"
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan bool, 1)
	got := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- Listen(ctx, rdb, channel, 16, func(ok bool) { ready <- ok }, func(p string) { got <- p })
	}()
	require.True(t, <-ready)
	// on a cluster the channel is a shard channel: the subscription is
	// counted among the shard channels' (and is not a plain one)
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var shard, plain atomic.Int64
		require.NoError(t, cc.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
			n, err := m.PubSubShardNumSub(ctx, channel).Result()
			if err != nil {
				return err
			}
			shard.Add(n[channel])
			p, err := m.PubSubNumSub(ctx, channel).Result()
			plain.Add(p[channel])
			return err
		}))
		require.EqualValues(t, 1, shard.Load())
		require.Zero(t, plain.Load())
	}
	for _, m := range []string{"a", "b", "c"} {
		require.NoError(t, Publish(context.Background(), rdb, channel, m).Err())
	}
	for _, want := range []string{"a", "b", "c"} {
		select {
		case p := <-got:
			require.Equal(t, want, p)
		case <-time.After(5 * time.Second):
			t.Fatal("message not handled")
		}
	}
	cancel()
	require.NoError(t, <-done)

	dead, err := Open(context.Background(), "redis://127.0.0.1:1/0", Options{NoPing: true})
	require.NoError(t, err)
	defer dead.Close()
	var told *bool
	err = Listen(context.Background(), dead, "x", 0, func(ok bool) { told = &ok }, func(string) {})
	require.Error(t, err)
	require.NotNil(t, told)
	require.False(t, *told)
}
