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

	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/extsvc/tools"
	"github.com/taskflow/taskflow/internal/app"
	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/builtin"
	"github.com/taskflow/taskflow/internal/cron"
	"github.com/taskflow/taskflow/internal/depend"
	"github.com/taskflow/taskflow/internal/httpapi"
	"github.com/taskflow/taskflow/internal/planapi"
	"github.com/taskflow/taskflow/internal/ratelimit"
	"github.com/taskflow/taskflow/internal/service"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/summarize"
	"github.com/taskflow/taskflow/internal/version"
)

func init() {
	register("api", func(m *Main) *cobra.Command {
		cfg, envErr := app.Load(m.Getenv)
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
				tuneGC(m.Getenv)
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
		cfg.ServerFlags(cmd.Flags())
		return cmd
	})
}

// apiGCPercent is the GOGC the API processes use when GOGC is unset: the
// live heap of an API process is a few MB while it allocates ~6 KB per
// request, so the default (100) collects many times a second under load;
// 400 measured ≈ 15 % more submits/s (docs/benchmarks.md).
const apiGCPercent = 400

// tuneGC applies apiGCPercent unless the operator set GOGC.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(apiGCPercent)
	}
}

// apiProc is an API server with what it owns.
type apiProc struct {
	svc    *service.Service
	srv    *httpapi.Server
	st     *store.Store
	extras apiExtras
	log    *slog.Logger
}

// newAPI wires auth, service and HTTP server on the process's app (its
// Redis client and store).
func newAPI(m *Main, ap *app.App, open bool) (*apiProc, error) {
	cfg, rdb, st := ap.Config.Config, ap.Redis, ap.Store
	au, err := auth.New(rdb, auth.Config{Namespace: st.Namespace(), AdminKey: cfg.AdminKey, Open: open, SessionTTL: cfg.SessionTTL})
	if err != nil {
		return nil, err
	}
	mux, err := newTaskMux(m)
	if err != nil {
		return nil, err
	}
	types := mux.Types()
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
	svc, err := service.New(service.Config{
		Store: st, Auth: au, MaxContentBytes: cfg.MaxContentBytes, SessionTTL: cfg.SessionTTL, Logger: m.Logger,
		TaskTypes:     func() []string { return append([]string(nil), types...) },
		ExternalTypes: externalTypes(m),
		TypeSchema:    typeSchema, TypeDescriptions: typeDescriptions,
		Breakers: newBreakerControl(st),
		// depends_on and /api/v1/schedules; the orchestrator process runs
		// the release and firing loops (orchestrator.go)
		Dependencies: depend.New(st, depend.Config{Logger: m.Logger}),
		Schedules:    cron.New(st, cron.Config{Logger: m.Logger}),
		// params checked before task.create is published;
		// the built-in types' too (a bad sleep is a 422, not a task that
		// can only fail)
		ParamSchemas: paramSchema,
		SessionLimit: sessionLimit,
		// results, notifications and plan runs go through the service too
		Results: x.results, Notifications: x.notifier, NotificationHub: x.hub,
		OnNotificationDelivered: x.orch.Delivered, Plans: x.plans,
	})
	if err != nil {
		for _, c := range x.close {
			c()
		}
		return nil, err
	}
	a := &apiProc{svc: svc, st: st, extras: x, log: m.Logger}
	a.srv, err = httpapi.New(httpapi.Config{Service: svc, Auth: au, Logger: m.Logger, MaxBodyBytes: cfg.MaxBodyBytes, RequestTimeout: cfg.RequestTimeout,
		Version: version.Read().Module, Mounts: x.mounts, RouteMiddleware: x.middleware, Registry: x.registry, ClientIPHeader: cfg.ClientIPHeader})
	if err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

func (a *apiProc) close() {
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

// typeSchema is a task type's params as a JSON Schema (GET
// /api/v1/task-types): the plan task's, else the declared one.
func typeSchema(taskType string) (map[string]any, bool) {
	if taskType == planapi.TaskType {
		return planapi.ParamsJSONSchema(), true
	}
	if s, ok := paramSchema(taskType); ok {
		return s.JSONSchema(), true
	}
	return nil, false
}

// typeDescriptions say what each task type does, for people and agents
// choosing one.
var typeDescriptions = map[string]string{
	"noop":             "Does nothing and completes: a probe of the queue (tests, benchmarks).",
	"sleep":            "Sleeps duration_ms, then completes or fails as fail says: a stand-in for slow work.",
	summarize.TaskType: "Summarizes a text (content or params.content) with an LLM, or the built-in extractive summarizer offline.",
	planapi.TaskType:   "Runs a named plan (a DAG of Redis reads and CPU steps) for a user; the result is its candidates.",
	"report.generate":  "Builds a quarterly report (md, html, csv or pdf) from metric values; the result links the file.",
	"data.analyze":     "Computes statistics of a CSV (per column: count, mean, min, max); the result links the analysis.",
	"document.process": "Extracts the text, headings and statistics of a document (text, HTML or Markdown).",
	"data.export":      "Writes rows (JSON objects) as CSV, JSON or JSON Lines; the result links the file.",
	"text.wordcount":   "Counts the words, characters and lines of a text (the Node example service).",
}

// paramSchema is the declared params of a task type: the built-in types'
// (internal/builtin, internal/summarize), then the example external
// services' (extsvc/tools).
func paramSchema(taskType string) (param.Schema, bool) {
	if taskType == summarize.TaskType {
		return summarize.ParamSchema, true
	}
	if s, ok := builtin.ParamSchema(taskType); ok {
		return s, true
	}
	return tools.ParamSchema(taskType)
}
