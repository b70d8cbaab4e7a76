package redisconn

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
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

// TestListenAll: several channels, each under a hash tag of its own (a
// partition's), are listened to at once on a single server and on a
// cluster (where they are in different slots, so no one SSUBSCRIBE may
// name them all): subscribed is told once, when all hold; every message
// of every channel is handled, each channel's in order; the end of ctx
// ends it without an error.
func TestListenAll(t *testing.T) {
	t.Parallel()
	shared, ns := testredis.Client(t)
	cl := testredis.StartCluster(t)
	for name, rdb := range map[string]redis.UniversalClient{"shared": shared, "cluster": cl.Client()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			channels := []string{"{" + ns + ":p0}:cancel", "{" + ns + ":p1}:cancel", "{" + ns + ":p2}:cancel"}
			ctx, cancel := context.WithCancel(context.Background())
			ready := make(chan bool, 3)
			got := make(chan string, 100)
			done := make(chan error, 1)
			var busy atomic.Int32
			go func() {
				done <- ListenAll(ctx, rdb, channels, 16, func(ok bool) { ready <- ok }, func(p string) {
					if busy.Add(1) != 1 {
						t.Error("handle called twice at once")
					}
					time.Sleep(time.Millisecond)
					busy.Add(-1)
					got <- p
				})
			}()
			require.True(t, <-ready)
			for i := range 5 {
				for c, ch := range channels {
					require.NoError(t, Publish(context.Background(), rdb, ch, fmt.Sprintf("%d:%d", c, i)).Err())
				}
			}
			per := make([][]string, len(channels))
			for range 5 * len(channels) {
				select {
				case p := <-got:
					c := int(p[0] - '0')
					per[c] = append(per[c], p)
				case <-time.After(5 * time.Second):
					t.Fatal("message not handled")
				}
			}
			for c := range channels {
				require.Equal(t, []string{fmt.Sprintf("%d:0", c), fmt.Sprintf("%d:1", c), fmt.Sprintf("%d:2", c), fmt.Sprintf("%d:3", c), fmt.Sprintf("%d:4", c)}, per[c])
			}
			cancel()
			require.NoError(t, <-done)
			require.Empty(t, ready, "subscribed was told once")
		})
	}
}
