package depend

import "github.com/taskflow/taskflow/internal/engine/keyspace"

// keys builds the Redis keys of task dependencies, under the deployment's
// hash tag {namespace}.
type keys struct{ p string } // the namespace's prefix, "{namespace}:"

func newKeys(ns keyspace.Namespace) keys { return keys{p: ns.Prefix()} }

// waiting is a parked task (STRING: JSON of its request and its
// dependencies) until every dependency has completed.
func (k keys) waiting(id string) string { return k.p + "deps:task:" + id }

// pending indexes the parked tasks (ZSET id → parked at, unix ms).
func (k keys) pending() string { return k.p + "deps:pending" }

// waiters are the parked tasks waiting on one task (SET of ids).
func (k keys) waiters(dep string) string { return k.p + "deps:waiters:" + dep }
