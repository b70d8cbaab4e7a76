package audit

import "github.com/taskflow/taskflow/internal/engine/keyspace"

// The audit package's one Redis key.

// streamKey is a STREAM of the changes operators made, one entry per
// change (fields: the Entry's), its ids the times they were made; entries
// older than Config.Retention are trimmed as new ones are written.
func streamKey(ns keyspace.Namespace) string { return ns.Key("audit") }
