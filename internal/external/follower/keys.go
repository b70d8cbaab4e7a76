package follower

import "github.com/taskflow/taskflow/internal/engine/keyspace"

// keys builds the Redis keys the followers own: their cursors. They carry
// the deployment's hash tag {namespace} like the store's keys.
type keys struct {
	p string // the namespace's prefix, "{namespace}:"
}

func newKeys(ns keyspace.Namespace) keys { return keys{p: ns.Prefix()} }

// archiveCursor is the lifecycle event id the archiver has handled up to
// (STRING), so that a restarted archiver resumes where it stopped.
func (k keys) archiveCursor() string { return k.p + "agent:archive:cursor" }

// noticeCursor is the lifecycle event id the in-process notifier has
// handled up to (STRING); a restarted notifier resumes where it stopped.
func (k keys) noticeCursor() string { return k.p + "agent:notice:cursor" }
