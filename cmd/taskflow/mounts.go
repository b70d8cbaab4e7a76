package main

import (
	"context"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/config"
	"github.com/taskflow/taskflow/internal/httpapi"
	"github.com/taskflow/taskflow/internal/notify"
	"github.com/taskflow/taskflow/internal/orchestrator"
	"github.com/taskflow/taskflow/internal/planapi"
	"github.com/taskflow/taskflow/internal/service"
	"github.com/taskflow/taskflow/internal/store"
)

// apiExtras is what other packages add to the API server: handlers to
// mount, a middleware around every route, background loops, and cleanup.
type apiExtras struct {
	mounts     []httpapi.Mount
	middleware func(http.Handler) http.Handler
	// registry is the API's /metrics registry, shared with the packages
	// that add series to it.
	registry *prometheus.Registry
	// orch is spec 003 §9's series on registry; a process that also runs
	// the orchestrator (taskflow dev) counts its outcomes here.
	orch  *orchestrator.Metrics
	run   []func(ctx context.Context) error
	close []func()
}

// apiMounts builds the HTTP handlers of other packages that the API
// serves (the plan API, session notifications). Each package adds its
// block here.
func apiMounts(m *Main, cfg config.Config, rdb redis.UniversalClient, st *store.Store, au *auth.Authenticator) (apiExtras, error) {
	var x apiExtras
	x.registry = prometheus.NewRegistry()
	x.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Spec 003 §9's series on the API's /metrics: notification delivery
	// latency (observed here, where notifications are delivered) and the
	// streams' consumer lag and DLQ size (read at scrape).
	om, err := orchestrator.NewMetrics(x.registry, rdb, cfg.Namespace)
	if err != nil {
		return x, err
	}
	x.orch = om

	// Plans (spec 002): POST /api/v1/plans/{name}/execute, synchronous.
	pl, err := planapi.FromEnv(m.Getenv, m.Logger)
	if err != nil {
		return x, err
	}
	x.close = append(x.close, func() { _ = pl.Close() })
	method, path, _ := strings.Cut(planapi.Route, " ")
	x.mounts = append(x.mounts, httpapi.Mount{Method: method, Path: path, Access: "session", Handler: pl.Handler(),
		Summary: "Run a plan synchronously (spec 002); body: rankd's request", Tag: "plans"})

	// Session notifications (spec 003): polling, WebSocket, SSE; and the
	// unread ones riding on a session's next response.
	n, err := notify.New(rdb, notify.Config{Namespace: cfg.Namespace, TTL: cfg.SessionTTL})
	if err != nil {
		return x, err
	}
	hub := notify.NewHub(n)
	x.run = append(x.run, hub.Run)
	nh, err := notify.NewHandler(n, notify.HandlerConfig{Auth: au, Hub: hub, Logger: m.Logger, OnDelivered: om.Delivered})
	if err != nil {
		return x, err
	}
	for _, p := range []struct{ path, summary string }{
		{notify.PathPoll, "Poll the session's notifications"},
		{notify.PathWebSocket, "The session's notifications over WebSocket (?access_token= for browsers)"},
		{notify.PathSSE, "The session's notifications over Server-Sent Events (?access_token= for EventSource)"},
	} {
		// The handler authenticates itself: browsers' WebSocket and
		// EventSource clients can only pass the token in the query.
		x.mounts = append(x.mounts, httpapi.Mount{Method: "GET", Path: p.path, Access: "public", SelfAuth: true, Handler: nh, Summary: p.summary, Tag: "notifications"})
	}
	x.middleware = n.Middleware(om.Delivered)
	return x, nil
}

// newBreakerControl returns how the operator endpoints reset/open circuit
// breakers: commands published to every worker over Redis pub/sub (each
// worker holds its breakers in memory).
func newBreakerControl(st *store.Store) service.BreakerControl {
	return service.NewRedisBreakerControl(st.Client(), st.Config().Namespace, nil)
}
