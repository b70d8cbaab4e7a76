package auth

import "github.com/taskflow/taskflow/internal/engine/keyspace"

// Every Redis key of the auth package is built here. They carry the
// namespace's hash tag {ns}, like every other key of the deployment:
// creating a session writes both keys and the index in one MULTI and
// ending it deletes them in another, which a Redis Cluster allows only
// within one slot.

// tokenKey is a STRING: the session id that the token with this SHA-256
// (hex) belongs to; it expires with the session. Tokens are never stored.
func tokenKey(ns keyspace.Namespace, tokenHash string) string {
	return ns.Key("auth", "token", tokenHash)
}

// sessionKey is a HASH: created_at and expires_at (RFC 3339) of a session;
// it expires with the session.
func sessionKey(ns keyspace.Namespace, sessionID string) string {
	return ns.Key("auth", "session", sessionID)
}

// sessionsKey is a ZSET of the live sessions: member session id, score
// its expiry (unix ms). Creating a session adds it in the same MULTI,
// ending one removes it; a reader drops the expired ones first. It lets
// the admin list the sessions without scanning the keyspace.
func sessionsKey(ns keyspace.Namespace) string {
	return ns.Key("auth", "sessions")
}
