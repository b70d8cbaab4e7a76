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

// namedKeysKey is a HASH: a named API key's name → its record (JSON: role,
// the key's SHA-256, created_at, created_by). Keys are never stored.
func namedKeysKey(ns keyspace.Namespace) string {
	return ns.Key("auth", "keys")
}

// namedKeyLookup is a STRING: the name of the named key with this SHA-256
// (hex); created and deleted with its record (scripts/*.lua).
func namedKeyLookup(ns keyspace.Namespace, keyHash string) string {
	return ns.Key("auth", "key", keyHash)
}

// sessionsKey is a ZSET of the live sessions: member session id, score
// its expiry (unix ms). Creating a session adds it in the same MULTI,
// ending one removes it; a reader drops the expired ones first. It lets
// the admin list the sessions without scanning the keyspace.
func sessionsKey(ns keyspace.Namespace) string {
	return ns.Key("auth", "sessions")
}
