// Package store persists tasks in Redis and moves them between states. Each
// transition is one Lua script (scripts/*.lua, embedded), atomic, guarded by
// the state it starts from (and, for a task being worked on, by its lease
// token), and safe to repeat. Every key name is built in keys.go.
//
// The store is the one way into the engine for the API, the workers, the
// scheduler and (later) the external-service orchestrator.
package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/eventlog"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/task"
)

// Store is the task store on one Redis (or Redis Cluster) and namespace.
// It is safe for concurrent use.
type Store struct {
	rdb redis.UniversalClient
	cfg Config
	ns  keyspace.Namespace
	// parts are the partitions' keys (one for a deployment of one
	// partition), global the keys outside them.
	parts  []keys
	global globalKeys
	// turn rotates the partition each Fetch starts at; woke is 1 + the
	// partition whose wake-up token ended the last WaitForWork (0: none
	// since the last Fetch), where the next Fetch starts instead.
	turn atomic.Uint32
	woke atomic.Int32
	// deep: the last Fetch took all it asked for (Fetch's two modes).
	deep atomic.Bool
	// probing marks the partitions whose shard stopped answering while a
	// goroutine probes them (partition.go): fetches leave them out.
	probing []atomic.Bool
	// downs end the calls in flight to a partition when it is marked down
	// (onPartition).
	downs []downSignal
	// callPrefix and calls name enqueue calls (enqueueCallID).
	callPrefix string
	calls      atomic.Uint64
	// knownQueues are the named queues this process has registered in
	// the deployment's set of queues (registerQueues).
	knownQueues sync.Map
}

// New returns a Store over client with cfg (defaults applied). The client
// stays owned by the caller.
func New(client redis.UniversalClient, cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errors.New("store: nil redis client")
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, fmt.Errorf("store: random enqueue-call prefix: %w", err)
	}
	ns, _ := keyspace.Parse(cfg.Namespace) // checked by Validate
	st := &Store{rdb: client, cfg: cfg, ns: ns, parts: partitionKeys(ns, cfg.Partitions), global: globalKeys{p: ns.Prefix()},
		callPrefix: hex.EncodeToString(rnd[:]) + "-", probing: make([]atomic.Bool, cfg.Partitions), downs: newDownSignals(cfg.Partitions)}
	st.turn.Store(uint32(rnd[0])) // processes start their fetches at different partitions
	if cc, ok := client.(*redis.ClusterClient); ok && cfg.Partitions > 1 {
		redisconn.OnNodeDialFailure(cc, st.nodeDown)
	}
	return st, nil
}

// Namespace is the deployment's namespace: the packages that keep keys
// beside the store's (cron, dependencies, results, the external path)
// derive theirs from it, so they cannot name another.
func (s *Store) Namespace() keyspace.Namespace { return s.ns }

// Config returns the store's configuration (defaults applied).
func (s *Store) Config() Config { return s.cfg }

// Client returns the Redis client the store uses.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Probe checks that this store can serve: one write in each of the
// deployment's slots (the global one and each partition's), pipelined (a
// PING would answer on a replica, or on a cluster node that holds another
// slot, where every transition then fails). The error says what is wrong
// in words (redisconn.Explain).
func (s *Store) Probe(ctx context.Context) error {
	pipe := s.rdb.Pipeline()
	pipe.Set(ctx, s.global.probe(), "1", 10*time.Second)
	if len(s.parts) > 1 {
		for _, k := range s.parts {
			pipe.Set(ctx, k.probe(), "1", 10*time.Second)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return redisconn.Explain(err)
	}
	return nil
}

// EventStreamKeys are the keys of the lifecycle event streams (see package
// lifecycle), one per partition: a task's events are in its partition's.
func (s *Store) EventStreamKeys() []string {
	out := make([]string, len(s.parts))
	for i, k := range s.parts {
		out[i] = k.events()
	}
	return out
}

// Events returns a reader of the lifecycle events of every partition
// (eventlog.NewReader over EventStreamKeys).
func (s *Store) Events() *eventlog.Reader { return eventlog.NewReader(s.rdb, s.EventStreamKeys()...) }

// CancelChannels are the pub/sub channels announcing cancel requests of
// ACTIVE tasks (the payload is the task id), one per partition: a task's
// request is published on its partition's (its slot's, for sharded
// pub/sub). A holder listens on all of them.
func (s *Store) CancelChannels() []string {
	out := make([]string, len(s.parts))
	for i, k := range s.parts {
		out[i] = k.cancelChannel()
	}
	return out
}

// ErrInvalid is wrapped by every ValidationError.
var ErrInvalid = errors.New("invalid task request")

// ValidationError names the request field that is wrong and why.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

// Unwrap returns ErrInvalid.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

func ms(t time.Time) int64 { return t.UnixMilli() }

func (s *Store) nowMS() int64 { return ms(s.cfg.Clock.Now()) }

func (s *Store) maxAgeMS() int64 {
	return s.cfg.MaxTaskAge.Milliseconds() // 0: the scripts skip the rule
}

// scriptErr maps a script's error reply to the task package's errors.
func scriptErr(id string, err error, want ...task.State) error {
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), "ERR ")
	switch {
	case msg == "NOTFOUND":
		return fmt.Errorf("task %s: %w", id, task.ErrNotFound)
	case msg == "LEASE":
		return fmt.Errorf("task %s: %w", id, task.ErrLeaseLost)
	case strings.HasPrefix(msg, "STATE "):
		return &task.StateError{TaskID: id, Have: task.State(strings.TrimPrefix(msg, "STATE ")), Want: want}
	case strings.HasPrefix(msg, "DUPLICATE "):
		return fmt.Errorf("task %s: %w", strings.TrimPrefix(msg, "DUPLICATE "), task.ErrDuplicateTaskID)
	}
	return fmt.Errorf("store: %w", err)
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return fmt.Sprint(v)
}
