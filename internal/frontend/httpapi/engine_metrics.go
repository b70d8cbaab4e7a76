package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/task"
)

// engineMetrics exposes the engine's state: queue depths, tasks per state
// and breaker states are read from Redis at scrape time (O(1)); transitions
// and task durations are counted from the lifecycle event stream by Run.
// Every API process follows the whole stream, so with several API
// processes aggregate these two series with max(), not sum().
type engineMetrics struct {
	svc     *service.Service
	depth   *prometheus.Desc
	states  *prometheus.Desc
	breaker *prometheus.Desc
	workers *prometheus.Desc
	up      *prometheus.Desc
	// the named queues' (issue 26)
	qPending, qActive, qRate, qAge, qPaused *prometheus.Desc
	transitions                             *prometheus.CounterVec
	durations                               *prometheus.HistogramVec

	mu      sync.Mutex
	started map[string]time.Time // task id → when it became ACTIVE
}

const maxTracked = 200000

func newEngineMetrics(reg prometheus.Registerer, svc *service.Service) (*engineMetrics, error) {
	m := &engineMetrics{
		svc:     svc,
		depth:   prometheus.NewDesc("taskflow_queue_depth", "Tasks waiting per queue.", []string{"queue"}, nil),
		states:  prometheus.NewDesc("taskflow_tasks", "Tasks per state.", []string{"state"}, nil),
		breaker: prometheus.NewDesc("taskflow_circuit_breaker_state", "Worst circuit breaker state per dependency across workers: 0 closed, 1 half-open, 2 open.", []string{"dependency"}, nil),
		workers: prometheus.NewDesc("taskflow_workers", "Live workers (heartbeat within 30s).", nil, nil),
		up:      prometheus.NewDesc("taskflow_redis_up", "1 when Redis answered the scrape's queries.", nil, nil),
		qPending: prometheus.NewDesc("taskflow_named_queue_pending", "Tasks waiting in a named queue, by priority (retry: its retry list).",
			[]string{"queue", "priority"}, nil),
		qActive: prometheus.NewDesc("taskflow_named_queue_active", "Attempts of a named queue's tasks running.", []string{"queue"}, nil),
		qRate: prometheus.NewDesc("taskflow_named_queue_completed_per_minute", "Completions of a named queue's tasks in the last 60 s.",
			[]string{"queue"}, nil),
		qAge: prometheus.NewDesc("taskflow_named_queue_oldest_pending_age_seconds", "How long the task at the head of a named queue has waited.",
			[]string{"queue"}, nil),
		qPaused: prometheus.NewDesc("taskflow_named_queue_paused", "1 while a named queue is paused.", []string{"queue"}, nil),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskflow_task_transitions_total",
			Help: "Task state transitions seen on the lifecycle event stream since this process started.",
		}, []string{"from", "to", "task_type"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "taskflow_task_duration_seconds",
			Help:    "Time from ACTIVE to the attempt's end state, per task type and end state.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"task_type", "to"}),
		started: map[string]time.Time{},
	}
	for _, c := range []prometheus.Collector{m, m.transitions, m.durations} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Describe implements prometheus.Collector.
func (m *engineMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.depth, m.states, m.breaker, m.workers, m.up, m.qPending, m.qActive, m.qRate, m.qAge, m.qPaused} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one pipelined read of Redis.
func (m *engineMetrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	admin := identity.Principal{Admin: true}
	qs, err := m.svc.QueueStatus(ctx, admin)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, 1)
	for q, n := range qs.Queues.ByName() {
		ch <- prometheus.MustNewConstMetric(m.depth, prometheus.GaugeValue, float64(n), q)
	}
	for st, n := range qs.States {
		ch <- prometheus.MustNewConstMetric(m.states, prometheus.GaugeValue, float64(n), string(st))
	}
	if ql, err := m.svc.Queues(ctx, admin); err == nil {
		for _, q := range ql.Queues {
			for prio, n := range map[string]int64{"high": q.Pending.High, "normal": q.Pending.Normal, "low": q.Pending.Low, "retry": q.Retry} {
				ch <- prometheus.MustNewConstMetric(m.qPending, prometheus.GaugeValue, float64(n), q.Name, prio)
			}
			ch <- prometheus.MustNewConstMetric(m.qActive, prometheus.GaugeValue, float64(q.Active), q.Name)
			ch <- prometheus.MustNewConstMetric(m.qRate, prometheus.GaugeValue, q.CompletedPerMin, q.Name)
			ch <- prometheus.MustNewConstMetric(m.qAge, prometheus.GaugeValue, q.OldestPendingAge, q.Name)
			paused := 0.0
			if q.Paused {
				paused = 1
			}
			ch <- prometheus.MustNewConstMetric(m.qPaused, prometheus.GaugeValue, paused, q.Name)
		}
	}
	h := m.svc.Health(ctx)
	ch <- prometheus.MustNewConstMetric(m.workers, prometheus.GaugeValue, float64(h.Components.WorkerCount))
	for dep, st := range h.Components.CircuitBreaker {
		v := 0.0
		switch st {
		case "HALF_OPEN":
			v = 1
		case "OPEN":
			v = 2
		}
		ch <- prometheus.MustNewConstMetric(m.breaker, prometheus.GaugeValue, v, dep)
	}
}

func (m *engineMetrics) observe(e service.Event) {
	m.transitions.WithLabelValues(string(e.From), string(e.To), e.TaskType).Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.To == task.StateActive {
		if len(m.started) >= maxTracked {
			clear(m.started)
		}
		m.started[e.TaskID] = e.At
		return
	}
	if e.From == task.StateActive {
		if t0, ok := m.started[e.TaskID]; ok {
			delete(m.started, e.TaskID)
			m.durations.WithLabelValues(e.TaskType, string(e.To)).Observe(e.At.Sub(t0).Seconds())
		}
	}
}
