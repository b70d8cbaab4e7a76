// Package httpapi is taskflow's HTTP API: endpoints plus
// sessions, generic task creation, workers, live status over SSE, OpenAPI 3
// at /openapi.json with an offline docs page at /docs, Prometheus metrics at
// /metrics and /health, /live, /ready. Handlers only translate HTTP to
// calls of internal/frontdoor/service, which holds the rules.
package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/frontend/stats"
)

// Config configures a Server.
type Config struct {
	// Service holds the business logic. Required.
	Service *service.Service
	// Auth resolves bearer tokens. Required.
	Auth identity.Verifier
	// Logger receives request failures (5xx). Default slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes caps request bodies (413 beyond). Default 1 MiB.
	MaxBodyBytes int64
	// RequestTimeout bounds each request (live feeds and plan runs, which
	// carry their own deadline, excepted): when Redis does not answer the
	// client gets a 503 within it (TASKFLOW_REQUEST_TIMEOUT). Default 1s;
	// negative: no bound.
	RequestTimeout time.Duration
	// Registry receives the API's metrics and is served at /metrics.
	// Default a new registry with the Go and process collectors.
	Registry *prometheus.Registry
	// Version is shown in the OpenAPI document. Default "dev".
	Version string
	// Heartbeat is the SSE keep-alive interval. Default 15s.
	Heartbeat time.Duration
	// StatusDebounce is how often at most an SSE stream sends fresh queue
	// depths while events arrive. Default 250ms.
	StatusDebounce time.Duration
	// MaxStreams caps concurrent SSE status streams: each holds one Redis
	// connection in a blocking read (on a Redis Cluster with several
	// partitions, one per partition, on its partition's node), and the
	// pool is shared with every other request. Beyond it a stream request
	// gets 503 too_many_streams.
	// Default 32.
	MaxStreams int
	// ClientIPHeader names the header a reverse proxy in front of the API
	// sets to the client's address (X-Forwarded-For, X-Real-IP); its last
	// comma-separated value is taken (the one the nearest proxy added).
	// The client address keys the sessions' rate limit. Default "": the
	// connection's remote address.
	ClientIPHeader string
	// Mounts are outside handlers served by this server (the plan API,
	// session notifications).
	Mounts []Mount
	// RouteMiddleware, when set, wraps every route's handler, and every
	// mount's that is not public, inside the authentication step, so it
	// can read identity.FromContext (e.g. NotificationsOnResponses: the
	// notifications that ride on a session's next response). Default none.
	RouteMiddleware func(http.Handler) http.Handler
	// Clock places the series' steps (/api/v1/stats/series). Default the
	// wall clock; give the store's clock so that its events and the steps
	// agree.
	Clock clock.Clock
}

// Mount is an outside handler served at Method+Path (a net/http pattern
// path) behind an access check.
type Mount struct {
	Method  string
	Path    string
	Access  string // "public", "session" (a session or the admin) or "admin"
	Handler http.Handler
	Summary string
	Tag     string
	// SelfAuth documents a "public" mount that authenticates the caller
	// itself (e.g. a session token in ?access_token= for browsers).
	SelfAuth bool
}

// WithDefaults returns c with unset fields defaulted.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
		c.Registry.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = time.Second
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.StatusDebounce == 0 {
		c.StatusDebounce = 250 * time.Millisecond
	}
	if c.MaxStreams == 0 {
		c.MaxStreams = 32
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	return c
}

// Validate says what is wrong with c.
func (c Config) Validate() error {
	var errs []error
	if c.Service == nil {
		errs = append(errs, errors.New("httpapi: Service is required"))
	}
	if c.Auth == nil {
		errs = append(errs, errors.New("httpapi: Auth is required"))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, errors.New("httpapi: MaxBodyBytes must be at least 1024"))
	}
	for _, m := range c.Mounts {
		if m.Handler == nil || !strings.HasPrefix(m.Path, "/") {
			errs = append(errs, errors.New("httpapi: a Mount needs a Handler and a Path starting with /"))
		}
		switch m.Access {
		case "public", "session", "admin":
		default:
			errs = append(errs, errors.New("httpapi: Mount.Access must be public, session or admin"))
		}
	}
	return errors.Join(errs...)
}

// Server is the HTTP API; it is an http.Handler.
type Server struct {
	cfg       Config
	svc       *service.Service
	auth      identity.Verifier
	log       *slog.Logger
	version   string
	router    *router
	handler   http.Handler
	metrics   *httpMetrics
	authLog   authLog
	engine    *engineMetrics
	series    *stats.Window
	mountDocs []route

	// openapiJSON is /openapi.json as last built, for the task types
	// whose JSON is openapiKey.
	openapiMu   sync.Mutex
	openapiJSON []byte
	openapiKey  string

	closing     chan struct{} // closed by CloseStreams
	closingOnce sync.Once
	streams     chan struct{} // one token per open SSE stream
}

// New builds the server and its routes.
func New(cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, svc: cfg.Service, auth: cfg.Auth, log: cfg.Logger, version: cfg.Version,
		closing: make(chan struct{}), streams: make(chan struct{}, cfg.MaxStreams)}
	var err error
	if s.metrics, err = newHTTPMetrics(cfg.Registry); err != nil {
		return nil, err
	}
	if s.engine, err = newEngineMetrics(cfg.Registry, cfg.Service); err != nil {
		return nil, err
	}
	s.series = stats.New(stats.Config{})
	s.router = newRouter(s)
	s.routes()
	for _, m := range cfg.Mounts {
		acc := map[string]access{"public": public, "session": principal, "admin": admin}[m.Access]
		s.router.mount(m.Method+" "+m.Path, acc, m.Handler)
		doc := opDoc{summary: m.Summary, tag: m.Tag, responses: map[int]string{200: ""}}
		if m.SelfAuth {
			doc.selfAuth = true
			doc.description = "Authenticates the session itself: Authorization: Bearer <token>, or ?access_token=<token> where headers cannot be set."
		}
		s.mountDocs = append(s.mountDocs, route{method: m.Method, path: m.Path, access: acc, doc: doc})
	}
	s.router.shadowLiterals()
	s.handler = s.recoverer(s.instrument(s.router))
	return s, nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Run follows the lifecycle event stream for the transition and duration
// metrics and the dashboard's series (/api/v1/stats/series), and samples
// queue depths for the series, until ctx ends. Optional: without it those
// stay empty.
func (s *Server) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.sampleDepth(ctx)
	}()
	err := s.follow(ctx)
	<-done
	return err
}

// CloseStreams ends every open SSE stream (each gets an event: shutdown
// first) and makes new ones end at once: call it when the HTTP server
// shuts down (http.Server.RegisterOnShutdown), since streams never go
// idle by themselves. Safe to call more than once.
func (s *Server) CloseStreams() { s.closingOnce.Do(func() { close(s.closing) }) }

// recoverer turns a handler panic into a 500 envelope; no panic reaches the
// client as a dropped connection.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "handler panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				writeJSON(w, http.StatusInternalServerError, errorBody{Error: errorDetail{Code: "internal", Message: "internal error"}})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// NewHTTPServer wraps h in an http.Server with timeouts fit for the API
// (no write timeout: SSE streams are long-lived).
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}
