package redisconn_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestRunScripts: calls of a script the server has never seen (a body of
// its own, so its NOSCRIPT path runs) are run all the same, each with its
// reply and error in order.
func TestRunScripts(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctx := context.Background()
	sc := redis.NewScript("-- " + uuid.NewString() + "\nif ARGV[1] == 'bad' then return redis.error_reply('bad') end\nreturn redis.call('INCRBY', KEYS[1], ARGV[1])")
	key := "{" + ns + "}:n"
	for round := 0; round < 2; round++ { // first NOSCRIPT, then cached
		got := redisconn.RunScripts(ctx, rdb, sc, []redisconn.ScriptCall{
			{Keys: []string{key}, Args: []any{1}}, {Keys: []string{key}, Args: []any{"bad"}}, {Keys: []string{key}, Args: []any{2}}})
		require.Len(t, got, 3)
		n, err := got[0].Int64()
		require.NoError(t, err)
		require.EqualValues(t, 1+3*round, n)
		require.ErrorContains(t, got[1].Err(), "bad")
		n, err = got[2].Int64()
		require.NoError(t, err)
		require.EqualValues(t, 3+3*round, n)
	}
}

// TestEvalStrings: a script the server has never seen is loaded and run;
// its strings come back in order, a false element as "", an integer as
// its digits; a script's error is the call's.
func TestEvalStrings(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctx := context.Background()
	sc := redis.NewScript("-- " + uuid.NewString() + "\nif ARGV[1] == 'bad' then return redis.error_reply('bad') end\n" +
		"return {ARGV[1], false, redis.call('INCRBY', KEYS[1], 2), KEYS[1]}")
	key := "{" + ns + "}:n"
	for round := 0; round < 2; round++ { // first NOSCRIPT, then cached
		got, err := redisconn.EvalStrings(ctx, rdb, sc, append(redisconn.EvalCmd(sc, []string{key}, 1), "a b"))
		require.NoError(t, err)
		require.Equal(t, []string{"a b", "", strconv.Itoa(2 + 2*round), key}, got)
	}
	_, err := redisconn.EvalStrings(ctx, rdb, sc, append(redisconn.EvalCmd(sc, []string{key}, 1), "bad"))
	require.ErrorContains(t, err, "bad")

	// EvalInt: the same for a script that answers an integer
	si := redis.NewScript("-- " + uuid.NewString() + "\nreturn redis.call('INCRBY', KEYS[1], ARGV[1])")
	for round := 0; round < 2; round++ {
		n, err := redisconn.EvalInt(ctx, rdb, si, append(redisconn.EvalCmd(si, []string{key}, 1), 10))
		require.NoError(t, err)
		require.EqualValues(t, 14+10*round, n)
	}
}

// TestBoxed: a run of equal values is boxed once (no allocation for the
// repeats); a new value, the zero value too, is its own.
func TestBoxed(t *testing.T) { // not parallel: AllocsPerRun
	var b redisconn.Boxed[string]
	require.Equal(t, "", b.Of(""))
	key := strings.Repeat("k", 40)
	require.Equal(t, key, b.Of(key))
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = b.Of(key) }), "a repeat is the value boxed before")
	require.Equal(t, "b", b.Of("b"))
	var n redisconn.Boxed[int]
	require.Equal(t, 0, n.Of(0))
	require.Equal(t, 300, n.Of(300))
	require.Equal(t, 301, n.Of(301))
}
