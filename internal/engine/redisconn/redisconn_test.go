package redisconn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

func TestSingleServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := Open(ctx, testredis.StartServer(t).URL(), Options{})
	require.NoError(t, err)
	defer c.Close()
	_, isSingle := c.(*redis.Client)
	require.True(t, isSingle)
	require.NoError(t, c.Ping(ctx).Err())
	require.GreaterOrEqual(t, c.(*redis.Client).Options().PoolSize, 64)
}

// A Redis with an ACL user: the URL's user and password are used, and a
// wrong password is an error at Open that does not print the password.
func TestACLUser(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	ctx := context.Background()
	admin := srv.Client()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "tf", "on", ">s3cret-pass", "~*", "+@all").Err())
	c, err := Open(ctx, "redis://tf:s3cret-pass@"+srv.Addr+"/0", Options{})
	require.NoError(t, err)
	defer c.Close()
	who, err := c.Do(ctx, "ACL", "WHOAMI").Text()
	require.NoError(t, err)
	require.Equal(t, "tf", who)

	_, err = Open(ctx, "redis://tf:wrong-pass@"+srv.Addr+"/0", Options{})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "wrong-pass")
}

func TestBadURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "http://x", "redis://h:1?nonsense=1", "redis://%zz:secret@h"} {
		_, err := Open(context.Background(), u, Options{NoPing: true})
		require.ErrorIs(t, err, ErrURL, u)
		require.NotContains(t, err.Error(), "secret", u)
	}
	// rediss:// is TLS in both modes
	opt, _, err := options("rediss://h:6380/0", Options{})
	require.NoError(t, err)
	require.NotNil(t, opt.(*redis.Options).TLSConfig)
	opt, _, err = options("rediss://h1:1?addr=h2:2", Options{})
	require.NoError(t, err)
	require.NotNil(t, opt.(*redis.ClusterOptions).TLSConfig)
	require.Equal(t, []string{"h1:1", "h2:2"}, opt.(*redis.ClusterOptions).Addrs)
}

// A context deadline bounds a call to a Redis that stalls: the answer (an
// error) comes at the deadline, not after the client's read timeout and
// retries.
func TestDeadlineBoundsAStall(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	ctx := context.Background()
	c, err := Open(ctx, srv.URL(), Options{})
	require.NoError(t, err)
	defer c.Close()
	srv.Pause()
	defer srv.Resume()
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err = c.Get(dctx, "k").Err()
	took := time.Since(t0)
	require.Error(t, err)
	require.Less(t, took, 1500*time.Millisecond, "a 300 ms deadline answered after %s", took)
}

// On a local three-master cluster the URL with addr parameters opens a
// cluster client that reaches every shard, and keys of one hash tag stay in
// one slot for scripts.
func TestCluster(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	ctx := context.Background()
	require.True(t, IsCluster(cl.URL()))
	c, err := Open(ctx, cl.URL(), Options{})
	require.NoError(t, err)
	defer c.Close()
	cc, ok := c.(*redis.ClusterClient)
	require.True(t, ok, "%T", c)
	for i := range 30 {
		require.NoError(t, cc.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err())
	}
	var shards atomic.Int32 // ForEachMaster calls in parallel
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		if m.DBSize(ctx).Val() > 0 {
			shards.Add(1)
		}
		return nil
	}))
	require.EqualValues(t, 3, shards.Load(), "30 keys spread over the three masters")
	// one hash tag: a multi-key script runs
	n, err := cc.Eval(ctx, `redis.call('SET', KEYS[1], 1); redis.call('SET', KEYS[2], 2); return redis.call('EXISTS', KEYS[1], KEYS[2])`,
		[]string{"{ns}:a", "{ns}:b"}).Int()
	require.NoError(t, err)
	require.Equal(t, 2, n)
	// one seed with cluster=true is a cluster client too
	c1, err := Open(ctx, "redis://"+cl.Nodes[0].Addr+"?cluster=true", Options{})
	require.NoError(t, err)
	defer c1.Close()
	_, ok = c1.(*redis.ClusterClient)
	require.True(t, ok)
	require.Equal(t, "7", c1.Get(ctx, "k7").Val())
	addrs, err := Addrs(cl.URL())
	require.NoError(t, err)
	require.Equal(t, 3, len(strings.Split(addrs, ",")))
	require.False(t, errors.Is(err, ErrURL))
}
