package devredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/platform/devredis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestServesRedisWithExpiringKeys(t *testing.T) {
	s, err := devredis.Start()
	require.NoError(t, err)
	defer s.Close()
	opt, err := redis.ParseURL(s.URL())
	require.NoError(t, err)
	c := redis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()

	require.NoError(t, c.Set(ctx, "k", "v", 50*time.Millisecond).Err())
	// Scripts work (the store runs its transitions as Lua).
	n, err := c.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{"n"}).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	// With ClockTTL the key expires on the wall clock: poll with a deadline.
	require.Eventually(t, func() bool {
		return c.Exists(ctx, "k").Val() == 0
	}, 5*time.Second, 10*time.Millisecond)
	s.Close()
	s.Close()
}
