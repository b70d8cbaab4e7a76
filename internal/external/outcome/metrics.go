package outcome

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/taskflow/taskflow/task"
)

// Metrics count the outcomes the consumer applies, by task type and kind,
// and the attempts' durations as the services report them. Per-minute
// rates are PromQL's rate() over the counters.
type Metrics struct {
	outcomes *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the outcome series on reg. A process that applies
// no outcome (the API) may register them too: they stay without samples.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskflow_external_task_outcomes_total",
			Help: "Outcomes of external-service tasks applied by the orchestrator (completed, retried, dead_lettered, cancelled, timeout, stale).",
		}, []string{"task_type", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "taskflow_external_task_duration_seconds",
			Help:    "Duration of external-service attempts as the service reports it (duration_ms).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 14),
		}, []string{"task_type", "outcome"}),
	}
	for _, c := range []prometheus.Collector{m.outcomes, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// NoDuration is Config.Observe's duration for an outcome that carries none
// (stale, cancelled). A reported 0 ms is a duration: a task done within a
// millisecond counts in the histogram.
const NoDuration time.Duration = -1

// Observe is Config.Observe.
func (m *Metrics) Observe(kind string, t *task.Task, d time.Duration) {
	m.outcomes.WithLabelValues(t.Type, kind).Inc()
	if d >= 0 {
		m.duration.WithLabelValues(t.Type, kind).Observe(d.Seconds())
	}
}
