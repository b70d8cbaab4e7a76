package protocol

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Collector reports the protocol streams' state at scrape time: each
// consumer group's lag and pending entries on task.create and the
// response streams, and the size of task.dlq.
type Collector struct {
	rdb               redis.UniversalClient
	keys              Keys
	lag, pending, dlq *prometheus.Desc
}

// NewCollector returns the collector of the streams of k, read through
// rdb; register it on a prometheus.Registerer.
func NewCollector(rdb redis.UniversalClient, k Keys) *Collector {
	return &Collector{rdb: rdb, keys: k,
		lag:     prometheus.NewDesc("taskflow_stream_consumer_lag", "Entries of a stream not yet delivered to a consumer group (counted in the stream, at most 1000).", []string{"stream", "group"}, nil),
		pending: prometheus.NewDesc("taskflow_stream_consumer_pending", "Entries read by a consumer group and not yet acknowledged.", []string{"stream", "group"}, nil),
		dlq:     prometheus.NewDesc("taskflow_stream_dlq_size", "Entries in agent:stream:task.dlq (7-day retention).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.pending
	ch <- c.dlq
}

// Collect implements prometheus.Collector; a stream it cannot read is left
// out of the scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range append(c.keys.Responses(), c.keys.Create()) {
		gs, err := Groups(ctx, c.rdb, s, time.Now())
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
