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

// result is spec 003's result cache task:{id}:result (STRING, JSON
// {"result":…, "cached_at":…}, 24 h).
func (k keys) result(taskID string) string { return k.ns + "task:" + taskID + ":result" }

// progress is a running task's latest progress report (HASH: percent,
// message, eta_seconds, reported_by, at_ms; 24 h).
func (k keys) progress(taskID string) string { return k.ns + "agent:progress:" + taskID }
