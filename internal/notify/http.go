package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/taskflow/taskflow/internal/auth"
)

// Authenticator resolves a bearer token (auth.Authenticator satisfies it).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (auth.Principal, error)
}

// HandlerConfig configures the HTTP handler.
type HandlerConfig struct {
	// Auth authenticates requests that arrive without a principal in their
	// context (WebSocket and EventSource clients that pass the token as
	// ?access_token=). Required.
	Auth Authenticator
	// Hub feeds live connections. Required for /ws and /stream.
	Hub *Hub
	// Ping is the WebSocket ping / SSE comment interval. Default 15s.
	Ping time.Duration
	// OnDelivered, when set, is called for each notification written to a
	// live connection ("websocket" or "sse") or returned by a poll
	// ("poll", "next_interaction"), with the delivery time.
	OnDelivered func(via string, n Notification, at time.Time)
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
}

// Paths the handler serves (GET).
const (
	PathPoll      = "/api/v1/notifications"
	PathWebSocket = "/api/v1/notifications/ws"
	PathSSE       = "/api/v1/notifications/stream"
)

// Handler serves a session's notifications: polling, WebSocket and SSE.
// Every endpoint is authenticated by the session token; a session sees
// only its own notifications; the admin names a session with ?session_id=.
type Handler struct {
	n   *Notifier
	cfg HandlerConfig
	mux *http.ServeMux
}

// NewHandler returns the handler.
func NewHandler(n *Notifier, cfg HandlerConfig) (*Handler, error) {
	if cfg.Auth == nil {
		return nil, errors.New("notify: HandlerConfig.Auth is required")
	}
	if cfg.Ping == 0 {
		cfg.Ping = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{n: n, cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET "+PathPoll, h.poll)
	h.mux.HandleFunc("GET "+PathWebSocket, h.websocket)
	h.mux.HandleFunc("GET "+PathSSE, h.sse)
	return h, nil
}

// ServeHTTP routes to the endpoints.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

type httpError struct {
	status int
	code   string
	field  string
	msg    string
}

func writeErr(w http.ResponseWriter, e *httpError) {
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="taskflow"`)
	}
	writeJSON(w, e.status, map[string]any{"error": map[string]string{"code": e.code, "message": e.msg, "field": e.field}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// session resolves the session whose notifications the request may see.
func (h *Handler) session(r *http.Request) (string, *httpError) {
	p := auth.FromContext(r.Context())
	if p.Anonymous() {
		// live push from a browser cannot set headers: ?access_token=
		tok, err := auth.RequestToken(r, true)
		if err != nil {
			return "", &httpError{http.StatusUnauthorized, "unauthenticated", "", err.Error()}
		}
		p, err = h.cfg.Auth.Authenticate(r.Context(), tok)
		if err != nil {
			if errors.Is(err, auth.ErrNoCredentials) || errors.Is(err, auth.ErrInvalidToken) {
				return "", &httpError{http.StatusUnauthorized, "unauthenticated", "", err.Error()}
			}
			return "", &httpError{http.StatusServiceUnavailable, "unavailable", "", "cannot check the token now"}
		}
	}
	asked := r.URL.Query().Get("session_id")
	if p.SessionID != "" {
		if asked != "" && asked != p.SessionID {
			return "", &httpError{http.StatusForbidden, "forbidden", "session_id", "a session sees only its own notifications"}
		}
		return p.SessionID, nil
	}
	if p.Admin {
		if asked == "" {
			return "", &httpError{http.StatusBadRequest, "invalid_request", "session_id", "session_id is required for the admin"}
		}
		if len(asked) > 128 || strings.ContainsAny(asked, " {}\t\r\n") {
			return "", &httpError{http.StatusBadRequest, "invalid_request", "session_id", "session_id is malformed"}
		}
		return asked, nil
	}
	return "", &httpError{http.StatusUnauthorized, "unauthenticated", "", "no session"}
}

// pollResponse is GET /api/v1/notifications.
type pollResponse struct {
	SessionID     string         `json:"session_id"`
	Notifications []Notification `json:"notifications"`
	// Cursor is the id to pass as ?after= next time.
	Cursor string `json:"cursor"`
	// Unread counts notifications still unread after this call (up to 1000).
	Unread int `json:"unread"`
}

// poll: ?after=<id> lists after that id (default: the unread ones);
// ?limit= (1–1000, default 100); ?mark_read=false leaves them unread.
func (h *Handler) poll(w http.ResponseWriter, r *http.Request) {
	sid, herr := h.session(r)
	if herr != nil {
		writeErr(w, herr)
		return
	}
	q := r.URL.Query()
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			writeErr(w, &httpError{http.StatusBadRequest, "invalid_request", "limit", "limit must be an integer 1–1000"})
			return
		}
		limit = n
	}
	mark := true
	if s := q.Get("mark_read"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			writeErr(w, &httpError{http.StatusBadRequest, "invalid_request", "mark_read", "mark_read must be true or false"})
			return
		}
		mark = b
	}
	after := q.Get("after")
	if after != "" && after != "0" && !validID(after) {
		writeErr(w, &httpError{http.StatusBadRequest, "invalid_request", "after", "after must be a notification id like 1700000000000-0"})
		return
	}
	ctx := r.Context()
	var err error
	if after == "" {
		if after, err = h.n.Cursor(ctx, sid); err != nil {
			writeErr(w, &httpError{http.StatusServiceUnavailable, "unavailable", "", "notifications unavailable"})
			return
		}
	}
	ns, err := h.n.List(ctx, sid, after, limit)
	if err != nil {
		writeErr(w, &httpError{http.StatusServiceUnavailable, "unavailable", "", "notifications unavailable"})
		return
	}
	resp := pollResponse{SessionID: sid, Notifications: ns, Cursor: after}
	if len(ns) > 0 {
		resp.Cursor = ns[len(ns)-1].ID
		if mark {
			if err := h.n.MarkRead(ctx, sid, resp.Cursor); err != nil {
				writeErr(w, &httpError{http.StatusServiceUnavailable, "unavailable", "", "notifications unavailable"})
				return
			}
		}
		h.delivered("poll", ns)
	}
	if rest, err := h.n.Unread(ctx, sid, 1000); err == nil {
		resp.Unread = len(rest)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (h *Handler) delivered(via string, ns []Notification) {
	if h.cfg.OnDelivered == nil {
		return
	}
	now := time.Now()
	for _, n := range ns {
		h.cfg.OnDelivered(via, n, now)
	}
}

// startFrom is where a live connection begins: ?after=, else
// Last-Event-ID (SSE), else the session's read cursor (unread first).
func (h *Handler) startFrom(r *http.Request, sid string) (string, *httpError) {
	after := r.URL.Query().Get("after")
	if after == "" {
		after = r.Header.Get("Last-Event-ID")
	}
	if after != "" {
		if after != "0" && !validID(after) {
			return "", &httpError{http.StatusBadRequest, "invalid_request", "after", "after must be a notification id like 1700000000000-0"}
		}
		return after, nil
	}
	c, err := h.n.Cursor(r.Context(), sid)
	if err != nil {
		return "", &httpError{http.StatusServiceUnavailable, "unavailable", "", "notifications unavailable"}
	}
	return c, nil
}

// follow delivers the session's notifications after `after` with send,
// then every new one as the Hub signals, until ctx ends or send fails.
func (h *Handler) follow(ctx context.Context, sid, after, via string, send func(Notification) error, ping func() error) error {
	if h.cfg.Hub == nil {
		return errors.New("notify: no Hub configured")
	}
	sub := h.cfg.Hub.Subscribe(sid)
	defer sub.Close()
	t := time.NewTicker(h.cfg.Ping)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if err := ping(); err != nil {
				return err
			}
			continue
		case <-sub.C:
		}
		for {
			ns, err := h.n.List(ctx, sid, after, 100)
			if err != nil {
				return err
			}
			for _, n := range ns {
				if err := send(n); err != nil {
					return err
				}
				after = n.ID
			}
			if len(ns) > 0 {
				h.delivered(via, ns)
				if err := h.n.MarkRead(ctx, sid, after); err != nil {
					return err
				}
			}
			if len(ns) < 100 {
				break
			}
		}
	}
}

func (h *Handler) websocket(w http.ResponseWriter, r *http.Request) {
	sid, herr := h.session(r)
	if herr == nil {
		var after string
		after, herr = h.startFrom(r, sid)
		if herr == nil {
			h.serveWebSocket(w, r, sid, after)
			return
		}
	}
	writeErr(w, herr)
}

func (h *Handler) serveWebSocket(w http.ResponseWriter, r *http.Request, sid, after string) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept wrote the error response
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context()) // the client only listens; its close ends ctx
	err = h.follow(ctx, sid, after, "websocket", func(n Notification) error {
		b, err := json.Marshal(n)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return c.Write(wctx, websocket.MessageText, b)
	}, func() error {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return c.Ping(pctx)
	})
	if err != nil && ctx.Err() == nil {
		h.cfg.Logger.Debug("websocket closed", "err", err)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
}

func (h *Handler) sse(w http.ResponseWriter, r *http.Request) {
	sid, herr := h.session(r)
	if herr != nil {
		writeErr(w, herr)
		return
	}
	after, herr := h.startFrom(r, sid)
	if herr != nil {
		writeErr(w, herr)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, ": connected\n\n")
	_ = rc.Flush()
	_ = h.follow(r.Context(), sid, after, "sse", func(n Notification) error {
		b, err := json.Marshal(n)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "id: %s\nevent: notification\ndata: %s\n\n", n.ID, b); err != nil {
			return err
		}
		return rc.Flush()
	}, func() error {
		if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
			return err
		}
		return rc.Flush()
	})
}

// Middleware delivers unread notifications on the session's next API
// response: a JSON object response of a session's request gains a
// "notifications" array (and they are marked read). Other responses
// (errors from 500 up, non-JSON, streams, the admin's) pass unchanged. It
// must run inside the authentication middleware (it reads
// auth.FromContext).
func (n *Notifier) Middleware(onDelivered func(via string, n Notification, at time.Time)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := auth.FromContext(r.Context())
			if p.SessionID == "" || r.Header.Get("Upgrade") != "" || strings.HasPrefix(r.URL.Path, PathPoll) {
				next.ServeHTTP(w, r)
				return
			}
			bw := &bufferedWriter{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(bw, r)
			if bw.passthrough {
				return
			}
			body := bw.buf.Bytes()
			trimmed := bytes.TrimSpace(body)
			if bw.status < 500 && len(trimmed) >= 2 && trimmed[0] == '{' && trimmed[len(trimmed)-1] == '}' {
				ns, err := n.Unread(r.Context(), p.SessionID, 20)
				if err == nil && len(ns) > 0 {
					var probe map[string]json.RawMessage
					if json.Unmarshal(trimmed, &probe) == nil {
						if _, taken := probe["notifications"]; !taken {
							extra, _ := json.Marshal(ns)
							inner := bytes.TrimSpace(trimmed[1 : len(trimmed)-1])
							var nb bytes.Buffer
							nb.WriteByte('{')
							if len(inner) > 0 {
								nb.Write(inner)
								nb.WriteByte(',')
							}
							nb.WriteString(`"notifications":`)
							nb.Write(extra)
							nb.WriteString("}\n")
							if n.MarkRead(r.Context(), p.SessionID, ns[len(ns)-1].ID) == nil {
								body = nb.Bytes()
								if onDelivered != nil {
									now := time.Now()
									for _, x := range ns {
										onDelivered("next_interaction", x, now)
									}
								}
							}
						}
					}
				}
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(bw.status)
			_, _ = w.Write(body)
		})
	}
}

// bufferedWriter holds a JSON response back until the handler returns;
// anything else is passed through as it is written.
type bufferedWriter struct {
	http.ResponseWriter
	status      int
	wrote       bool
	passthrough bool
	buf         bytes.Buffer
}

func (b *bufferedWriter) WriteHeader(status int) {
	if b.wrote {
		return
	}
	b.wrote = true
	b.status = status
	if !strings.HasPrefix(b.Header().Get("Content-Type"), "application/json") {
		b.passthrough = true
		b.ResponseWriter.WriteHeader(status)
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	if !b.wrote {
		if b.Header().Get("Content-Type") == "" {
			b.Header().Set("Content-Type", http.DetectContentType(p))
		}
		b.WriteHeader(http.StatusOK)
	}
	if b.passthrough {
		return b.ResponseWriter.Write(p)
	}
	return b.buf.Write(p)
}

// Flush passes through for streams (SSE) only.
func (b *bufferedWriter) Flush() {
	if b.passthrough {
		if f, ok := b.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (b *bufferedWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }
