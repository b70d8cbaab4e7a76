package follower

import "github.com/prometheus/client_golang/prometheus"

// Metrics count the gaps the followers find: lifecycle events trimmed
// from the capped stream before a follower read them.
type Metrics struct {
	gaps *prometheus.CounterVec
}

// NewMetrics registers the gap counter on reg, exported at 0 for the
// archiver and the notifier before their first gap.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{gaps: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskflow_event_stream_gaps_total",
		Help: "Times a lifecycle-event follower (archiver, notifier) found events trimmed from the capped stream before it read them and swept the finished-task indexes instead.",
	}, []string{"follower"})}
	if err := reg.Register(m.gaps); err != nil {
		return nil, err
	}
	for _, f := range []string{"archiver", "notifier"} {
		m.gaps.WithLabelValues(f)
	}
	return m, nil
}

// Gap returns the OnGap hook of the follower named follower ("archiver",
// "notifier"): each call counts one gap.
func (m *Metrics) Gap(follower string) func() {
	return m.gaps.WithLabelValues(follower).Inc
}
