package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/frontend/webui"
	"github.com/taskflow/taskflow/internal/platform/tracing"
)

// access is who may call a route.
type access int

const (
	public    access = iota // anyone, no credentials read
	principal               // a session or the admin
	admin                   // the admin only (operator endpoints)
)

func (a access) String() string {
	switch a {
	case public:
		return "public"
	case principal:
		return "session or admin"
	}
	return "admin"
}

// route is one endpoint: how it is served and how it is documented.
type route struct {
	method string
	path   string // net/http pattern path, without trailing slash
	access access
	// queryToken: the route also takes its token in ?access_token= (a
	// browser's EventSource cannot set headers); the header wins.
	queryToken bool
	// ownDeadline: the route bounds its own time (a plan run's
	// deadline_ms), so Config.RequestTimeout does not apply. Live feeds
	// (streams, queryToken routes) are exempt too.
	ownDeadline bool
	// audit: a change a deployment-wide caller makes here is recorded in
	// the audit trail (a session's own changes are not).
	audit bool
	// readOnly: a POST that changes nothing (a plan run), which a viewer
	// may call.
	readOnly bool
	// keysOnly: the admin role only (named keys, the audit trail), not an
	// operator's or a viewer's key.
	keysOnly bool
	handler  func(w http.ResponseWriter, r *http.Request, p identity.Principal)
	doc      opDoc
}

// changes reports whether the route changes something: any method but
// GET and HEAD. A viewer's key may not call it.
func (r route) changes() bool {
	return !r.readOnly && r.method != http.MethodGet && r.method != http.MethodHead
}

// router dispatches to routes. A trailing slash is ignored ("/x/" is "/x");
// an unknown path is a JSON 404 and a known path with the wrong method a
// JSON 405 with Allow.
type router struct {
	s      *Server
	mux    *http.ServeMux
	routes []route
	// literal are the paths without wildcards; shadowed the patterns
	// registered only to answer 405 (see shadowLiterals).
	literal  map[string]bool
	shadowed map[string]bool
}

func newRouter(s *Server) *router {
	rt := &router{s: s, mux: http.NewServeMux(), literal: map[string]bool{}, shadowed: map[string]bool{}}
	// Every request no route takes lands here (also a known path with
	// another method: "/" matches any method), so the mux routes once.
	rt.mux.HandleFunc("/", rt.miss)
	// The web dashboard: public files; its data comes from the API itself.
	rt.mux.Handle("GET /ui", webui.Handler())
	rt.mux.Handle("GET /ui/", webui.Handler())
	return rt
}

// setRoute tells the metrics which route served the request.
func setRoute(w http.ResponseWriter, pattern string) {
	if sw, ok := w.(*statusWriter); ok {
		sw.route = pattern
	}
}

func (rt *router) add(r route) {
	if r.audit && !r.changes() {
		panic("httpapi: " + r.method + " " + r.path + " is audited but changes nothing") // a programming error: every test fails
	}
	rt.routes = append(rt.routes, r)
	rt.noteLiteral(r.path)
	h := r.handler
	acc, queryToken := r.access, r.queryToken
	changes, audited, keysOnly := r.changes(), r.audit, r.keysOnly
	var inner http.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h(w, req, identity.FromContext(req.Context()))
	})
	if mw := rt.s.cfg.RouteMiddleware; mw != nil {
		inner = mw(inner)
	}
	pattern := r.method + " " + r.path
	bounded := !(r.doc.stream || r.queryToken || r.ownDeadline)
	rt.mux.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
		setRoute(w, pattern)
		if bounded { // a live feed is no span: it lasts as long as its client
			ctx, span := startServerSpan(req, pattern, r.path)
			defer endServerSpan(span, w)
			req = req.WithContext(ctx)
		}
		if d := rt.s.cfg.RequestTimeout; bounded && d > 0 {
			// every call to Redis below honours this deadline (redisconn),
			// so a stalled Redis is a 503 within it, not a hung request
			ctx, cancel := context.WithTimeout(req.Context(), d)
			defer cancel()
			req = req.WithContext(ctx)
		}
		var p identity.Principal
		if acc != public {
			var err error
			p, err = rt.s.authenticate(req, queryToken)
			if err != nil {
				rt.s.writeError(w, req, err)
				return
			}
			if acc == admin && !p.Admin {
				rt.s.writeError(w, req, service.Forbidden("this endpoint needs the admin key"))
				return
			}
			if keysOnly && !p.ManagesKeys() {
				rt.s.writeError(w, req, service.Forbidden("this endpoint needs the admin role (this key's role is %s)", roleOf(p)))
				return
			}
			if changes && !p.MayChange() {
				rt.s.writeError(w, req, service.Forbidden("the viewer role is read-only: %s needs an operator or admin key", pattern))
				return
			}
			req = req.WithContext(identity.WithPrincipal(req.Context(), p))
		}
		if audited && p.Admin {
			rt.s.audited(w, req, p, pattern, inner)
			return
		}
		inner.ServeHTTP(w, req)
	})
}

// startServerSpan starts the server span of a request to the route
// pattern, continuing the caller's W3C traceparent header if it sent one
// (the CLI does): a submit's task then joins the caller's trace.
func startServerSpan(req *http.Request, pattern, path string) (context.Context, trace.Span) {
	ctx := tracing.WithTraceparent(req.Context(), req.Header.Get("Traceparent"))
	ctx, span := tracing.Start(ctx, pattern, "", trace.SpanKindServer)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("http.request.method", req.Method), attribute.String("http.route", path))
	}
	return ctx, span
}

// endServerSpan records the answer's status and ends span.
func endServerSpan(span trace.Span, w http.ResponseWriter) {
	if span.IsRecording() {
		if sw, ok := w.(*statusWriter); ok {
			code := sw.code
			if code == 0 {
				code = http.StatusOK
			}
			span.SetAttributes(attribute.Int("http.response.status_code", code))
			if code >= 500 {
				span.SetStatus(codes.Error, http.StatusText(code))
			}
		}
	}
	span.End()
}

// mount serves an outside handler (plan API, notifications) at pattern,
// behind the given access check. A mount behind authentication gets the
// RouteMiddleware as routes do (a public one has no principal for it).
func (rt *router) mount(pattern string, acc access, h http.Handler) {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		rt.noteLiteral(path)
	}
	if mw := rt.s.cfg.RouteMiddleware; mw != nil && acc != public {
		h = mw(h)
	}
	rt.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		setRoute(w, pattern)
		if acc != public {
			p, err := rt.s.authenticate(req, false)
			if err != nil {
				rt.s.writeError(w, req, err)
				return
			}
			if acc == admin && !p.Admin {
				rt.s.writeError(w, req, service.Forbidden("this endpoint needs the admin key"))
				return
			}
			req = req.WithContext(identity.WithPrincipal(req.Context(), p))
		}
		h.ServeHTTP(w, req)
	}))
}

func (rt *router) noteLiteral(path string) {
	if !strings.Contains(path, "{") {
		rt.literal[path] = true
	}
}

// shadowLiterals keeps a wildcard route from taking a literal path with a
// method the literal route does not serve: GET /api/v1/tasks/summarize
// would otherwise be GET /api/v1/tasks/{task_id} asking for a task named
// "summarize" (404), where the caller used the wrong method (405 with
// Allow). Call it once every route and mount is added.
func (rt *router) shadowLiterals() {
	for path := range rt.literal {
		for _, m := range allMethods {
			probe, err := http.NewRequest(m, path, nil)
			if err != nil {
				continue
			}
			_, pat := rt.mux.Handler(probe)
			if pat == "/" || strings.HasSuffix(pat, " "+path) || pat == path {
				continue // nothing takes it, or the literal route itself
			}
			p := m + " " + path
			rt.shadowed[p] = true
			rt.mux.HandleFunc(p, rt.miss)
		}
	}
}

var allMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// ServeHTTP strips one trailing slash, then routes.
func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
		r2 := *r
		u := *r.URL
		u.Path = strings.TrimSuffix(p, "/")
		u.RawPath = ""
		r2.URL = &u
		r = &r2
	}
	rt.mux.ServeHTTP(w, r)
}

// miss answers a request no route takes: 405 when another method would
// match, else 404.
func (rt *router) miss(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" && r.Method == http.MethodGet && webui.WantsHTML(r) {
		http.Redirect(w, r, webui.Prefix, http.StatusFound)
		return
	}
	var allow []string
	for _, m := range allMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pat := rt.mux.Handler(probe); pat != "" && pat != "/" && !rt.shadowed[pat] {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		sort.Strings(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: errorDetail{
			Code: "method_not_allowed", Message: r.Method + " is not allowed here; use " + strings.Join(allow, " or ")}})
		return
	}
	writeJSON(w, http.StatusNotFound, errorBody{Error: errorDetail{
		Code: "not_found", Message: "no endpoint " + r.URL.Path + " (see /openapi.json)"}})
}

func roleOf(p identity.Principal) string {
	if r := p.EffectiveRole(); r != "" {
		return string(r)
	}
	return "a session"
}

// audited serves a change and records it in the audit trail when it
// succeeded (status below 400): who, what route, on what, when.
func (s *Server) audited(w http.ResponseWriter, r *http.Request, p identity.Principal, pattern string, next http.Handler) {
	rec := &auditWriter{ResponseWriter: w}
	next.ServeHTTP(rec, r)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	if rec.code >= 400 {
		return
	}
	var target []string
	for _, name := range pathNames(pattern) {
		target = append(target, name+"="+r.PathValue(name))
	}
	if q := r.URL.RawQuery; q != "" && !strings.Contains(q, "access_token") {
		target = append(target, q)
	}
	// the answer is written: the request's deadline must not lose the entry
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Second)
	defer cancel()
	if err := s.svc.RecordChange(ctx, p, service.AuditEntry{Action: pattern, Target: strings.Join(target, " "),
		Status: rec.code, Client: s.clientAddr(r)}); err != nil {
		s.log.WarnContext(ctx, "audit trail: change not recorded", "action", pattern, "actor", p.Actor(), "err", err)
	}
}

// pathNames are the wildcard names of a route pattern, in order.
func pathNames(pattern string) []string {
	var out []string
	for _, seg := range strings.Split(pattern, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}"))
		}
	}
	return out
}

// auditWriter notes the status an audited route answered.
type auditWriter struct {
	http.ResponseWriter
	code int
}

func (w *auditWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// authenticate resolves the request's bearer token (or, when query is
// true, its ?access_token=) to a principal, as a *service.Error on failure.
func (s *Server) authenticate(r *http.Request, query bool) (identity.Principal, error) {
	tok, err := identity.RequestToken(r, query)
	if err != nil {
		reason := authMalformed
		if errors.Is(err, identity.ErrNoCredentials) {
			reason = authNoCredentials
		}
		s.authFailed(r, reason)
		return identity.Principal{}, service.Unauthenticated("%v", err)
	}
	p, err := s.auth.Authenticate(r.Context(), tok)
	switch {
	case errors.Is(err, identity.ErrNoCredentials), errors.Is(err, identity.ErrInvalidToken):
		reason := authInvalidToken
		if errors.Is(err, identity.ErrNoCredentials) {
			reason = authNoCredentials
		}
		s.authFailed(r, reason)
		return identity.Principal{}, service.Unauthenticated("%v", err)
	case err != nil:
		return identity.Principal{}, service.Unavailable(err)
	}
	return p, nil
}
