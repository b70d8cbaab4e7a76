// Package extsvc is the library for writing an external service of
// taskflow in Go: a process that takes the tasks of its types from the
// agent:stream:task.create stream through its own consumer group
// ({service}-group), runs them, reports progress, and publishes
// task.completed or task.failed. docs/protocol.md describes the
// same protocol for services in other languages.
//
// Delivery is at least once: an entry stays pending in the group until the
// service has published the task's outcome, and a live worker keeps its
// entries fresh with a heartbeat; a worker that dies leaves them to be
// claimed (XAUTOCLAIM) by another worker of the service after ClaimIdle.
// The orchestrator applies each task's outcome at most once.
package extsvc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/protocol"
)

// Config configures a Server.
type Config struct {
	// ArtifactDir is a directory shared with the API processes
	// (TASKFLOW_ARTIFACT_DIR) where PutFile puts files larger than
	// protocol.MaxArtifactBytes, as <dir>/<task id>/<name>. Default empty:
	// PutFile refuses those (ErrFileTooLarge).
	ArtifactDir string
	// Name is the service's name; its consumer group is Name+"-group" and
	// it appears in completed_by / failed_by. Required.
	Name string
	// Namespace is the deployment's key namespace (TASKFLOW_NAMESPACE).
	// Default "taskflow".
	Namespace string
	// Consumer is this process's consumer name in the group. Default
	// Name-worker-<hostname>-<pid>.
	Consumer string
	// Concurrency is how many tasks run at once. Default 5 (the original
	// batch size).
	Concurrency int
	// Block is how long one read waits for new entries. Default 1s.
	Block time.Duration
	// HeartbeatInterval is how often held entries are touched and the
	// registration renewed. Default 2s.
	HeartbeatInterval time.Duration
	// ClaimIdle is how long an entry may go untouched before another
	// worker claims it (its holder is presumed dead). Default 15s; must
	// exceed 2×HeartbeatInterval.
	ClaimIdle time.Duration
	// Grace bounds a graceful stop: running tasks get this long to finish;
	// then their contexts are cancelled and their entries are left for
	// another worker to claim. Default 30s.
	Grace time.Duration
	// Retention is how long published events are kept (XADD MINID).
	// Default 7 days.
	Retention time.Duration
	// Logger receives the lifecycle log lines. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with unset fields defaulted.
func (c Config) WithDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = keyspace.DefaultName // TASKFLOW_NAMESPACE's default
	}
	if c.Consumer == "" {
		host, _ := os.Hostname()
		c.Consumer = fmt.Sprintf("%s-worker-%s-%d", c.Name, host, os.Getpid())
	}
	if c.Concurrency == 0 {
		c.Concurrency = 5
	}
	if c.Block == 0 {
		c.Block = time.Second
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 2 * time.Second
	}
	if c.ClaimIdle == 0 {
		c.ClaimIdle = 15 * time.Second
	}
	if c.Grace == 0 {
		c.Grace = 30 * time.Second
	}
	if c.Retention == 0 {
		c.Retention = protocol.DefaultRetention
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate says what is wrong with c (after WithDefaults).
func (c Config) Validate() error {
	switch {
	case c.Name == "" || strings.ContainsAny(c.Name, " {}\t\n"):
		return fmt.Errorf("extsvc: Name %q must be non-empty without spaces or braces", c.Name)
	case c.Concurrency < 1:
		return fmt.Errorf("extsvc: Concurrency %d must be ≥ 1", c.Concurrency)
	case c.Block < time.Millisecond:
		return fmt.Errorf("extsvc: Block %s must be ≥ 1ms", c.Block)
	case c.HeartbeatInterval <= 0:
		return fmt.Errorf("extsvc: HeartbeatInterval %s must be positive", c.HeartbeatInterval)
	case c.ClaimIdle <= 2*c.HeartbeatInterval:
		return fmt.Errorf("extsvc: ClaimIdle %s must exceed twice HeartbeatInterval %s", c.ClaimIdle, c.HeartbeatInterval)
	case c.Grace < 0:
		return fmt.Errorf("extsvc: Grace %s is negative", c.Grace)
	}
	return nil
}

// Task is one task handed to a handler.
type Task struct {
	ID        string
	Type      string
	SessionID string
	// Params is the task's JSON object (or null).
	Params   json.RawMessage
	Timeout  time.Duration
	Priority string
	// Attempt counts dispatches of the task, from 1.
	Attempt int
	// CreatedAt is the create event's timestamp.
	CreatedAt time.Time
	// Traceparent is task.create's W3C trace context ("" when the task is
	// not traced). The handler's context already carries the span that
	// continues it (see Server); a handler passing work on to another
	// process may forward it.
	Traceparent string

	token   string
	svc     *Server
	started time.Time
}

// Progress publishes a task.progress event: percent done (0–100), a short
// message and an estimate of the time left (0 when unknown).
func (t *Task) Progress(ctx context.Context, percent float64, message string, eta time.Duration) error {
	e, err := protocol.New(protocol.TypeProgress, t.svc.cfg.Now(), protocol.ProgressData{
		TaskID: t.ID, Percent: percent, Message: message, ETASeconds: eta.Seconds(),
		ReportedBy: t.svc.cfg.Name, Token: t.token,
	})
	if err != nil {
		return err
	}
	_, err = t.svc.pub.Publish(ctx, t.svc.keys.Progress(), e)
	return err
}

// ErrFileTooLarge: a file over protocol.MaxArtifactBytes with no
// Config.ArtifactDir to put it in.
var ErrFileTooLarge = errors.New("extsvc: file too large for the artifact store")

// PutFile stores data as the task's result file name (its content type,
// e.g. "text/csv") in taskflow's artifact store and returns the URL the API
// serves it at to the task's session: put it in the result's file_url. A
// file up to protocol.MaxArtifactBytes goes into Redis; a larger one into
// Config.ArtifactDir (ErrFileTooLarge without one), its entry in Redis.
// Either is kept protocol.ArtifactTTL. name is one path segment
// (protocol.CheckArtifactName). Storing the same name again replaces the
// file (a redone attempt).
func (t *Task) PutFile(ctx context.Context, name, contentType string, data []byte) (string, error) {
	if err := protocol.CheckArtifactName(name); err != nil {
		return "", err
	}
	if err := protocol.CheckArtifactName(t.ID); err != nil {
		return "", fmt.Errorf("task id %q cannot name a file: %w", t.ID, err)
	}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	sum := sha256.Sum256(data)
	fields := []any{"content_type", contentType, "size", len(data), "sha256", hex.EncodeToString(sum[:])}
	if len(data) <= protocol.MaxArtifactBytes {
		fields = append(fields, "data", data)
	} else {
		if t.svc.cfg.ArtifactDir == "" {
			return "", fmt.Errorf("%w: %s is %d bytes, the store keeps up to %d without an artifact directory (TASKFLOW_ARTIFACT_DIR)",
				ErrFileTooLarge, name, len(data), protocol.MaxArtifactBytes)
		}
		if err := protocol.WriteArtifactFile(t.svc.cfg.ArtifactDir, t.ID, name, data); err != nil {
			return "", err
		}
		fields = append(fields, "location", protocol.ArtifactInDir)
	}
	key := t.svc.keys.Artifact(t.ID, name)
	_, err := t.svc.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.Del(ctx, key) // a replaced file leaves no field of the old one
		pl.HSet(ctx, key, fields...)
		pl.PExpire(ctx, key, protocol.ArtifactTTL)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("store artifact %s: %w", name, err)
	}
	return protocol.FileURL(t.ID, name), nil
}

// UnmarshalParams decodes the task's params into v, rejecting unknown
// fields; a failure is a permanent INVALID_PARAMS error.
func (t *Task) UnmarshalParams(v any) error {
	if len(t.Params) == 0 || string(t.Params) == "null" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(t.Params)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Fail("INVALID_PARAMS", "params: "+err.Error(), false)
	}
	return nil
}

// Handler runs one task and returns its result (a JSON object: by
// convention file_url, summary and metadata; docs/protocol.md) or an error. Return an *Error (see
// Fail) to choose the error code and whether the agent retries; any other
// error is reported as INTERNAL_ERROR, not retried, and a context error
// after a cancel request as CANCELLED.
type Handler interface {
	Handle(ctx context.Context, t *Task) (json.RawMessage, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t *Task) (json.RawMessage, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, t *Task) (json.RawMessage, error) { return f(ctx, t) }

// Error is a failure with error code, message and details.
type Error struct {
	Code      string
	Message   string
	Details   map[string]any
	Retryable bool
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Fail returns an *Error; retryable failures are retried by the agent with
// backoff, the others go to the DLQ.
func Fail(code, message string, retryable bool) *Error {
	return &Error{Code: code, Message: message, Retryable: retryable}
}

// ErrCancelled is the cause of a task context cancelled by a cancel event.
var ErrCancelled = errors.New("task cancelled by the agent")

// errStopping is the cause of a task context cancelled by a graceful stop
// past its grace: the task is left for another worker.
var errStopping = errors.New("service stopping")

// Result builds result object.
func Result(fileURL, summary string, metadata map[string]any) json.RawMessage {
	if metadata == nil {
		metadata = map[string]any{}
	}
	b, _ := json.Marshal(map[string]any{"file_url": fileURL, "summary": summary, "metadata": metadata})
	return b
}

// clientOf is a small seam so that tests can hand a *redis.Client.
type clientOf = redis.UniversalClient
