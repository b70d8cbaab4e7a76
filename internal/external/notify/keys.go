package notify

import "github.com/taskflow/taskflow/internal/engine/keyspace"

// keys builds every Redis key and channel of the notify package. They carry
// the deployment's hash tag {namespace} like the store's keys.
type keys struct {
	p string // the namespace's prefix, "{namespace}:"
}

func newKeys(ns keyspace.Namespace) keys { return keys{p: ns.Prefix()} }

// stream is user:stream:notifications:{session_id} (STREAM,
// capped, expiring with the session's data).
func (k keys) stream(sessionID string) string {
	return k.p + "user:stream:notifications:" + sessionID
}

// cursor is the id of the newest notification the session has been shown
// (STRING, a stream id); later ones are unread.
func (k keys) cursor(sessionID string) string {
	return k.p + "user:notifications:" + sessionID + ":read"
}

// sent marks a notification id written to the session's stream (STRING
// "1", Config.DedupeTTL): Notify writes a caller-chosen id once.
func (k keys) sent(sessionID, notificationID string) string {
	return k.p + "user:notifications:" + sessionID + ":sent:" + notificationID
}

// channel is the pub/sub channel announcing "a session has a new
// notification" (payload: the session id) to every process's Hub.
func (k keys) channel() string { return k.p + "user:notifications" }
