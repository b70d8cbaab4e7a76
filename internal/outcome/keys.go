package outcome

import (
	"strings"

	"github.com/taskflow/taskflow/internal/keyspace"
)

// keys builds the Redis keys the outcome consumer owns. They carry the
// deployment's hash tag {namespace} like the store's keys; the streams
// are named by internal/stream, the results' keys by internal/result.
type keys struct {
	p string // the namespace's prefix, "{namespace}:"
}

func newKeys(ns keyspace.Namespace) keys { return keys{p: ns.Prefix()} }

// applied marks an event whose effects (transition, cache, notification,
// archive) are all done (STRING "1", 7 days): a redelivered event is
// acknowledged without being applied again.
func (k keys) applied(eventID string) string { return k.p + "agent:applied:" + eventID }

// seen marks a response-stream entry (by stream and entry id) that a
// consumer began to apply (STRING "1", 7 days; deleted once the entry is
// acknowledged): a later delivery of the same entry is a redelivery, any
// other entry about a finished task is not.
func (k keys) seen(streamKey, entryID string) string {
	if i := strings.LastIndex(streamKey, ":"); i >= 0 {
		streamKey = streamKey[i+1:]
	}
	return k.p + "agent:seen:" + streamKey + ":" + entryID
}

// published marks the event of one kind (dlq) published for an attempt
// (task id + token) (STRING "1", 7 days): written with the event itself,
// so the event is published once however often its cause is replayed.
func (k keys) published(kind, taskID, token string) string {
	return k.p + "agent:published:" + kind + ":" + taskID + ":" + token
}
