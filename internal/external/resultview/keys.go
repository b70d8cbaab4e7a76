package resultview

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
)

// Keys builds the Redis keys of result retrieval, which the
// orchestrator writes and this package reads. They carry the deployment's
// hash tag {namespace} like the store's keys.
type Keys struct {
	p string // the namespace's prefix, "{namespace}:"
}

// NewKeys returns the keys of the namespace ns.
func NewKeys(ns keyspace.Namespace) Keys { return Keys{p: ns.Prefix()} }

// Cache is task:{id}:result (STRING, JSON {"result":…,
// "cached_at":…}, 24 h).
func (k Keys) Cache(taskID string) string { return k.p + "task:" + taskID + ":result" }

// Progress is a running task's latest progress report (HASH: percent,
// message, eta_seconds, reported_by, at_ms; 24 h).
func (k Keys) Progress(taskID string) string { return k.p + "agent:progress:" + taskID }

// ProgressTTL is how long a progress report is kept after its last write.
const ProgressTTL = 24 * time.Hour

// WriteProgress records p as the latest progress of task id (the key
// Progress reads; one transaction: the fields and their lifetime). The
// outcome consumer writes an external service's reports with it, the
// public worker an in-process handler's.
func WriteProgress(ctx context.Context, rdb redis.UniversalClient, k Keys, id string, p Progress, ttl time.Duration) error {
	key := k.Progress(id)
	_, err := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.HSet(ctx, key, "percent", p.Percent, "message", p.Message, "eta_seconds", p.ETASeconds,
			"reported_by", p.ReportedBy, "at_ms", p.At.UnixMilli())
		pipe.Expire(ctx, key, ttl)
		return nil
	})
	return err
}
