package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// Open applies the settings the flags may have changed after Load: the
// namespace and the session TTL reach the store.
func TestOpenFollowsTheFlags(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	env := map[string]string{"REDIS_URL": testredis.URL(), "MAX_RETRIES": "0", "MAX_TASK_AGE": "0"}
	cfg, err := app.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	cfg.Namespace, cfg.SessionTTL = ns, 90*time.Minute // as --namespace and --session-ttl would
	a, err := app.Open(context.Background(), cfg, nil)
	require.NoError(t, err)
	defer a.Close()
	sc := a.Store.Config()
	require.Equal(t, ns, sc.Namespace)
	require.Equal(t, 90*time.Minute, sc.SessionIndexTTL)
	require.Zero(t, *sc.DefaultMaxRetries, "MAX_RETRIES=0: no retries")
	require.Zero(t, *sc.MaxTaskAge, "MAX_TASK_AGE=0: no age limit")
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(func(string) string { return "" })
	require.NoError(t, err)
	_, err = app.Open(context.Background(), cfg, nil)
	require.ErrorContains(t, err, "REDIS_URL is not set")
	cfg.RedisURL = "redis://127.0.0.1:1/0"
	_, err = app.Open(context.Background(), cfg, nil)
	require.ErrorContains(t, err, "does not answer")
	_, err = app.Load(func(k string) string { return map[string]string{"TASKFLOW_LEASE": "x", "TASKFLOW_SESSION_TTL": "y"}[k] })
	require.ErrorContains(t, err, "TASKFLOW_LEASE")
	require.ErrorContains(t, err, "TASKFLOW_SESSION_TTL", "every wrong variable is named")
}
