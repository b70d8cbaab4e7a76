// Package mcpserver makes taskflow a Model Context Protocol server: an LLM
// agent delegates slow work through tools (one per task type the deployment
// accepts, generated from the task-type registry, plus get_task_result_tool,
// list_user_tasks_tool, cancel_task_tool, wait_for_task_tool and the
// synchronous run_plan_tool), reads tasks as resources and hears of finished
// ones without polling. Built on the official Go SDK; every tool calls
// internal/frontdoor/service, as the HTTP API does, so the rules (a session sees only
// its own tasks, params checked against the type's schema) are the same.
//
// Two transports: streamable HTTP (Handler, mounted at /mcp by taskflow api
// and taskflow dev; the bearer token names the caller as for the REST API)
// and stdio (RunStdio, `taskflow mcp`; one caller for the process's life).
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// Path is where the streamable HTTP transport is served.
const Path = "/mcp"

// Config configures a Server.
type Config struct {
	// Service is the business layer every tool calls. Required.
	Service *service.Service
	// Auth resolves the bearer token of an HTTP request (Handler).
	// Required for Handler.
	Auth identity.Verifier
	// Version is the server version announced to clients. Default "dev".
	Version string
	// WaitPoll is how often wait_for_task_tool looks at its task. Default
	// 200ms.
	WaitPoll time.Duration
	// MaxWait bounds wait_for_task_tool's timeout_seconds. Default 300s.
	MaxWait time.Duration
	// PlanDeadline is run_plan_tool's deadline when the call sets none.
	// Default 10s.
	PlanDeadline time.Duration
	// SessionTimeout closes an HTTP MCP session idle for this long.
	// Default 30m.
	SessionTimeout time.Duration
	// Logger receives the server's own logs. Default slog.Default().
	Logger *slog.Logger
}

// ProtocolVersions are the MCP protocol versions the server speaks.
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// Server builds MCP servers over the service layer.
type Server struct {
	cfg Config
	svc *service.Service

	mu sync.Mutex
	// live are the MCP servers built for HTTP sessions, with when: Close
	// ends their sessions; one left with no session is dropped a minute
	// after it was built.
	live   map[*mcp.Server]time.Time
	closed bool
}

// New returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Service == nil {
		return nil, errors.New("mcpserver: Config.Service is required")
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.WaitPoll <= 0 {
		cfg.WaitPoll = 200 * time.Millisecond
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 300 * time.Second
	}
	if cfg.PlanDeadline <= 0 {
		cfg.PlanDeadline = 10 * time.Second
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 30 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{cfg: cfg, svc: cfg.Service, live: map[*mcp.Server]time.Time{}}, nil
}

// track remembers srv (an HTTP session's) for Close, and forgets the ones
// whose session ended.
func (s *Server) track(srv *mcp.Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	now := time.Now()
	for old, at := range s.live {
		if now.Sub(at) > time.Minute && !hasSession(old) {
			delete(s.live, old)
		}
	}
	s.live[srv] = now
	return true
}

func hasSession(srv *mcp.Server) bool {
	for range srv.Sessions() {
		return true
	}
	return false
}

// Close ends every HTTP MCP session (their streams end, their push feeds
// stop) and refuses new ones: call it when the HTTP server shuts down.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	live := s.live
	s.live = map[*mcp.Server]time.Time{}
	s.mu.Unlock()
	for srv := range live {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	}
}

// instructions tell the model how the tools fit together.
const instructions = `taskflow runs slow work (reports, analyses, document processing, exports, summaries) in the background.
Call a task tool (e.g. generate_report_tool): it answers at once with a task_id; keep talking to the user.
When the task finishes you are told (a notification in the next tool answer, or pushed when you subscribe to taskflow://notifications);
then call get_task_result_tool. wait_for_task_tool blocks up to timeout_seconds when the user wants to wait.
list_user_tasks_tool lists this session's tasks; cancel_task_tool cancels one. run_plan_tool ranks candidates synchronously.`

// session is one MCP session's state: who it acts for and its push feed.
type session struct {
	s  *Server
	p  identity.Principal
	mu sync.Mutex
	// following is set once the session's notifications are pushed.
	following bool
	stop      context.CancelFunc
}

// build returns the MCP server of one caller: the tools of the task types
// the deployment accepts now (a service that registers later is seen by
// the next session), the fixed tools and the resources.
func (s *Server) build(ctx context.Context, p identity.Principal) (*mcp.Server, *session, error) {
	sess := &session{s: s, p: p}
	var srv *mcp.Server
	srv = mcp.NewServer(&mcp.Implementation{Name: "taskflow", Title: "taskflow task queue", Version: s.cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       sdkLogger(s.cfg.Logger),
		// Sessions as MCP clients speak them today (stateful streamable
		// HTTP, subscriptions, log messages); the sessionless 2026-07-28
		// protocol is not offered yet.
		SupportedProtocolVersions: ProtocolVersions,
		// Every answer is the caller's own (its tasks, its files, the
		// tools of its deployment): never to be shared by a cache.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope, c.TTLMs = "private", 0 },
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return sess.follow(srv, req.Session)
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		Capabilities: &mcp.ServerCapabilities{
			Logging:   &mcp.LoggingCapabilities{},
			Resources: &mcp.ResourceCapabilities{Subscribe: true},
			Tools:     &mcp.ToolCapabilities{},
		},
	})
	types, err := s.svc.TaskTypes(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range types {
		if tool, h, ok := sess.typeTool(t); ok {
			srv.AddTool(tool, h)
		}
	}
	sess.addFixedTools(srv)
	sess.addQueueTools(srv)
	sess.addResources(srv)
	return srv, sess, nil
}

// close stops the session's push feed.
func (ss *session) close() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stop != nil {
		ss.stop()
	}
}

// Handler serves the streamable HTTP transport. Each request names its
// caller with Authorization: Bearer <session token or admin key> (in open
// mode a request without one acts as the admin); a session's later
// requests must name the same caller.
func (s *Server) Handler() (http.Handler, error) {
	if s.cfg.Auth == nil {
		return nil, errors.New("mcpserver: Config.Auth is required for the HTTP transport")
	}
	// The SDK asks for a server on every request, but uses the answer
	// only to check the protocol version unless the request starts a
	// session: a request of an existing session gets this bare one instead
	// of a build of its tools.
	probe := mcp.NewServer(&mcp.Implementation{Name: "taskflow", Version: s.cfg.Version},
		&mcp.ServerOptions{SupportedProtocolVersions: ProtocolVersions, Logger: sdkLogger(s.cfg.Logger)})
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p, ok := principalOf(sdkauth.TokenInfoFromContext(r.Context()))
		if !ok {
			return nil
		}
		if r.Header.Get("Mcp-Session-Id") != "" {
			return probe
		}
		srv, _, err := s.build(r.Context(), p)
		if err != nil {
			s.cfg.Logger.Warn("mcp: building a session's tools", "err", err)
			return nil
		}
		if !s.track(srv) {
			return nil // shutting down
		}
		return srv
	}, &mcp.StreamableHTTPOptions{SessionTimeout: s.cfg.SessionTimeout, Logger: sdkLogger(s.cfg.Logger)})
	verify := func(ctx context.Context, token string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		if token == openToken {
			token = ""
		}
		p, err := s.cfg.Auth.Authenticate(ctx, token)
		if err != nil {
			if errors.Is(err, identity.ErrInvalidToken) || errors.Is(err, identity.ErrNoCredentials) {
				return nil, fmt.Errorf("%w: %v", sdkauth.ErrInvalidToken, err)
			}
			return nil, err
		}
		return tokenInfo(p), nil
	}
	// a viewer's key reads only: MCP's tools submit and cancel, so it gets
	// no scope and a 403 "insufficient scope"
	protected := sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true,
		Scopes: []string{scopeAct}})(h)
	open := s.cfg.Auth.Open()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open && r.Header.Get("Authorization") == "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+openToken)
		}
		protected.ServeHTTP(w, r)
	}), nil
}

// sdkLogger is log for the SDK: its warnings and errors only (it logs
// every session's start and end, and every notification, at info).
func sdkLogger(log *slog.Logger) *slog.Logger {
	return slog.New(minLevel{log.Handler(), slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}
func (h minLevel) WithGroup(n string) slog.Handler { return minLevel{h.Handler.WithGroup(n), h.min} }

// openToken stands for "no credentials" in open mode, where a request
// without a token acts as the admin (as the REST API does); Authenticate
// decides, so outside open mode it is refused like no token at all.
const openToken = "taskflow-open-mode-no-credentials"

// tokenInfo carries p through the SDK: UserID makes the SDK refuse a
// session's request made by another caller.
// scopeAct is the scope of a caller who may act (not a viewer's key).
const scopeAct = "taskflow:act"

// tokenInfo is p for the SDK: its user (an MCP session stays with the
// caller that opened it: a session, a named key, the admin) and scope.
func tokenInfo(p identity.Principal) *sdkauth.TokenInfo {
	id := "admin"
	switch {
	case p.SessionID != "":
		id = "session:" + p.SessionID
	case p.Name != "" && p.Name != "admin" && p.Name != "open":
		id = "key:" + p.Name
	}
	var scopes []string
	if p.MayChange() {
		scopes = []string{scopeAct}
	}
	return &sdkauth.TokenInfo{UserID: id, Scopes: scopes, Extra: map[string]any{"principal": p}}
}

func principalOf(ti *sdkauth.TokenInfo) (identity.Principal, bool) {
	if ti == nil {
		return identity.Principal{}, false
	}
	p, ok := ti.Extra["principal"].(identity.Principal)
	return p, ok && !p.Anonymous()
}

// RunStdio serves one MCP client over in/out (stdin/stdout for `taskflow
// mcp`) as p until ctx ends or the client goes away.
func (s *Server) RunStdio(ctx context.Context, p identity.Principal, t mcp.Transport) error {
	srv, sess, err := s.build(ctx, p)
	if err != nil {
		return err
	}
	defer sess.close()
	err = srv.Run(ctx, t)
	if err != nil && (ctx.Err() != nil || strings.Contains(err.Error(), "EOF")) {
		return nil
	}
	return err
}
