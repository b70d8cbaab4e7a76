package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/frontend/httpapi"
	"github.com/taskflow/taskflow/internal/plan/planapi"
	"github.com/taskflow/taskflow/internal/platform/config"
)

// apiExtras is what other packages add to the API server: the parts the
// service layer serves results, notifications and plans with, background
// loops, and cleanup.
type apiExtras struct {
	mounts []httpapi.Mount
	// registry is the API's /metrics registry, shared with the packages
	// that add series to it.
	registry *prometheus.Registry
	// orch is the external path's series on registry; a process
	// that also runs the orchestrator (taskflow dev) counts its
	// outcomes here.
	orch     *externalMetrics
	plans    *planapi.Service
	notifier *notify.Notifier
	hub      *notify.Hub
	results  *resultview.Results
	// archive is the PostgreSQL archive (DATABASE_URL), nil without one:
	// the audit trail keeps its entries there too.
	archive *archive.Archive
	run     []func(ctx context.Context) error
	close   []func()
}

// apiMounts builds the parts of other packages that the API's service
// layer serves (the plan runner, session notifications, results). Each
// package adds its block here.
func apiMounts(m *Main, cfg config.Config, rdb redis.UniversalClient, st *store.Store, _ *auth.Authenticator) (apiExtras, error) {
	var x apiExtras
	x.registry = prometheus.NewRegistry()
	x.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The external-service path's series on the API's /metrics:
	// notification delivery latency (observed here, where notifications
	// are delivered) and the streams' consumer lag and DLQ size (read at
	// scrape).
	om, err := newExternalMetrics(x.registry, rdb, st.Namespace())
	if err != nil {
		return x, err
	}
	x.orch = om

	// Plans: POST /api/v1/plans/{name}/execute, synchronous,
	// and the submit-time check of plan tasks.
	if x.plans, err = planapi.Open(planOptions(cfg, m.Logger)); err != nil {
		return x, err
	}
	x.close = append(x.close, func() { _ = x.plans.Close() })

	// Session notifications: polling, WebSocket, SSE; and the
	// unread ones riding on a session's next response (newAPI's
	// httpapi.NotificationsOnResponses, through the service).
	if x.notifier, err = notify.New(rdb, notify.Config{Namespace: st.Namespace(), TTL: cfg.SessionTTL}); err != nil {
		return x, err
	}
	x.hub = notify.NewHub(x.notifier)
	x.run = append(x.run, x.hub.Run)

	// Result retrieval: get_task_result, list_user_tasks.
	res, arc, closeResults, err := openResults(st, cfg)
	if err != nil {
		x.plans.Close()
		return x, err
	}
	x.results, x.archive, x.close = res, arc, append(x.close, closeResults)
	return x, nil
}

// newBreakerControl returns how the operator endpoints reset/open circuit
// breakers: commands published to every worker over Redis pub/sub (each
// worker holds its breakers in memory).
func newBreakerControl(st *store.Store) service.BreakerControl {
	return service.NewRedisBreakerControl(st.Client(), st.Namespace(), nil)
}
