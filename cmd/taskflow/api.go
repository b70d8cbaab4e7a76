package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/cron"
	"github.com/taskflow/taskflow/internal/engine/depend"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/ratelimit"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/frontdoor/audit"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/frontend/httpapi"
	"github.com/taskflow/taskflow/internal/plan/planapi"
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/platform/config"
	"github.com/taskflow/taskflow/internal/platform/version"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/internal/tasktypes/builtin"
	"github.com/taskflow/taskflow/internal/tasktypes/summarize"
)

func init() {
	register("api", func(m *Main) *cobra.Command {
		cfg, envErr := m.config()
		cmd := &cobra.Command{
			Use:   "api",
			Short: "Serve the HTTP API (any number of API processes may share one Redis)",
			Long: `Serve the HTTP API on TASKFLOW_ADDR (default :8080) against REDIS_URL.
Refuses to start without TASKFLOW_ADMIN_KEY unless --insecure is given (then
every request without credentials acts as the admin).`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if envErr != nil {
					return envErr
				}
				if err := cfg.Validate(); err != nil {
					return err
				}
				if cfg.RedisURL == "" {
					return errors.New("REDIS_URL is not set: `taskflow api` needs a Redis (use `taskflow dev` for an embedded one)")
				}
				if cfg.AdminKey == "" && !cfg.Insecure {
					return errors.New("TASKFLOW_ADMIN_KEY is not set: refusing to serve operator endpoints without an admin key (set it, or pass --insecure to run open)")
				}
				ap, err := app.Open(cmd.Context(), cfg, m.Logger)
				if err != nil {
					return err
				}
				defer ap.Close()
				tuneGC(cfg.GOGC)
				a, err := newAPI(m, ap, cfg.Insecure && cfg.AdminKey == "")
				if err != nil {
					return err
				}
				defer a.close()
				ln, err := net.Listen("tcp", cfg.Addr)
				if err != nil {
					return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
				}
				if cfg.AdminKey == "" {
					m.Logger.Warn("running open (--insecure): requests without credentials act as the admin")
				}
				m.Logger.Info("taskflow api listening", "addr", ln.Addr().String())
				return a.serve(cmd.Context(), ln, cfg.ShutdownGrace)
			},
		}
		cfg.BindFlags(cmd.Flags(), config.ServerFlags...)
		return cmd
	})
}

// apiGCPercent is the GOGC the API processes use when GOGC is unset: the
// live heap of an API process is a few MB while it allocates ~6 KB per
// request, so the default (100) collects many times a second under load;
// 400 measured ≈ 15 % more submits/s (docs/benchmarks.md).
const apiGCPercent = 400

// tuneGC applies apiGCPercent unless the operator set GOGC (gogc, the
// configuration's copy of it; the Go runtime has read it already).
func tuneGC(gogc string) {
	if gogc == "" {
		debug.SetGCPercent(apiGCPercent)
	}
}

// apiProc is an API server with what it owns.
type apiProc struct {
	svc    *service.Service
	auth   *auth.Authenticator
	srv    *httpapi.Server
	st     *store.Store
	extras apiExtras
	log    *slog.Logger
	// closeMCP ends the MCP sessions (their streams) when shutdown starts.
	closeMCP func()
}

// newAPI wires auth, service and HTTP server on the process's app (its
// Redis client and store).
func newAPI(m *Main, ap *app.App, open bool) (*apiProc, error) {
	cfg, rdb, st := ap.Config, ap.Redis, ap.Store
	au, err := auth.New(rdb, auth.Config{Namespace: st.Namespace(), AdminKey: cfg.AdminKey, Open: open, SessionTTL: cfg.SessionTTL})
	if err != nil {
		return nil, err
	}
	// POST /api/v1/sessions per client address, shared by every API process
	sessionLimit, err := ratelimit.New(rdb, ratelimit.Config{Limit: *cfg.SessionRateLimit, Interval: time.Minute,
		Name: "sessions", Namespace: st.Namespace()})
	if err != nil {
		return nil, err
	}
	x, err := apiMounts(m, cfg, rdb, st, au)
	if err != nil {
		return nil, err
	}
	types, err := taskTypes(m, x.plans, rdb, st.Namespace())
	if err != nil {
		for _, c := range x.close {
			c()
		}
		return nil, err
	}
	acfg := audit.Config{Namespace: st.Namespace(), Retention: cfg.AuditRetention}
	if x.archive != nil {
		acfg.Archive = x.archive
	}
	trail, err := audit.New(rdb, acfg)
	if err != nil {
		for _, c := range x.close {
			c()
		}
		return nil, err
	}
	svc, err := service.New(service.Config{
		Store: st, Auth: au, Audit: trail, MaxContentBytes: cfg.MaxContentBytes, SessionTTL: cfg.SessionTTL, IdempotencyTTL: cfg.IdempotencyTTL, Logger: m.Logger,
		ExternalInFlight: cfg.External.InFlight,
		TypeQueues:       cfg.TypeQueues,
		Types:            types,
		Breakers:         newBreakerControl(st),
		// depends_on and /api/v1/schedules; the orchestrator process runs
		// the release and firing loops (orchestrator.go)
		Dependencies: depend.New(st, depend.Config{Logger: m.Logger}),
		Schedules:    cron.New(st, cron.Config{Logger: m.Logger}),
		SessionLimit: sessionLimit,
		// results, notifications and plan runs go through the service too
		Results: x.results, Notifications: x.notifier, NotificationHub: x.hub,
		OnNotificationDelivered: x.orch.delivery.Delivered, Plans: x.plans,
	})
	if err != nil {
		for _, c := range x.close {
			c()
		}
		return nil, err
	}
	// The MCP server (streamable HTTP) on the same service layer.
	mcpHandler, closeMCP, err := newMCPHandler(svc, au, m.Logger)
	if err != nil {
		svc.Close()
		for _, c := range x.close {
			c()
		}
		return nil, err
	}
	x.mounts = append(x.mounts, mcpMounts(mcpHandler)...)
	a := &apiProc{svc: svc, auth: au, st: st, extras: x, log: m.Logger, closeMCP: closeMCP}
	a.srv, err = httpapi.New(httpapi.Config{Service: svc, Auth: au, Logger: m.Logger, MaxBodyBytes: cfg.MaxBodyBytes, RequestTimeout: cfg.RequestTimeout,
		Version: version.Read().Module, Mounts: x.mounts, RouteMiddleware: httpapi.NotificationsOnResponses(svc), Registry: x.registry, ClientIPHeader: cfg.ClientIPHeader})
	if err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

func (a *apiProc) close() {
	a.closeMCP()
	a.svc.Close()
	for _, c := range a.extras.close {
		c()
	}
}

// serve runs the HTTP server on ln until ctx ends, then shuts down: it
// stops accepting, ends the SSE streams, lets the requests in flight finish
// within grace (their contexts are not cancelled by the shutdown itself),
// and closes whatever is still open after grace.
func (a *apiProc) serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := httpapi.NewHTTPServer(ln.Addr().String(), a.srv)
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	hs.BaseContext = func(net.Listener) context.Context { return base }
	hs.RegisterOnShutdown(a.srv.CloseStreams)
	hs.RegisterOnShutdown(a.closeMCP)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	go func() { _ = a.srv.Run(runCtx) }()
	for _, run := range a.extras.run {
		go func() {
			if err := run(runCtx); err != nil && runCtx.Err() == nil {
				a.log.Error("background loop stopped", "err", err)
			}
		}()
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// Long-lived connections of other handlers (WebSocket) did not end
		// within grace: cut them.
		a.log.Warn("shutdown grace over: closing the remaining connections", "grace", grace)
		cancelBase()
		err = hs.Close()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// taskTypes is the registry of the task types this deployment accepts:
// the in-process ones as their packages declare them (the same the workers'
// handler registry holds, handlers.go; a test keeps the two equal), the
// external ones TASKFLOW_EXTERNAL_TYPES names, described by what their
// services publish when they register, and the ones the deployment's
// workers publish (a user's own Go program's types, package taskflow).
func taskTypes(m *Main, plans *planapi.Service, rdb redis.UniversalClient, ns keyspace.Namespace) (*tasktypes.Registry, error) {
	local := append(builtin.Types(), summarize.Type, planapi.Type(plans))
	return tasktypes.New(tasktypes.Config{Local: local, External: externalTypes(m),
		Redis: rdb, Keys: protocol.NewKeys(ns), WorkerTypes: store.WorkerTypesKeyOf(ns), Logger: m.Logger})
}
