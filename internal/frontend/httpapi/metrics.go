package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics are the HTTP server's own series.
type httpMetrics struct {
	latency  *prometheus.HistogramVec
	inflight prometheus.Gauge
	// authFailures counts requests refused for their credentials, by
	// reason (no_credentials, malformed_header, invalid_token): a rise of
	// invalid_token is someone trying tokens.
	authFailures *prometheus.CounterVec
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "taskflow_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern, method and status code.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method", "code"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "taskflow_http_requests_in_flight",
			Help: "HTTP requests being served (SSE streams included).",
		}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskflow_auth_failures_total",
			Help: "Requests refused for their credentials, by reason: no_credentials, malformed_header, invalid_token.",
		}, []string{"reason"}),
	}
	for _, r := range authReasons {
		m.authFailures.WithLabelValues(r) // present at 0 from the start
	}
	for _, c := range []prometheus.Collector{m.latency, m.inflight, m.authFailures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// statusWriter records the status code; it passes Flush and Unwrap through
// so SSE works behind it (http.ResponseController finds the original).
type statusWriter struct {
	http.ResponseWriter
	code  int
	route string // set by the router once the route is known
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument measures every request by its route pattern (not its raw
// path, so that task ids do not explode the label set).
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.metrics.inflight.Inc()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			s.metrics.inflight.Dec()
			route := sw.route
			if route == "" {
				route = "unmatched"
			}
			code := sw.code
			if code == 0 {
				code = http.StatusOK
			}
			s.metrics.latency.WithLabelValues(route, r.Method, strconv.Itoa(code)).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(sw, r)
	})
}
