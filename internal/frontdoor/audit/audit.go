// Package audit keeps the audit trail: every change an operator makes
// through the API (retry, cancel, delete, bulk DLQ actions, breaker
// commands, schedule changes, named keys), with who made it (the key's
// name), when, and on what. It is a Redis stream in the deployment's
// namespace, trimmed to Config.Retention as it is written.
package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
)

// DefaultRetention is how long entries are kept unless Config says.
const DefaultRetention = 90 * 24 * time.Hour

// Config configures a Log.
type Config struct {
	// Namespace is the deployment's key namespace. Required.
	Namespace keyspace.Namespace
	// Retention is how long an entry is kept (TASKFLOW_AUDIT_RETENTION).
	// Default DefaultRetention (90 days).
	Retention time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Archive, when set, keeps every entry beyond the retention too (the
	// PostgreSQL archive of DATABASE_URL).
	Archive Archiver
}

// Archiver keeps entries elsewhere (internal/external/archive implements
// it); an entry's id makes a repeated write harmless.
type Archiver interface {
	PutAuditEntry(ctx context.Context, id string, at time.Time, actor, role, action, target string, status int, client string) error
}

// Log writes and reads the audit trail. Safe for concurrent use.
type Log struct {
	rdb redis.UniversalClient
	cfg Config
}

// New returns the audit trail over rdb.
func New(rdb redis.UniversalClient, cfg Config) (*Log, error) {
	if cfg.Namespace.IsZero() {
		return nil, errors.New("audit: Config.Namespace is required")
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Retention < 0 {
		return nil, fmt.Errorf("audit: Retention %s must be positive", cfg.Retention)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Log{rdb: rdb, cfg: cfg}, nil
}

// Entry is one change.
type Entry struct {
	// ID is the entry's stream id (its time in ms, then a sequence): the
	// cursor of List.
	ID string    `json:"id"`
	At time.Time `json:"at"`
	// Actor is who made it: a named key's name, "admin" (the admin key),
	// "open" (open mode).
	Actor string `json:"actor"`
	Role  string `json:"role" openapi:"enum=admin|operator|viewer"`
	// Action is the API route: "POST /api/v1/tasks/{task_id}/retry".
	Action string `json:"action" jsonschema:"the route, e.g. POST /api/v1/tasks/{task_id}/retry"`
	// Target is what it acted on: the route's path values ("task_id=…"),
	// and its query, if any.
	Target string `json:"target,omitempty" jsonschema:"what it acted on: the route's path values, e.g. task_id=01a2…"`
	// Status is the HTTP status of the answer (a change that failed is not
	// recorded).
	Status int    `json:"status"`
	Client string `json:"client,omitempty" jsonschema:"the caller's address"`
}

// Record appends e (its ID, and so its time, is Redis's) and trims
// entries older than the retention (exactly: changes are few, and an
// approximate trim would keep a whole node of old entries).
func (l *Log) Record(ctx context.Context, e Entry) error {
	now := l.cfg.Now()
	minID := strconv.FormatInt(now.Add(-l.cfg.Retention).UnixMilli(), 10)
	id, err := l.rdb.XAdd(ctx, &redis.XAddArgs{Stream: streamKey(l.cfg.Namespace), MinID: minID,
		Values: []any{"actor", e.Actor, "role", e.Role, "action", e.Action, "target", e.Target,
			"status", strconv.Itoa(e.Status), "client", e.Client}}).Result()
	if err != nil {
		return fmt.Errorf("audit: record: %w", err)
	}
	if l.cfg.Archive != nil {
		at := entryOf(redis.XMessage{ID: id}).At
		if err := l.cfg.Archive.PutAuditEntry(ctx, id, at, e.Actor, e.Role, e.Action, e.Target, e.Status, e.Client); err != nil {
			return fmt.Errorf("audit: archive: %w", err)
		}
	}
	return nil
}

// Filter narrows List.
type Filter struct {
	// Before is a cursor: entries older than this id (the last id of the
	// previous page); "" starts at the newest.
	Before string
	// Limit is the page size, 1-1000. Default 100.
	Limit int
	// Actor, when set, keeps one actor's entries.
	Actor string
}

// List returns entries newest first, and the cursor of the next page (""
// at the end).
func (l *Log) List(ctx context.Context, f Filter) ([]Entry, string, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	if f.Limit > 1000 {
		return nil, "", fmt.Errorf("audit: Limit %d: at most 1000", f.Limit)
	}
	end := "+"
	if f.Before != "" {
		if !validID(f.Before) {
			return nil, "", fmt.Errorf("audit: Before %q is not an entry id", f.Before)
		}
		end = "(" + f.Before
	}
	out := []Entry{}
	for len(out) < f.Limit {
		xs, err := l.rdb.XRevRangeN(ctx, streamKey(l.cfg.Namespace), end, "-", int64(f.Limit)).Result()
		if err != nil {
			return nil, "", fmt.Errorf("audit: list: %w", err)
		}
		for _, x := range xs {
			e := entryOf(x)
			if f.Actor == "" || e.Actor == f.Actor {
				out = append(out, e)
				if len(out) == f.Limit {
					return out, e.ID, nil
				}
			}
		}
		if len(xs) < f.Limit {
			return out, "", nil
		}
		end = "(" + xs[len(xs)-1].ID
	}
	return out, out[len(out)-1].ID, nil
}

func entryOf(x redis.XMessage) Entry {
	str := func(k string) string { s, _ := x.Values[k].(string); return s }
	e := Entry{ID: x.ID, Actor: str("actor"), Role: str("role"), Action: str("action"), Target: str("target"), Client: str("client")}
	e.Status, _ = strconv.Atoi(str("status"))
	if ms, _, ok := strings.Cut(x.ID, "-"); ok {
		if n, err := strconv.ParseInt(ms, 10, 64); err == nil {
			e.At = time.UnixMilli(n).UTC()
		}
	}
	return e
}

// validID: a stream id, "ms-seq" or "ms".
func validID(id string) bool {
	ms, seq, found := strings.Cut(id, "-")
	if _, err := strconv.ParseUint(ms, 10, 64); err != nil {
		return false
	}
	if found {
		if _, err := strconv.ParseUint(seq, 10, 64); err != nil {
			return false
		}
	}
	return true
}
