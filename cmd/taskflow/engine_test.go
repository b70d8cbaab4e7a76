package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/app"
	"github.com/taskflow/taskflow/internal/retry"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/testredis"
	"github.com/taskflow/taskflow/task"
)

func TestEngineFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	e, err := app.EngineFromEnv(get, "ns1")
	require.NoError(t, err)
	require.Equal(t, "ns1", e.Store.Namespace)
	require.Nil(t, e.Store.DefaultMaxRetries, "unset keeps the package default")

	env = map[string]string{"MAX_RETRIES": "5", "MAX_TASK_AGE": "90", "CIRCUIT_TIMEOUT": "2m", "DEFAULT_RETRY_RATIO": "0.25",
		"TASKFLOW_LEASE": "10s", "TASKFLOW_RETRY_SCALE": "0.001", "RETRY_QUEUE_WARNING": "10", "RETRY_QUEUE_CRITICAL": "20"}
	e, err = app.EngineFromEnv(get, "ns1")
	require.NoError(t, err)
	require.Equal(t, 5, *e.Store.DefaultMaxRetries)
	require.Equal(t, 90*time.Second, *e.Store.MaxTaskAge)
	require.Equal(t, 2*time.Minute, e.Worker.Breaker.Timeout)
	require.Equal(t, 0.25, *e.Store.RetryRatio)
	require.Equal(t, 10*time.Second, e.Worker.Lease)
	require.Equal(t, 0.001, e.Worker.Retry.Scale)
	require.Nil(t, e.Worker.Retry.Schedules, "unset: schedules")

	env = map[string]string{"TASKFLOW_RETRY_SCHEDULES": "RateLimitError=30,90s; Default=1"}
	e, err = app.EngineFromEnv(get, "ns1")
	require.NoError(t, err)
	require.Equal(t, []time.Duration{30 * time.Second, 90 * time.Second}, e.Worker.Retry.Schedules[task.ErrTypeRateLimit])
	require.Equal(t, []time.Duration{time.Second}, e.Worker.Retry.Schedules[task.ErrTypeDefault])
	require.Equal(t, retry.DefaultSchedules()[task.ErrTypeNetworkTimeout], e.Worker.Retry.Schedules[task.ErrTypeNetworkTimeout])
	env = map[string]string{"TASKFLOW_RETRY_SCHEDULES": "Default=soon"}
	_, err = app.EngineFromEnv(get, "ns1")
	require.ErrorContains(t, err, `TASKFLOW_RETRY_SCHEDULES: retry schedules: Default: delay "soon"`)

	for name, val := range map[string]string{
		"MAX_RETRIES":          "three",
		"MAX_TASK_AGE":         "forever",
		"DEFAULT_RETRY_RATIO":  "1.5",
		"RETRY_QUEUE_CRITICAL": "-1",
		"TASKFLOW_LEASE":       "1ms",
	} {
		env = map[string]string{name: val}
		_, err := app.EngineFromEnv(get, "ns1")
		require.Error(t, err, name)
		if name != "DEFAULT_RETRY_RATIO" && name != "RETRY_QUEUE_CRITICAL" && name != "TASKFLOW_LEASE" {
			require.ErrorContains(t, err, name)
		}
	}
}

// TestEngineFromEnvExplicitZero: 0 in a variable is never silently the
// default: the store's optional settings are unset only when nil, so where
// 0 means something (no retries, no age rule, no retry-first share) it
// reaches the store as 0; where it does not, it is refused naming the
// variable.
func TestEngineFromEnvExplicitZero(t *testing.T) {
	t.Parallel()
	env := map[string]string{"MAX_RETRIES": "0", "DEFAULT_RETRY_RATIO": "0", "RETRY_RATIO_WARNING": "0.0",
		"RETRY_RATIO_CRITICAL": "0", "MAX_TASK_AGE": "0"}
	e, err := app.EngineFromEnv(func(k string) string { return env[k] }, "ns1")
	require.NoError(t, err)
	cfg := e.Store.WithDefaults()
	require.NoError(t, cfg.Validate())
	require.Zero(t, *cfg.DefaultMaxRetries, "no retries: a set 0 stays 0")
	require.Zero(t, *cfg.RetryRatio)
	require.Zero(t, *cfg.RetryRatioWarning)
	require.Zero(t, *cfg.RetryRatioCritical)
	require.Zero(t, *cfg.MaxTaskAge, "0 turns the age rule off")

	for _, name := range []string{"RETRY_QUEUE_WARNING", "CIRCUIT_FAILURE_THRESHOLD", "CIRCUIT_VOLUME_THRESHOLD",
		"CIRCUIT_TIMEOUT", "TASKFLOW_LEASE", "TASKFLOW_TASK_TIMEOUT", "TASKFLOW_FETCH_BATCH", "TASKFLOW_RETRY_SCALE",
		"TASKFLOW_SCHEDULER_INTERVAL"} {
		env = map[string]string{name: "0"}
		_, err := app.EngineFromEnv(func(k string) string { return env[k] }, "ns1")
		require.ErrorContains(t, err, name+": \"0\" must be more than 0", name)
	}
	for name, val := range map[string]string{"MAX_RETRIES": "-1", "DEFAULT_RETRY_RATIO": "-0.1", "RETRY_RATIO_CRITICAL": "2"} {
		env = map[string]string{name: val}
		_, err := app.EngineFromEnv(func(k string) string { return env[k] }, "ns1")
		require.ErrorContains(t, err, name, val)
	}
	// a value that does not parse is reported once
	env = map[string]string{"TASKFLOW_LEASE": "forever"}
	_, err = app.EngineFromEnv(func(k string) string { return env[k] }, "ns1")
	require.EqualError(t, err, `TASKFLOW_LEASE: "forever" is not seconds (30, 0.5) or a duration (90s, 1h)`)
}

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
	eng, err := app.EngineFromEnv(m.Getenv, ns)
	require.NoError(t, err)
	st, err := store.New(rdb, eng.Store)
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
