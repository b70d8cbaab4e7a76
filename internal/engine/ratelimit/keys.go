package ratelimit

import "github.com/taskflow/taskflow/internal/engine/keyspace"

// window is the sliding window of one named limit (ZSET grant id → grant
// time in unix ms). It shares the namespace's hash tag {namespace} with the
// engine's keys, so it lives in the same Redis Cluster slot.
func window(ns keyspace.Namespace, name string) string { return ns.Key("ratelimit", name) }

// subjectWindow is the window of one subject (e.g. a client address) of a
// named per-subject limit (ZSET, as window).
func subjectWindow(ns keyspace.Namespace, name, subject string) string {
	return ns.Key("ratelimit", name, subject)
}
