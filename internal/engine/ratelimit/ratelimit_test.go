package ratelimit_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/ratelimit"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock only moves when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type testBundle struct {
	clock    *fakeClock
	limiters []*ratelimit.Limiter // one per "worker", each on its own connection
}

// setup gives n limiters sharing one window, each with its own Redis client
// (as separate worker processes would have).
func setup(t *testing.T, n int, cfg ratelimit.Config) *testBundle {
	t.Helper()
	rdb, ns := testredis.Client(t)
	b := &testBundle{clock: &fakeClock{now: time.UnixMilli(1_700_000_000_000)}}
	cfg.Namespace, cfg.Clock = keyspace.MustParse(ns), b.clock
	for i := range n {
		c := rdb
		if i > 0 {
			c = testredis.Another(t)
		}
		l, err := ratelimit.New(c, cfg)
		require.NoError(t, err)
		b.limiters = append(b.limiters, l)
	}
	return b
}

// burst has every limiter try perTry times at once and counts the outcomes.
func (b *testBundle) burst(t *testing.T, perLimiter int) (granted int, waits []time.Duration) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, l := range b.limiters {
		for range perLimiter {
			wg.Go(func() {
				err := l.Acquire(context.Background())
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					granted++
					return
				}
				var le *ratelimit.LimitedError
				require.ErrorAs(t, err, &le)
				require.ErrorIs(t, err, ratelimit.ErrLimited)
				waits = append(waits, le.Wait)
			})
		}
	}
	wg.Wait()
	return granted, waits
}

func TestSharedLimitAcrossWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t, 4, ratelimit.Config{Limit: 10, Interval: time.Second, Name: "openrouter"})

	granted, waits := b.burst(t, 8) // 32 attempts, 10 allowed
	require.Equal(t, 10, granted)
	require.Len(t, waits, 22)
	for _, w := range waits {
		require.Equal(t, time.Second, w, "all grants happened at the same instant")
	}

	b.clock.Advance(600 * time.Millisecond)
	granted, waits = b.burst(t, 2)
	require.Zero(t, granted, "the window still holds 10 grants")
	for _, w := range waits {
		require.Equal(t, 400*time.Millisecond, w)
	}

	b.clock.Advance(400 * time.Millisecond)
	granted, _ = b.burst(t, 5)
	require.Equal(t, 10, granted, "the first 10 grants left the window")
}

func TestSlidingWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, 2, ratelimit.Config{Limit: 5, Interval: time.Second})
	ctx := context.Background()
	l0, l1 := b.limiters[0], b.limiters[1]
	for range 3 {
		require.NoError(t, l0.Acquire(ctx))
	}
	b.clock.Advance(400 * time.Millisecond)
	require.NoError(t, l1.Acquire(ctx))
	require.NoError(t, l1.Acquire(ctx))
	var le *ratelimit.LimitedError
	require.ErrorAs(t, l0.Acquire(ctx), &le)
	require.Equal(t, 600*time.Millisecond, le.Wait)

	b.clock.Advance(600 * time.Millisecond) // the 3 from t0 leave
	for range 3 {
		require.NoError(t, l0.Acquire(ctx))
	}
	require.ErrorAs(t, l1.Acquire(ctx), &le)
	require.Equal(t, 400*time.Millisecond, le.Wait, "the two from t0+400ms stay until t0+1400ms")
}

// TestNeverMoreThanLimitInAnyWindow drives random clocks steps and bursts
// from several workers and checks the limit's promise on the grant log.
func TestNeverMoreThanLimitInAnyWindow(t *testing.T) {
	t.Parallel()
	const limit, interval = 7, 500 * time.Millisecond
	b := setup(t, 3, ratelimit.Config{Limit: limit, Interval: interval})
	rng := rand.New(rand.NewPCG(1, 2))
	var grants []time.Time
	for range 60 {
		b.clock.Advance(time.Duration(rng.IntN(200)) * time.Millisecond)
		now := b.clock.Now()
		g, waits := b.burst(t, 1+rng.IntN(4))
		for range g {
			grants = append(grants, now)
		}
		for _, w := range waits {
			require.Positive(t, w)
			require.LessOrEqual(t, w, interval)
		}
	}
	sort.Slice(grants, func(i, j int) bool { return grants[i].Before(grants[j]) })
	require.Greater(t, len(grants), limit*5, "the test exercised the limit")
	for i := range grants {
		j := i
		for j < len(grants) && grants[j].Sub(grants[i]) < interval {
			j++
		}
		require.LessOrEqual(t, j-i, limit, "grants in [%s, +%s)", grants[i].Format(time.StampMilli), interval)
	}
}

func TestDisabledNeedsNoRedis(t *testing.T) {
	t.Parallel()
	l, err := ratelimit.New(nil, ratelimit.Config{})
	require.NoError(t, err)
	for range 100 {
		require.NoError(t, l.Acquire(context.Background()))
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	_, err := ratelimit.New(nil, ratelimit.Config{Limit: -1})
	require.ErrorContains(t, err, "negative")
	_, err = ratelimit.New(nil, ratelimit.Config{Limit: 1, Interval: time.Microsecond})
	require.ErrorContains(t, err, "interval")
	_, err = ratelimit.New(nil, ratelimit.Config{Limit: 1})
	require.ErrorContains(t, err, "Redis client")
	nowhere := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer nowhere.Close()
	_, err = ratelimit.New(nowhere, ratelimit.Config{Limit: 1})
	require.ErrorContains(t, err, "Namespace is required", "no second default of the namespace")
}

func TestRedisDownIsAnError(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	l, err := ratelimit.New(srv.Client(), ratelimit.Config{Limit: 1, Namespace: keyspace.MustParse("down")})
	require.NoError(t, err)
	require.NoError(t, l.Acquire(context.Background()))
	srv.Stop()
	err = l.Acquire(context.Background())
	require.Error(t, err)
	require.NotErrorIs(t, err, ratelimit.ErrLimited)
}

// BenchmarkAcquire measures one grant (one script call) on the shared
// Redis, from parallel goroutines; the limit is high enough never to bite.
func BenchmarkAcquire(b *testing.B) {
	rdb, ns := testredis.Client(b)
	l, err := ratelimit.New(rdb, ratelimit.Config{Limit: 1 << 30, Interval: 10 * time.Millisecond, Namespace: keyspace.MustParse(ns)})
	require.NoError(b, err)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Acquire(context.Background()); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestAcquireForSubjects: each subject has its own window; one subject at
// its limit does not limit another.
func TestAcquireForSubjects(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	clk := clock.NewFake(time.Unix(1000, 0))
	l, err := ratelimit.New(rdb, ratelimit.Config{Limit: 2, Interval: time.Minute, Name: "sessions", Namespace: keyspace.MustParse(ns), Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, l.AcquireFor(ctx, "10.0.0.1"))
	require.NoError(t, l.AcquireFor(ctx, "10.0.0.1"))
	err = l.AcquireFor(ctx, "10.0.0.1")
	var le *ratelimit.LimitedError
	require.ErrorAs(t, err, &le)
	require.Equal(t, time.Minute, le.Wait)
	require.NoError(t, l.AcquireFor(ctx, "::1"), "another subject has its own window")
	clk.Advance(time.Minute + time.Millisecond)
	require.NoError(t, l.AcquireFor(ctx, "10.0.0.1"), "the window slid")
	for _, bad := range []string{"", "{x}", strings.Repeat("a", ratelimit.MaxSubjectLen+1)} {
		require.Error(t, l.AcquireFor(ctx, bad))
		require.False(t, errors.Is(l.AcquireFor(ctx, bad), ratelimit.ErrLimited))
	}
}
