// Package protocol is the wire format: the Redis Streams that
// carry task events between the agent (orchestrator) and external services,
// their event schemas field for field, encoding and validated decoding, and
// the consumer-group operations both sides use (XREADGROUP, XACK,
// XAUTOCLAIM, and XCLAIM as a heartbeat).
//
// An event is one stream entry with four fields:
//
//	event_id    UUID v4
//	event_type  task.create | task.completed | task.failed | task.timeout | task.dlq | ...
//	timestamp   RFC 3339 UTC with milliseconds, e.g. 2024-01-01T12:00:00.000Z
//	data        a JSON object whose shape depends on event_type
package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Type is an event_type.
type Type string

// The event types (docs/protocol.md): Create, Completed, Failed, Timeout
// and DLQ are the base protocol; Progress and Cancel are its extensions.
const (
	TypeCreate    Type = "task.create"
	TypeCompleted Type = "task.completed"
	TypeFailed    Type = "task.failed"
	TypeTimeout   Type = "task.timeout"
	TypeDLQ       Type = "task.dlq"
	TypeProgress  Type = "task.progress"
	TypeCancel    Type = "task.cancel"
)

// Valid reports whether t is a known event type.
func (t Type) Valid() bool {
	switch t {
	case TypeCreate, TypeCompleted, TypeFailed, TypeTimeout, TypeDLQ, TypeProgress, TypeCancel:
		return true
	}
	return false
}

// TimeFormat is timestamp form: UTC with milliseconds and a Z.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// FormatTime renders t in TimeFormat (UTC).
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// Limits on what Decode accepts from a stream (outside input).
const (
	// MaxDataBytes bounds the data field of one event.
	MaxDataBytes = 1 << 20
	// MaxIDBytes bounds event_id, task_id and similar identifiers.
	MaxIDBytes = 128
)

// ErrInvalidEvent is wrapped by every decoding and validation error.
var ErrInvalidEvent = errors.New("invalid event")

// FieldError names the field of an event that is missing or malformed.
type FieldError struct {
	Field  string // "event_id", "data.task_id", ...
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("invalid event: %s: %s", e.Field, e.Reason) }

// Unwrap makes errors.Is(err, ErrInvalidEvent) true.
func (e *FieldError) Unwrap() error { return ErrInvalidEvent }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Event is one event as it travels in a stream entry.
type Event struct {
	ID        string          `json:"event_id"`
	Type      Type            `json:"event_type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
	// StreamID is the Redis entry id the event was read from ("" before
	// it is published). It is not part of the event.
	StreamID string `json:"-"`
	// valid: Data is known to be one JSON value (Decode checked it, New
	// wrote it), so Unmarshal need not check it again.
	valid bool
}

// New builds an event of type typ at now with a fresh UUID v4 and data
// marshalled to JSON.
func New(typ Type, now time.Time, data any) (Event, error) {
	if !typ.Valid() {
		return Event{}, fieldErr("event_type", "unknown type %q", typ)
	}
	raw, fast, err := appendData(nil, data)
	if !fast {
		raw, err = json.Marshal(data)
	}
	if err != nil {
		return Event{}, fmt.Errorf("stream: marshal %s data: %w", typ, err)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return Event{}, fieldErr("data", "must be a JSON object")
	}
	return Event{ID: uuid.NewString(), Type: typ, Timestamp: now.UTC().Truncate(time.Millisecond), Data: raw, valid: true}, nil
}

// Values returns the event as XADD field/value pairs.
func (e Event) Values() []any {
	return []any{"event_id", e.ID, "event_type", string(e.Type), "timestamp", FormatTime(e.Timestamp), "data", string(e.Data)}
}

// Decode validates the fields of one stream entry and returns its event.
// It never panics on any input; errors wrap ErrInvalidEvent and name the
// field (a *FieldError).
func Decode(streamID string, values map[string]any) (Event, error) {
	get := func(name string) (string, error) {
		v, ok := values[name]
		if !ok {
			return "", fieldErr(name, "missing")
		}
		s, ok := v.(string)
		if !ok {
			return "", fieldErr(name, "not a string")
		}
		return s, nil
	}
	e := Event{StreamID: streamID}
	id, err := get("event_id")
	if err != nil {
		return Event{}, err
	}
	if err := checkID("event_id", id); err != nil {
		return Event{}, err
	}
	e.ID = id
	typ, err := get("event_type")
	if err != nil {
		return Event{}, err
	}
	e.Type = Type(typ)
	if !e.Type.Valid() {
		return Event{}, fieldErr("event_type", "unknown type %q", truncate(typ))
	}
	ts, err := get("timestamp")
	if err != nil {
		return Event{}, err
	}
	if e.Timestamp, err = ParseTime(ts); err != nil {
		return Event{}, fieldErr("timestamp", "%v", err)
	}
	data, err := get("data")
	if err != nil {
		return Event{}, err
	}
	if len(data) > MaxDataBytes {
		return Event{}, fieldErr("data", "%d bytes exceeds %d", len(data), MaxDataBytes)
	}
	d := bytes.TrimSpace([]byte(data))
	if len(d) == 0 || d[0] != '{' || !json.Valid(d) {
		return Event{}, fieldErr("data", "not a JSON object")
	}
	e.Data = json.RawMessage(d)
	e.valid = true
	return e, nil
}

// ParseTime accepts RFC 3339 with or without fractional seconds.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want RFC 3339 like 2024-01-01T12:00:00.000Z, got %q", truncate(s))
	}
	return t.UTC(), nil
}

func checkID(field, s string) error {
	if s == "" {
		return fieldErr(field, "empty")
	}
	if len(s) > MaxIDBytes {
		return fieldErr(field, "longer than %d bytes", MaxIDBytes)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || c == '"' || c == '\\' {
			return fieldErr(field, "contains whitespace, control or quote characters")
		}
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
