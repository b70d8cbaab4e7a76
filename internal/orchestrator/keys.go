package orchestrator

import (
	"strings"

	"github.com/taskflow/taskflow/internal/keyspace"
)

// keys builds every Redis key the orchestrator owns. They carry the
// deployment's hash tag {namespace} like the store's keys. The streams are
// named by internal/stream.
type keys struct {
	p string // the namespace's prefix, "{namespace}:"
}

func newKeys(ns keyspace.Namespace) keys { return keys{p: ns.Prefix()} }

// dispatch is the fencing token of a task's current dispatch (STRING,
// 7 days): used when a service's event does not echo the token.
func (k keys) dispatch(taskID string) string { return k.p + "agent:dispatch:" + taskID }

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

// published marks the event of one kind (dlq, timeout) published for an
// attempt (task id + token) (STRING "1", 7 days): written with the event
// itself, so the event is published once however often its cause is
// replayed, and a missing marker says the event is still owed.
func (k keys) published(kind, taskID, token string) string {
	return k.p + "agent:published:" + kind + ":" + taskID + ":" + token
}

// inflight is a task type's dispatched-but-unfinished attempts (ZSET,
// member "id token", score the handed-off lease deadline in ms): the
// dispatcher admits a new one only while it holds fewer than the bound.
func (k keys) inflight(taskType string) string { return k.p + "agent:inflight:" + taskType }

// inflightMember is an attempt's member of inflight.
func inflightMember(taskID, token string) string { return taskID + " " + token }

// archiveCursor is the lifecycle event id the archiver has handled up to
// (STRING), so that a restarted archiver resumes where it stopped.
func (k keys) archiveCursor() string { return k.p + "agent:archive:cursor" }

// noticeCursor is the lifecycle event id the in-process notifier has
// handled up to (STRING); a restarted notifier resumes where it stopped.
func (k keys) noticeCursor() string { return k.p + "agent:notice:cursor" }
