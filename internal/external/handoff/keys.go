package handoff

import "github.com/taskflow/taskflow/internal/engine/keyspace"

// keys builds the Redis keys the watcher owns. They carry the deployment's
// hash tag {namespace} like the store's keys; the handoff index is the
// store's, the streams are named by internal/external/protocol.
type keys struct {
	p string // the namespace's prefix, "{namespace}:"
}

func newKeys(ns keyspace.Namespace) keys { return keys{p: ns.Prefix()} }

// timeoutPublished marks the task.timeout published for an attempt (task
// id + token) (STRING "1", 7 days). The TIMEOUT transition is the store's
// script and the event is published by a second one (publish_timeout.lua),
// which writes the marker with the event: a process that dies between the
// two leaves a TIMEOUT attempt without its marker, and the next check of
// that attempt publishes the event it is owed, once. The key keeps the
// name it had when the orchestrator was one package, so watchers of both
// versions agree during an upgrade.
func (k keys) timeoutPublished(taskID, token string) string {
	return k.p + "agent:published:timeout:" + taskID + ":" + token
}
