package protocol

import "github.com/taskflow/taskflow/internal/engine/keyspace"

// Keys builds the name of every stream under one configurable
// namespace. All names carry the hash tag {namespace}, the same tag the
// store's keys carry, so a script may touch a task and its streams in one
// Redis Cluster slot.
//
// In the namespace "taskflow" the create stream is
// "{taskflow}:agent:stream:task.create"; docs/protocol.md lists them all.
type Keys struct {
	ns string // the namespace's prefix, "{namespace}:"
}

// NewKeys returns the stream names of the namespace ns.
func NewKeys(ns keyspace.Namespace) Keys { return Keys{ns: ns.Prefix()} }

// Prefix is the namespace prefix every name starts with ("{taskflow}:").
func (k Keys) Prefix() string { return k.ns }

// Create is agent:stream:task.create (STREAM, agent → services): one
// task.create event per dispatched attempt.
func (k Keys) Create() string { return k.ns + "agent:stream:task.create" }

// Completed is agent:stream:task.completed (STREAM, services → agent).
func (k Keys) Completed() string { return k.ns + "agent:stream:task.completed" }

// Failed is agent:stream:task.failed (STREAM, services → agent).
func (k Keys) Failed() string { return k.ns + "agent:stream:task.failed" }

// Timeout is agent:stream:task.timeout (STREAM, timeout job → agent).
func (k Keys) Timeout() string { return k.ns + "agent:stream:task.timeout" }

// DLQ is agent:stream:task.dlq (STREAM): tasks that failed for good, kept
// 7 days for manual review.
func (k Keys) DLQ() string { return k.ns + "agent:stream:task.dlq" }

// Progress is agent:stream:task.progress (STREAM, services → agent, capped):
// progress reports and heartbeats of running tasks. An extension.
func (k Keys) Progress() string { return k.ns + "agent:stream:task.progress" }

// Cancel is agent:stream:task.cancel (STREAM, agent → services): cancel
// requests of running tasks, read by every service worker without a group.
// An extension.
func (k Keys) Cancel() string { return k.ns + "agent:stream:task.cancel" }

// Responses are the streams the agent-group consumes, plus
// progress.
func (k Keys) Responses() []string {
	return []string{k.Completed(), k.Failed(), k.Timeout(), k.Progress()}
}

// All lists every stream of the package.
func (k Keys) All() []string {
	return []string{k.Create(), k.Completed(), k.Failed(), k.Timeout(), k.DLQ(), k.Progress(), k.Cancel()}
}

// ServiceGroup is the consumer group of a service on the create stream
// ({service}-group).
func ServiceGroup(service string) string { return service + "-group" }

// AgentGroup is the orchestrator's consumer group on the response streams.
const AgentGroup = "agent-group"

// Services is the registry of external services (SET of service names).
func (k Keys) Services() string { return k.ns + "agent:services" }

// TaskTypes holds what services published about their task types (HASH:
// task type → a TypeSpec as JSON). Unlike a registration it does not
// expire: the API keeps checking a type's params while its service is
// restarting or down.
func (k Keys) TaskTypes() string { return k.ns + "agent:task-types" }

// Artifact is a result file a service stored for a task (HASH:
// content_type, size, sha256, data), expiring after ArtifactTTL: the API
// serves it to the task's session at FileURL(taskID, name).
func (k Keys) Artifact(taskID, name string) string {
	return k.ns + "agent:artifact:" + taskID + ":" + name
}

// Service is one service's registration (HASH: types = comma-separated task
// types, consumer, heartbeat_ms), expiring when the service stops
// heartbeating. A task type is external while a live service registers it.
func (k Keys) Service(name string) string { return k.ns + "agent:service:" + name }
