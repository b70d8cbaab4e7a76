package notify

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DeliveryMetrics time the notifications' delivery: from a notification's
// creation to the moment a session's reader gets it, by path.
type DeliveryMetrics struct {
	delivery *prometheus.HistogramVec
}

// NewDeliveryMetrics registers the delivery histogram on reg.
func NewDeliveryMetrics(reg prometheus.Registerer) (*DeliveryMetrics, error) {
	m := &DeliveryMetrics{delivery: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "taskflow_notification_delivery_seconds",
		Help:    "Time from a notification's creation to its delivery, by path (websocket, sse, poll, next_interaction).",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300},
	}, []string{"via"})}
	if err := reg.Register(m.delivery); err != nil {
		return nil, err
	}
	return m, nil
}

// Delivered observes n delivered at at through via: the hook of the
// service layer's OnNotificationDelivered.
func (m *DeliveryMetrics) Delivered(via string, n Notification, at time.Time) {
	m.delivery.WithLabelValues(via).Observe(at.Sub(n.Timestamp).Seconds())
}
