package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// pathNotifications is the poll route's path (its WebSocket and SSE
// routes are under it): those deliver notifications themselves.
const pathNotifications = "/api/v1/notifications"

// NotificationsOnResponses returns the route middleware (Config.RouteMiddleware)
// that delivers a session's unread notifications on its next API
// response: a JSON object response of a session's request gains a
// "notifications" array; which ones, and marking them read, is the
// service's (service.TakeNotifications). Other responses (errors from 500
// up, non-JSON, streams, upgrades, the notification routes, an object
// that has a "notifications" member already, the admin's) pass unchanged.
func NotificationsOnResponses(svc *service.Service) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := identity.FromContext(r.Context())
			if p.SessionID == "" || r.Header.Get("Upgrade") != "" || strings.HasPrefix(r.URL.Path, pathNotifications) {
				next.ServeHTTP(w, r)
				return
			}
			bw := &bufferedWriter{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(bw, r)
			if bw.passthrough {
				return
			}
			body := bw.buf.Bytes()
			if bw.status < 500 {
				if spliced, ok := withNotifications(body, func() []service.Notification {
					ns, err := svc.TakeNotifications(r.Context(), p, service.MaxNotificationsPerResponse)
					if err != nil {
						return nil
					}
					return ns
				}); ok {
					body = spliced
				}
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(bw.status)
			_, _ = w.Write(body)
		})
	}
}

// withNotifications returns body, a JSON object, with a "notifications"
// member holding what take returns; ok is false (and take is not called)
// when body is not a JSON object or has that member already, or when take
// returns none.
func withNotifications(body []byte, take func() []service.Notification) (out []byte, ok bool) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) < 2 || trimmed[0] != '{' || trimmed[len(trimmed)-1] != '}' {
		return nil, false
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(trimmed, &probe) != nil {
		return nil, false
	}
	if _, taken := probe["notifications"]; taken {
		return nil, false
	}
	ns := take()
	if len(ns) == 0 {
		return nil, false
	}
	extra, err := json.Marshal(ns)
	if err != nil {
		return nil, false
	}
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
	return nb.Bytes(), true
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
