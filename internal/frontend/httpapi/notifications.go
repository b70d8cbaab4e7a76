package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// notificationRoutes registers the session notifications: a poll, and
// live feeds over WebSocket and SSE (which also take the token as
// ?access_token=: browsers' WebSocket and EventSource cannot set headers).
func (s *Server) notificationRoutes(add func(route)) {
	sessionParam := queryParam("session_id", "string", "whose notifications: required for the admin; a session may name only itself")
	tokenParam := queryParam("access_token", "string", "the session token, when the Authorization header cannot be set; never logged")
	add(route{method: "GET", path: "/api/v1/notifications", access: principal, handler: s.pollNotifications, doc: opDoc{
		tag: "notifications", summary: "Poll the session's notifications",
		description: "Lists the unread notifications (or those after ?after=) and marks them read unless mark_read=false. An unknown or repeated parameter is 400 naming it; limit out of 1..1000 is 400 invalid_parameter, as on /api/v1/results.",
		params: []paramDoc{
			queryParam("after", "string", "list after this notification id; 0 = from the start; default: the unread ones"),
			queryParam("limit", "integer", "at most this many, 1..1000 (default 100)"),
			queryParam("mark_read", "boolean", "false leaves them unread (default true); after= does not change this"),
			sessionParam,
		},
		responses: map[int]string{200: "NotificationPage"}}})
	add(route{method: "GET", path: "/api/v1/notifications/ws", access: principal, queryToken: true, handler: s.notificationsWebSocket, doc: opDoc{
		tag: "notifications", summary: "The session's notifications over WebSocket: the unread ones, then each new one",
		params:    []paramDoc{queryParam("after", "string", "start after this id (0: from the start)"), sessionParam, tokenParam},
		responses: map[int]string{200: ""}}})
	add(route{method: "GET", path: "/api/v1/notifications/stream", access: principal, queryToken: true, handler: s.notificationsSSE, doc: opDoc{
		tag: "notifications", summary: "The session's notifications over Server-Sent Events (id: the notification id; resume with Last-Event-ID)",
		params: []paramDoc{queryParam("after", "string", "start after this id (0: from the start); Last-Event-ID also works"), sessionParam, tokenParam},
		stream: true, responses: map[int]string{200: ""}}})
}

func (s *Server) pollNotifications(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	q := newQuery(r, "after", "limit", "mark_read", "session_id")
	in := service.NotificationsInput{SessionID: q.str("session_id"), After: q.str("after"), Limit: q.limit()}
	if q.str("mark_read") != "" {
		in.KeepUnread = !q.bool("mark_read")
	}
	if q.err != nil {
		s.writeError(w, r, q.err)
		return
	}
	out, err := s.svc.Notifications(r.Context(), p, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// openFeed checks the live request (parameters, who may follow which
// session) before anything is streamed, so a refusal is an ordinary error.
func (s *Server) openFeed(w http.ResponseWriter, r *http.Request, p identity.Principal, via string) (*service.NotificationFeed, bool) {
	q := newQuery(r, "after", "session_id", "access_token")
	in := service.NotificationFollowInput{SessionID: q.str("session_id"), After: q.str("after"), Via: via}
	if in.After == "" {
		in.After = r.Header.Get("Last-Event-ID")
	}
	if q.err != nil {
		s.writeError(w, r, q.err)
		return nil, false
	}
	feed, err := s.svc.OpenNotifications(r.Context(), p, in)
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	return feed, true
}

func (s *Server) notificationsWebSocket(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	feed, ok := s.openFeed(w, r, p, "websocket")
	if !ok {
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept wrote the error response
	}
	defer c.CloseNow()
	ctx, cancel := s.untilClosing(c.CloseRead(r.Context())) // the client only listens; its close ends ctx
	defer cancel()
	err = feed.Follow(ctx, s.cfg.Heartbeat, func(n service.Notification) error {
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
		s.log.DebugContext(r.Context(), "notification websocket closed", "err", err)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
}

func (s *Server) notificationsSSE(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	feed, ok := s.openFeed(w, r, p, "sse")
	if !ok {
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, ": connected\n\n")
	_ = rc.Flush()
	ctx, cancel := s.untilClosing(r.Context())
	defer cancel()
	_ = feed.Follow(ctx, s.cfg.Heartbeat, func(n service.Notification) error {
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

// untilClosing is ctx, also ended when the server shuts down
// (CloseStreams): a live feed never goes idle by itself, and a hijacked
// WebSocket connection is not waited for by http.Server.Shutdown.
func (s *Server) untilClosing(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
