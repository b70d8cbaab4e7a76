package outcome_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/task"
)

// TestMetricsObserve: every outcome is counted; a reported duration —
// 0 ms included, a task done within a millisecond — is observed, and an
// outcome without one (outcome.NoDuration: stale, cancelled) is not.
func TestMetricsObserve(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := outcome.NewMetrics(reg)
	require.NoError(t, err)
	tk := &task.Task{Type: "x.run"}
	m.Observe("completed", tk, 0)
	m.Observe("completed", tk, 1500*time.Millisecond)
	m.Observe("stale", tk, outcome.NoDuration)
	m.Observe("cancelled", tk, outcome.NoDuration)

	fams, err := reg.Gather()
	require.NoError(t, err)
	outcomes, durations := map[string]float64{}, map[string]uint64{}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			outcome := ""
			for _, l := range mt.GetLabel() {
				if l.GetName() == "outcome" {
					outcome = l.GetValue()
				}
			}
			switch f.GetName() {
			case "taskflow_external_task_outcomes_total":
				outcomes[outcome] = mt.GetCounter().GetValue()
			case "taskflow_external_task_duration_seconds":
				durations[outcome] = mt.GetHistogram().GetSampleCount()
			}
		}
	}
	require.Equal(t, map[string]float64{"completed": 2, "stale": 1, "cancelled": 1}, outcomes)
	require.Equal(t, map[string]uint64{"completed": 2}, durations)
}
