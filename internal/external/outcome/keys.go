package outcome

import "github.com/taskflow/taskflow/internal/engine/keyspace"

// keys builds the Redis keys the outcome consumer owns. They carry the
// deployment's hash tag {namespace} like the store's keys; the streams
// are named by internal/external/protocol, the result cache and progress by
// internal/external/resultview, the dispatch token and in-flight places by
// internal/external/dispatch.
type keys struct {
	p string // the namespace's prefix, "{namespace}:"
}

func newKeys(ns keyspace.Namespace) keys { return keys{p: ns.Prefix()} }

// applied is the marker of one attempt's outcome (task id + token)
// (STRING, 7 days): the name of the response-stream entry that claimed
// the outcome, then "dlq <name>" once its task.dlq is published, then "1"
// once every effect is done and the entry acknowledged — each step one
// script (claim.lua, publish_dlq.lua, finish.lua; see once.go).
//
// It is the consumer's one duplicate marker, and it remains because the
// effects of an outcome do not fit in the store's transition script: the
// result cache, the archive (PostgreSQL) and the notification come after
// it, so a crash between them needs a record of how far the attempt's
// outcome got, and of which entry it is (a redelivery of that entry may
// finish the effects, any other entry is a duplicate: the first outcome
// wins). It replaces two markers kept before, one per entry seen
// (agent:seen) and one per task.dlq published (agent:published:dlq),
// which are no longer read; "1" is the done value earlier versions wrote
// too, so an attempt they finished is a duplicate here as well.
func (k keys) applied(taskID, token string) string {
	return k.p + "agent:applied:" + taskID + ":" + token
}
