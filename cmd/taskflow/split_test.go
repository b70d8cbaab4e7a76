package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestSplitDeploymentMetrics: series in a split deployment —
// `taskflow api`, `taskflow worker`, `taskflow orchestrator
// --metrics-addr` and `taskflow service analysis` as separate commands on
// one Redis. The orchestrator's /metrics counts the outcomes it applies
// and the services' durations; the API's counts every transition
// (created, completed, failed per minute) and serves the stream gauges,
// its outcome counters staying empty (docs/notifications.md).
func TestSplitDeploymentMetrics(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	const admin = "split-metrics-admin-key-0123456789"
	env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin}
	apiAddr, metricsAddr := freeAddr(t), freeAddr(t)
	startCommands(t, env,
		[]string{"api", "--addr", apiAddr},
		[]string{"worker"},
		[]string{"orchestrator", "--metrics-addr", metricsAddr},
		[]string{"service", "analysis", "--output-dir", t.TempDir()},
	)
	get := func(url, token string) (int, string) {
		req, err := http.NewRequest("GET", url, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	base := "http://" + apiAddr
	require.Eventually(t, func() bool { c, _ := get(base+"/live", ""); return c == http.StatusOK }, 20*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { c, _ := get("http://"+metricsAddr+"/metrics", ""); return c == http.StatusOK }, 20*time.Second, 20*time.Millisecond)

	req, err := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(`{"task_type":"data.analyze","params":{"csv":"a\n1\n"}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var sub struct {
		ID string `json:"task_id"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&sub))
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode)
	require.Eventually(t, func() bool {
		c, b := get(base+"/api/v1/tasks/"+sub.ID, admin)
		return c == http.StatusOK && strings.Contains(b, `"state":"COMPLETED"`)
	}, 30*time.Second, 20*time.Millisecond)

	// The orchestrator counts an outcome once it has applied all of it
	// (the state first, then the cache, archive and count; the count and
	// the duration are two series, a scrape may fall between them).
	var orch string
	require.Eventually(t, func() bool {
		_, orch = get("http://"+metricsAddr+"/metrics", "")
		return strings.Contains(orch, `taskflow_external_task_outcomes_total{outcome="completed"`) &&
			strings.Contains(orch, `taskflow_external_task_duration_seconds_count{outcome="completed"`)
	}, 10*time.Second, 20*time.Millisecond)
	for _, want := range []string{
		`taskflow_external_task_outcomes_total{outcome="completed",task_type="data.analyze"} 1`,
		`taskflow_external_task_duration_seconds_count{outcome="completed",task_type="data.analyze"} 1`,
		`taskflow_stream_consumer_lag{group="agent-group",stream=`,
		"taskflow_stream_dlq_size 0",
	} {
		require.Contains(t, orch, want, "the orchestrator's /metrics")
	}
	require.Eventually(t, func() bool {
		_, api := get(base+"/metrics", admin)
		return strings.Contains(api, `taskflow_task_transitions_total{from="ACTIVE",task_type="data.analyze",to="COMPLETED"} 1`)
	}, 10*time.Second, 20*time.Millisecond, "the API counts the transition from the event stream")
	_, api := get(base+"/metrics", admin)
	require.Contains(t, api, `taskflow_task_transitions_total{from="",task_type="data.analyze",to="PENDING"} 1`)
	require.Contains(t, api, `taskflow_stream_consumer_lag{group="analysis-service-group",stream=`)
	require.NotContains(t, api, "taskflow_external_task_outcomes_total{", "the API applies no outcome")
}
