package breaker

import "github.com/taskflow/taskflow/internal/engine/keyspace"

// CommandChannel is the pub/sub channel (not a key) on which operator
// commands (a JSON Command) are announced to every worker of namespace ns.
// It carries the store's hash tag "{ns}".
func CommandChannel(ns keyspace.Namespace) string { return ns.Key("breaker", "commands") }

// ForcedKey holds the operator commands in force (HASH: dependency → JSON
// Command; field "" = every dependency), so that a worker starting later
// applies them too. An "open" field whose until has passed is ignored.
func ForcedKey(ns keyspace.Namespace) string { return ns.Key("breaker", "forced") }
