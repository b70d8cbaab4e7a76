// Package notify tells a session about its tasks, in format,
// on the stream user:stream:notifications:{session_id}, and delivers the
// notifications three ways: riding on the session's next API response
// (TakeUnread, which the service layer calls for the HTTP API), live over
// WebSocket and SSE (Follow, fed by a Hub), and by polling (List, Unread,
// MarkRead). A read cursor per session marks what
// has been shown; every delivery path advances it.
package notify

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/redisconn"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskflow/taskflow/internal/platform/tracing"
)

// The API paths of notifications (served by internal/frontend/httpapi, which also
// delivers the unread ones on a session's next response through the
// service layer).
const (
	PathPoll      = "/api/v1/notifications"
	PathWebSocket = "/api/v1/notifications/ws"
	PathSSE       = "/api/v1/notifications/stream"
)

// Kind is a notification's type.
type Kind string

// The notification types.
const (
	KindCompleted Kind = "task_completed"
	KindFailed    Kind = "task_failed"
	KindTimeout   Kind = "task_timeout"
	KindCancelled Kind = "task_cancelled"
)

// Notification is message format. ID is the stream entry id
// (the cursor for polling and resuming), not part of the spec's object:
// empty in the body stored in the stream, set on every notification read
// back (so the API's schema has it required).
type Notification struct {
	ID             string    `json:"id,omitempty" openapi:"required" jsonschema:"the stream entry id: the cursor to resume after (?after=, Last-Event-ID)"`
	NotificationID string    `json:"notification_id" jsonschema:"the notification's own id (stable for one event of one task)"`
	Type           Kind      `json:"type" openapi:"enum=task_completed|task_failed|task_timeout|task_cancelled" jsonschema:"task_failed: it is in the DLQ; task_timeout: it is overdue, still running"`
	TaskID         string    `json:"task_id"`
	TaskType       string    `json:"task_type"`
	Message        string    `json:"message" jsonschema:"what happened, in words"`
	Action         string    `json:"action" jsonschema:"what the client may do next: retrieve_result, view_error, none"`
	Timestamp      time.Time `json:"timestamp"`
	Priority       string    `json:"priority" openapi:"enum=high|normal|low" jsonschema:"the task's priority"`
}

// notificationJSON is a Notification on the wire: the timestamp in
// millisecond form.
type notificationJSON struct {
	plainNotification
	Timestamp string `json:"timestamp" openapi:"format=date-time" jsonschema:"when it was written, RFC 3339 in milliseconds"`
}

type plainNotification Notification

// MarshalJSON writes the timestamp in millisecond form.
func (n Notification) MarshalJSON() ([]byte, error) {
	return json.Marshal(notificationJSON{plainNotification(n), n.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z")})
}

// WireForm is a value of the struct MarshalJSON writes.
func (Notification) WireForm() any { return notificationJSON{} }

// Config configures a Notifier.
type Config struct {
	// Namespace is the deployment's namespace. Required.
	Namespace keyspace.Namespace
	// MaxLen caps a session's notification stream (approximate). Default 1000.
	MaxLen int64
	// TTL is how long a session's notifications live after the newest one
	// (86400 s). Default 24h.
	TTL time.Duration
	// DedupeTTL is how long a notification id given by the caller is
	// remembered per session, so that writing it again adds nothing.
	// Default 24h (TTL's default: the life of the notifications themselves).
	DedupeTTL time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with unset fields defaulted.
func (c Config) WithDefaults() Config {
	if c.MaxLen == 0 {
		c.MaxLen = 1000
	}
	if c.TTL == 0 {
		c.TTL = 24 * time.Hour
	}
	if c.DedupeTTL == 0 {
		c.DedupeTTL = 24 * time.Hour
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate says what is wrong with c.
func (c Config) Validate() error {
	if c.MaxLen < 1 {
		return fmt.Errorf("notify: MaxLen %d must be ≥ 1", c.MaxLen)
	}
	if c.TTL < time.Second {
		return fmt.Errorf("notify: TTL %s must be ≥ 1s", c.TTL)
	}
	if c.DedupeTTL < time.Second {
		return fmt.Errorf("notify: DedupeTTL %s must be ≥ 1s", c.DedupeTTL)
	}
	return nil
}

//go:embed scripts/advance.lua
var advanceLua string

var advanceScript = redis.NewScript(advanceLua)

//go:embed scripts/notes.lua
var notesLua string

//go:embed scripts/write.lua
var writeLua string

var writeScript = redis.NewScript(WriteLua + "\n" + writeLua)

// WriteLua is the Lua source of write_notes (scripts/notes.lua), the
// writing of notifications that NotifyMany does, for a script of another
// package that writes them together with its own writes: prepend it, and
// pass Prepare's keys and values and WriteArgs as notes.lua describes.
var WriteLua = notesLua

//go:embed scripts/unread.lua
var unreadLua string

var unreadScript = redis.NewScript(unreadLua)

// ErrNoSession: a notification needs a session id.
var ErrNoSession = errors.New("notify: no session id")

// Notifier writes and reads session notifications. Safe for concurrent use.
type Notifier struct {
	rdb  redis.UniversalClient
	cfg  Config
	keys keys
}

// New returns a Notifier on rdb (owned by the caller).
func New(rdb redis.UniversalClient, cfg Config) (*Notifier, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Namespace.IsZero() {
		return nil, errors.New("notify: Config.Namespace is required")
	}
	return &Notifier{rdb: rdb, cfg: cfg, keys: newKeys(cfg.Namespace)}, nil
}

// Notify appends n to the session's stream and announces it to every
// process's Hub, in one script call. Empty Timestamp and Priority are filled in. An empty
// NotificationID gets a random one; a NotificationID given by the caller
// (see StableID) is written at most once per session within DedupeTTL:
// writing it again adds nothing and returns n with an empty ID, so a
// caller that replays its work after a crash does not notify twice. It
// returns n as stored (with ID).
//
// The write is a producer span "publish notification" of ctx's trace (the
// task's, when the outcome's apply calls it).
func (s *Notifier) Notify(ctx context.Context, sessionID string, n Notification) (_ Notification, err error) {
	ctx, span := tracing.Start(ctx, "publish notification", "", trace.SpanKindProducer)
	defer func() {
		if span.IsRecording() {
			span.SetAttributes(append(tracing.Messaging("send", s.keys.stream(sessionID), n.ID),
				tracing.AttrOperationName.String("notify"), attribute.String("taskflow.task.id", n.TaskID),
				attribute.String("taskflow.notification.type", string(n.Type)))...)
			tracing.Fail(span, err, "")
		}
		span.End()
	}()
	out, errs := s.NotifyMany(ctx, []Delivery{{SessionID: sessionID, Notification: n}})
	n = out[0]
	return out[0], errs[0]
}

// Delivery is one notification for NotifyMany: the session it is for.
type Delivery struct {
	SessionID    string
	Notification Notification
}

// NotifyMany is Notify for several notifications (of any sessions) in one
// round trip: one write.lua call for all of them, each written at most
// once by its id as with Notify, each session announced once. It returns each as stored and its
// error, in order.
func (s *Notifier) NotifyMany(ctx context.Context, ds []Delivery) ([]Notification, []error) {
	p := s.Prepare(ds, nil)
	if len(p.At) == 0 {
		return p.Out, p.Errs
	}
	keys := make([]string, 0, 2*len(p.At))
	args := append(make([]any, 0, 5+3*len(p.At)), s.WriteArgs()...)
	for j := range p.At {
		keys = append(keys, p.Streams[j], p.Markers[j])
		args = append(args, p.Bodies[j], p.Sessions[j], p.Marked[j])
	}
	// one call for the batch (write.lua), each session announced once
	res, err := writeScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err == nil && len(res) != len(p.At) {
		err = fmt.Errorf("write.lua answered %d results for %d notifications", len(res), len(p.At))
	}
	for j, i := range p.At {
		switch {
		case err != nil:
			p.Errs[i] = fmt.Errorf("notify: write %s: %w", p.Streams[j], err)
		case res[j] == nil: // written before
		default:
			p.Out[i].ID, _ = res[j].(string)
		}
	}
	return p.Out, p.Errs
}

// Prepared is a batch of notifications encoded for write.lua, or for a
// caller's own script that writes them atomically with its other writes
// (the outcome consumer's apply_batch.lua, which does what write.lua does
// with the same keys and arguments).
type Prepared struct {
	// Out is each delivery's notification as it will be stored (its ID
	// empty), Errs each one's error (ErrNoSession, an encoding error): the
	// deliveries with an error are not to be written.
	Out  []Notification
	Errs []error
	// At lists the positions (in the deliveries) of those to write; then,
	// in that order, each one's stream, write-once marker (its stream
	// again when none applies), JSON body, session id and whether the
	// marker applies ("1", else "0").
	At       []int
	Streams  []string
	Markers  []string
	Bodies   []string
	Sessions []string
	Marked   []string
}

// Prepare encodes ds for writing (see NotifyMany), as Notify would:
// empty Timestamp and Priority filled in, an empty NotificationID given a
// fresh one (and no marker). once, when not nil, says per delivery
// whether a given NotificationID is written at most once (its marker
// checked and set): a caller whose own atomic write already ensures it
// passes false and saves the marker.
func (s *Notifier) Prepare(ds []Delivery, once []bool) Prepared {
	p := Prepared{Out: make([]Notification, len(ds)), Errs: make([]error, len(ds)), At: make([]int, 0, len(ds))}
	for i, d := range ds {
		n := d.Notification
		p.Out[i] = n
		if d.SessionID == "" {
			p.Errs[i] = ErrNoSession
			continue
		}
		marked := "1"
		if once != nil && !once[i] {
			marked = "0"
		}
		if n.NotificationID == "" {
			n.NotificationID = "notif-" + uuid.NewString()
			marked = "0" // a fresh id: nothing to write once
		}
		if n.Timestamp.IsZero() {
			n.Timestamp = s.cfg.Now()
		}
		if n.Priority == "" {
			n.Priority = "normal"
		}
		n.ID = ""
		p.Out[i] = n
		// MarshalJSON itself: json.Marshal(n) would check and compact
		// what it writes, which is compact JSON already
		body, err := n.MarshalJSON()
		if err != nil {
			p.Errs[i] = fmt.Errorf("notify: encode: %w", err)
			continue
		}
		// the stream of the session before (a batch is mostly one
		// session's) is not named again; a notification without a marker
		// names its stream in the marker's place (a key not touched)
		stream := ""
		if k := len(p.At); k > 0 && p.Sessions[k-1] == d.SessionID {
			stream = p.Streams[k-1]
		} else {
			stream = s.keys.stream(d.SessionID)
		}
		marker := stream
		if marked == "1" {
			marker = s.keys.sent(d.SessionID, n.NotificationID)
		}
		p.At = append(p.At, i)
		p.Streams = append(p.Streams, stream)
		p.Markers = append(p.Markers, marker)
		p.Bodies = append(p.Bodies, string(body))
		p.Sessions = append(p.Sessions, d.SessionID)
		p.Marked = append(p.Marked, marked)
	}
	return p
}

// StreamPrefix is the name of every session's notification stream
// without the session id that ends it: for a script that writes
// notifications of sessions it learns itself (the outcome consumer's
// settle.lua, with write_note_list).
func (s *Notifier) StreamPrefix() string { return s.keys.stream("") }

// WriteArgs are write.lua's arguments for a whole batch: the streams'
// approximate length cap, the streams' and the markers' lifetimes in
// seconds, the Hubs' pub/sub channel and the command that publishes on it.
func (s *Notifier) WriteArgs() []any {
	return []any{s.cfg.MaxLen, int64(s.cfg.TTL / time.Second), int64(s.cfg.DedupeTTL / time.Second),
		s.keys.channel(), redisconn.PublishCommand(s.rdb)}
}

// StableID is the notification id of the notification about one event of
// a task (kind, for the attempt with token attempt): the same arguments
// give the same "notif-<uuid>", so Notify writes it once however often
// the caller replays the event.
func StableID(kind Kind, taskID, attempt string) string {
	// uuid.NewSHA1(stableSpace, kind NUL taskID NUL attempt), written out:
	// one allocation (the string) instead of five
	buf := make([]byte, 0, 256)
	buf = append(buf, stableSpace[:]...)
	buf = append(buf, kind...)
	buf = append(buf, 0)
	buf = append(buf, taskID...)
	buf = append(buf, 0)
	buf = append(buf, attempt...)
	sum := sha1.Sum(buf)
	sum[6] = (sum[6] & 0x0f) | 0x50 // version 5
	sum[8] = (sum[8] & 0x3f) | 0x80 // RFC 4122 variant
	const hexDigits = "0123456789abcdef"
	var out [len("notif-") + 36]byte
	n := copy(out[:], "notif-")
	for i, b := range sum[:16] {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[n] = '-'
			n++
		}
		out[n], out[n+1] = hexDigits[b>>4], hexDigits[b&0x0f]
		n += 2
	}
	return string(out[:])
}

// stableSpace is the UUID name space of StableID.
var stableSpace = uuid.MustParse("6f1c0c1e-4d2a-5b7e-9a51-0c3f6d1e2b7a")

// StreamKey is the Redis key of sessionID's notification stream (a
// stream of entries whose field n holds the notification's JSON).
func (s *Notifier) StreamKey(sessionID string) string { return s.keys.stream(sessionID) }

// List returns up to limit (1–1000) notifications of the session after the
// stream id after ("" or "0" for the oldest kept), oldest first.
func (s *Notifier) List(ctx context.Context, sessionID, after string, limit int) ([]Notification, error) {
	if limit < 1 || limit > 1000 {
		limit = 100
	}
	start := "-"
	if after != "" && after != "0" && after != "0-0" {
		if !validID(after) {
			return nil, fmt.Errorf("notify: cursor %q is not a stream id like 1700000000000-0", after)
		}
		start = "(" + after
	}
	xs, err := s.rdb.XRangeN(ctx, s.keys.stream(sessionID), start, "+", int64(limit)).Result()
	if err != nil {
		return nil, fmt.Errorf("notify: read: %w", err)
	}
	out := make([]Notification, 0, len(xs))
	for _, x := range xs {
		raw, _ := x.Values["n"].(string)
		if n, ok := decode(x.ID, raw); ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// decode is one stream entry's notification (its field "n"); a damaged
// entry is not ours to fail on and is skipped.
func decode(id, raw string) (Notification, bool) {
	var n Notification
	if err := json.Unmarshal([]byte(raw), &n); err != nil {
		return n, false
	}
	n.ID = id
	return n, true
}

// Cursor returns the id of the newest notification the session has been
// shown ("0-0" when none).
func (s *Notifier) Cursor(ctx context.Context, sessionID string) (string, error) {
	c, err := s.rdb.Get(ctx, s.keys.cursor(sessionID)).Result()
	if errors.Is(err, redis.Nil) {
		return "0-0", nil
	}
	if err != nil {
		return "", fmt.Errorf("notify: cursor: %w", err)
	}
	return c, nil
}

// Unread returns up to limit notifications the session has not been shown.
// One script call reads the cursor and the entries after it.
func (s *Notifier) Unread(ctx context.Context, sessionID string, limit int) ([]Notification, error) {
	if limit < 1 || limit > 1000 {
		limit = 100
	}
	reply, err := unreadScript.Run(ctx, s.rdb, []string{s.keys.cursor(sessionID), s.keys.stream(sessionID)}, limit).Slice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("notify: unread: %w", err)
	}
	out := make([]Notification, 0, len(reply))
	for _, e := range reply {
		entry, _ := e.([]any)
		if len(entry) != 2 {
			continue
		}
		id, _ := entry[0].(string)
		fields, _ := entry[1].([]any)
		for i := 0; i+1 < len(fields); i += 2 {
			if f, _ := fields[i].(string); f == "n" {
				raw, _ := fields[i+1].(string)
				if n, ok := decode(id, raw); ok {
					out = append(out, n)
				}
				break
			}
		}
	}
	return out, nil
}

// MarkRead moves the session's cursor forward to id (never back).
func (s *Notifier) MarkRead(ctx context.Context, sessionID, id string) error {
	if id == "" {
		return nil
	}
	if !validID(id) {
		return fmt.Errorf("notify: %q is not a stream id", id)
	}
	ttl := int64(s.cfg.TTL / time.Second)
	if err := advanceScript.Run(ctx, s.rdb, []string{s.keys.cursor(sessionID)}, id, ttl).Err(); err != nil {
		return fmt.Errorf("notify: mark read: %w", err)
	}
	return nil
}

// TakeUnread returns the unread notifications and marks them read: the
// "next interaction" delivery.
func (s *Notifier) TakeUnread(ctx context.Context, sessionID string, limit int) ([]Notification, error) {
	ns, err := s.Unread(ctx, sessionID, limit)
	if err != nil || len(ns) == 0 {
		return ns, err
	}
	return ns, s.MarkRead(ctx, sessionID, ns[len(ns)-1].ID)
}

func validID(id string) bool {
	dash := false
	if id == "" || len(id) > 41 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9':
		case c == '-' && !dash && i > 0 && i < len(id)-1:
			dash = true
		default:
			return false
		}
	}
	return dash
}
