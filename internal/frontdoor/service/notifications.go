package service

import (
	"context"
	"strings"
	"time"

	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
)

// Notification is one notification of a session (a task finished, failed,
// timed out, made progress, ...).
type Notification = notify.Notification

// Notification poll limits.
const (
	DefaultNotificationLimit = 100
	MaxNotificationLimit     = 1000
	// maxUnreadCount bounds the unread count a poll reports.
	maxUnreadCount = 1000
)

// NotificationsInput is a poll of a session's notifications.
type NotificationsInput struct {
	// SessionID names the session: required for the admin; a session may
	// name only itself ("" is itself).
	SessionID string
	// After lists the notifications after this id; "0" from the start;
	// "" the unread ones (after the session's read cursor).
	After string
	// Limit is the most listed, 1..MaxNotificationLimit; 0 =
	// DefaultNotificationLimit.
	Limit int
	// KeepUnread leaves the listed notifications unread (by default the
	// read cursor moves past them).
	KeepUnread bool
}

// NotificationPage is a poll's answer.
type NotificationPage struct {
	SessionID     string         `json:"session_id"`
	Notifications []Notification `json:"notifications"`
	// Cursor is the id to pass as After next time.
	Cursor string `json:"cursor" jsonschema:"pass as ?after= next time"`
	// Unread counts notifications still unread after this call (up to 1000).
	Unread int `json:"unread" jsonschema:"still unread after this call (counted up to 1000)"`
}

// Notifications lists a session's notifications (a poll) and, unless
// in.KeepUnread, marks them read.
func (s *Service) Notifications(ctx context.Context, p auth.Principal, in NotificationsInput) (NotificationPage, error) {
	n, err := s.notifier()
	if err != nil {
		return NotificationPage{}, err
	}
	sid, err := notificationSession(p, in.SessionID)
	if err != nil {
		return NotificationPage{}, err
	}
	limit, err := checkLimit(in.Limit, DefaultNotificationLimit, MaxNotificationLimit)
	if err != nil {
		return NotificationPage{}, err
	}
	after := in.After
	if after != "" && !notify.ValidCursor(after) {
		return NotificationPage{}, badCursor()
	}
	if after == "" {
		if after, err = n.Cursor(ctx, sid); err != nil {
			return NotificationPage{}, storeErr("", err)
		}
	}
	ns, err := n.List(ctx, sid, after, limit)
	if err != nil {
		return NotificationPage{}, storeErr("", err)
	}
	out := NotificationPage{SessionID: sid, Notifications: ns, Cursor: after}
	if out.Notifications == nil {
		out.Notifications = []Notification{}
	}
	if len(ns) > 0 {
		out.Cursor = ns[len(ns)-1].ID
		if !in.KeepUnread {
			if err := n.MarkRead(ctx, sid, out.Cursor); err != nil {
				return NotificationPage{}, storeErr("", err)
			}
		}
		s.delivered("poll", ns)
	}
	if rest, err := n.Unread(ctx, sid, maxUnreadCount); err == nil {
		out.Unread = len(rest)
	}
	return out, nil
}

// MaxNotificationsPerResponse is how many unread notifications ride on
// one response (TakeNotifications' default).
const MaxNotificationsPerResponse = 20

// TakeNotifications is the "next interaction" delivery: the unread
// notifications of p's session (at most limit; 0 = MaxNotificationsPerResponse),
// marked read and counted as delivered via next_interaction, for a front
// end to show with whatever it answers next. A caller without a session
// (the admin, nobody) and a server without notifications get none. The
// notifications are marked read before they are returned: on an error
// none is returned and none is marked.
func (s *Service) TakeNotifications(ctx context.Context, p auth.Principal, limit int) ([]Notification, error) {
	if p.SessionID == "" || s.cfg.Notifications == nil {
		return nil, nil
	}
	if limit <= 0 {
		limit = MaxNotificationsPerResponse
	}
	ns, err := s.cfg.Notifications.TakeUnread(ctx, p.SessionID, limit)
	if err != nil {
		return nil, storeErr("", err)
	}
	s.delivered("next_interaction", ns)
	return ns, nil
}

// NotificationFollowInput opens a live feed of a session's notifications.
type NotificationFollowInput struct {
	// SessionID: as NotificationsInput.SessionID.
	SessionID string
	// After starts after this id ("0": from the start); "" starts at the
	// session's read cursor (the unread ones first).
	After string
	// Via names the transport for the delivery metrics ("websocket",
	// "sse", ...).
	Via string
}

// NotificationFeed is an open live feed; Follow runs it.
type NotificationFeed struct {
	s     *Service
	n     *notify.Notifier
	sid   string
	after string
	via   string
}

// SessionID is the session the feed follows.
func (f *NotificationFeed) SessionID() string { return f.sid }

// OpenNotifications checks who may follow which session from where, so a
// front end can answer a refusal before it starts streaming.
func (s *Service) OpenNotifications(ctx context.Context, p auth.Principal, in NotificationFollowInput) (*NotificationFeed, error) {
	n, err := s.notifier()
	if err != nil {
		return nil, err
	}
	if s.cfg.NotificationHub == nil {
		return nil, Conflict("notifications_unavailable", "this server has no live notification feed")
	}
	sid, err := notificationSession(p, in.SessionID)
	if err != nil {
		return nil, err
	}
	after := in.After
	if after != "" && !notify.ValidCursor(after) {
		return nil, badCursor()
	}
	if after == "" {
		if after, err = n.Cursor(ctx, sid); err != nil {
			return nil, storeErr("", err)
		}
	}
	return &NotificationFeed{s: s, n: n, sid: sid, after: after, via: in.Via}, nil
}

// Follow sends the feed's notifications, then each new one as it is
// written, marking them read once sent, until ctx ends or send or ping
// fails; ping runs every pingEvery while nothing arrives.
func (f *NotificationFeed) Follow(ctx context.Context, pingEvery time.Duration, send func(Notification) error, ping func() error) error {
	return f.n.Follow(ctx, f.s.cfg.NotificationHub, f.sid, f.after, pingEvery, send, ping,
		func(ns []Notification) { f.s.delivered(f.via, ns) })
}

func (s *Service) delivered(via string, ns []Notification) {
	if s.cfg.OnNotificationDelivered == nil {
		return
	}
	now := s.cfg.Now()
	for _, n := range ns {
		s.cfg.OnNotificationDelivered(via, n, now)
	}
}

// notificationSession is the session whose notifications p may see: its
// own (naming another is refused), or the one the admin names.
func notificationSession(p auth.Principal, asked string) (string, error) {
	switch {
	case p.SessionID != "":
		if asked != "" && asked != p.SessionID {
			return "", &Error{Kind: KindForbidden, Code: "forbidden", Field: "session_id", Message: "a session sees only its own notifications"}
		}
		return p.SessionID, nil
	case p.Admin:
		if asked == "" {
			return "", Invalid("invalid_parameter", "session_id", "session_id is required for the admin: whose notifications")
		}
		if len(asked) > 128 || strings.ContainsAny(asked, " {}\t\r\n") {
			return "", Invalid("invalid_parameter", "session_id", "session_id %q is malformed", truncate(asked, 64))
		}
		return asked, nil
	}
	return "", Unauthenticated("credentials required")
}

func badCursor() *Error {
	return Invalid("invalid_parameter", "after", "after must be a notification id like 1700000000000-0, or 0 for the start")
}

func (s *Service) notifier() (*notify.Notifier, error) {
	if s.cfg.Notifications == nil {
		return nil, Conflict("notifications_unavailable", "this server does not serve notifications")
	}
	return s.cfg.Notifications, nil
}
