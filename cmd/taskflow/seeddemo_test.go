package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestSeedDemo: seed-demo writes the demo data under the prefix only, and
// running it twice leaves the same data (lists are replaced, not appended).
func TestSeedDemo(t *testing.T) {
	t.Parallel()
	c, ns := testredis.Client(t)
	ctx := context.Background()
	prefix := ns + ":"
	require.NoError(t, c.Set(ctx, ns+":unrelated", "keep", 0).Err())
	for range 2 {
		var out bytes.Buffer
		m := &Main{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }, Logger: NewMain().Logger}
		require.NoError(t, m.Run(ctx, []string{"seed-demo", "--redis_url", testredis.URL(), "--key_prefix", prefix}))
		require.Contains(t, out.String(), "seeded 31 demo keys")
	}
	follow, err := c.LRange(ctx, prefix+"follow:1", 0, -1).Result()
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, follow)
	require.Equal(t, "CA", c.HGet(ctx, prefix+"user:123", "country").Val())
	require.Equal(t, "US", c.HGet(ctx, prefix+"user:1007", "country").Val())
	require.Equal(t, []string{"1104", "1105", "1106"}, c.LRange(ctx, prefix+"media:12", 0, -1).Val())
	require.Equal(t, "keep", c.Get(ctx, ns+":unrelated").Val(), "nothing outside the demo keys is touched")
	keys, err := c.Keys(ctx, prefix+"*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 32, "31 demo keys and the unrelated one")
}

func TestSeedDemoBadURL(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m := &Main{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }, Logger: NewMain().Logger}
	err := m.Run(context.Background(), []string{"seed-demo", "--redis-url", "http://nope"})
	require.ErrorContains(t, err, "--redis-url")
}

// seed-demo writes to no Redis the user did not name, and a Redis that does
// not answer is one clear error at once.
func TestSeedDemoNamesItsRedis(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m := &Main{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }, Logger: NewMain().Logger}
	err := m.Run(context.Background(), []string{"seed-demo"})
	require.ErrorContains(t, err, "seed-demo writes only to a Redis you name: give --redis-url or set REDIS_URL")
	t0 := time.Now()
	err = m.Run(context.Background(), []string{"seed-demo", "--redis-url", "redis://127.0.0.1:1/0"})
	require.ErrorContains(t, err, "seed-demo: cannot reach Redis at 127.0.0.1:1")
	require.Less(t, time.Since(t0), 3*time.Second)
	require.Empty(t, out.String(), "no dial error per retry")
}
