package orchestrator

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/keyspace"
	"github.com/taskflow/taskflow/internal/notify"
	"github.com/taskflow/taskflow/internal/stream"
	"github.com/taskflow/taskflow/internal/task"
)

// Metrics are metrics of the external path. Per-minute rates
// are PromQL's rate() over the counters.
type Metrics struct {
	outcomes *prometheus.CounterVec
	duration *prometheus.HistogramVec
	delivery *prometheus.HistogramVec
	gaps     *prometheus.CounterVec
	streams  *streamCollector
}

// NewMetrics registers the metrics on reg. rdb and namespace feed the
// stream gauges (consumer lag, pending, DLQ stream size), read at scrape.
func NewMetrics(reg prometheus.Registerer, rdb redis.UniversalClient, namespace keyspace.Namespace) (*Metrics, error) {
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
		delivery: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "taskflow_notification_delivery_seconds",
			Help:    "Time from a notification's creation to its delivery, by path (websocket, sse, poll, next_interaction).",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300},
		}, []string{"via"}),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskflow_event_stream_gaps_total",
			Help: "Times a lifecycle-event follower (archiver, notifier) found events trimmed from the capped stream before it read them and swept the finished-task indexes instead.",
		}, []string{"follower"}),
		streams: &streamCollector{rdb: rdb, keys: stream.NewKeys(namespace),
			lag:     prometheus.NewDesc("taskflow_stream_consumer_lag", "Entries of a stream not yet read by a consumer group.", []string{"stream", "group"}, nil),
			pending: prometheus.NewDesc("taskflow_stream_consumer_pending", "Entries read by a consumer group and not yet acknowledged.", []string{"stream", "group"}, nil),
			dlq:     prometheus.NewDesc("taskflow_stream_dlq_size", "Entries in agent:stream:task.dlq (7-day retention).", nil, nil),
		},
	}
	for _, c := range []prometheus.Collector{m.outcomes, m.duration, m.delivery, m.gaps, m.streams} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, f := range []string{"archiver", "notifier"} {
		m.gaps.WithLabelValues(f) // exported at 0 before the first gap
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

// Gap returns the OnGap hook of the follower named follower ("archiver",
// "notifier"): each call counts one gap.
func (m *Metrics) Gap(follower string) func() {
	c := m.gaps.WithLabelValues(follower)
	return c.Inc
}

// Delivered is service.Config.OnNotificationDelivered (and the notify middleware's hook).
func (m *Metrics) Delivered(via string, n notify.Notification, at time.Time) {
	m.delivery.WithLabelValues(via).Observe(at.Sub(n.Timestamp).Seconds())
}

// streamCollector reads stream state at scrape time.
type streamCollector struct {
	rdb               redis.UniversalClient
	keys              stream.Keys
	lag, pending, dlq *prometheus.Desc
}

func (c *streamCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.pending
	ch <- c.dlq
}

func (c *streamCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range append(c.keys.Responses(), c.keys.Create()) {
		gs, err := c.rdb.XInfoGroups(ctx, s).Result()
		if err != nil {
			continue
		}
		for _, g := range gs {
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(g.Lag), s, g.Name)
			ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(g.Pending), s, g.Name)
		}
	}
	if n, err := c.rdb.XLen(ctx, c.keys.DLQ()).Result(); err == nil {
		ch <- prometheus.MustNewConstMetric(c.dlq, prometheus.GaugeValue, float64(n))
	}
}
