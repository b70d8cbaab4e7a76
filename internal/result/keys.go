package result

import "github.com/taskflow/taskflow/internal/keyspace"

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
