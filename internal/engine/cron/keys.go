package cron

import "github.com/taskflow/taskflow/internal/engine/keyspace"

// keys builds the Redis keys of recurring schedules, under the
// deployment's hash tag {namespace}.
type keys struct{ p string } // the namespace's prefix, "{namespace}:"

func newKeys(ns keyspace.Namespace) keys { return keys{p: ns.Prefix()} }

// schedules holds every schedule (HASH: id → JSON Schedule).
func (k keys) schedules() string { return k.p + "cron:schedules" }

// last records, per schedule, the latest due time handled (HASH: id →
// unix ms). Only a shortcut: firings are deduplicated by their task id.
func (k keys) last() string { return k.p + "cron:last" }
