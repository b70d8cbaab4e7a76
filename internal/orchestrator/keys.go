package orchestrator

// keys builds every Redis key the orchestrator owns. They carry the
// deployment's hash tag {namespace} like the store's keys. The streams are
// named by internal/stream.
type keys struct {
	ns string // "{namespace}:"
}

func newKeys(namespace string) keys { return keys{ns: "{" + namespace + "}:"} }

// dispatch is the fencing token of a task's current dispatch (STRING,
// 7 days): used when a service's event does not echo the token.
func (k keys) dispatch(taskID string) string { return k.ns + "agent:dispatch:" + taskID }

// applied marks an event whose effects (transition, cache, notification,
// archive) are all done (STRING "1", 7 days): a redelivered event is
// acknowledged without being applied again.
func (k keys) applied(eventID string) string { return k.ns + "agent:applied:" + eventID }

// archiveCursor is the lifecycle event id the archiver has handled up to
// (STRING), so that a restarted archiver resumes where it stopped.
func (k keys) archiveCursor() string { return k.ns + "agent:archive:cursor" }
