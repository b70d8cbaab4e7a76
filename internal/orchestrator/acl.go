package orchestrator

// ACLRules are the ACL SETUSER rules of the Redis user the taskflow
// processes (API, workers, scheduler, orchestrator) run as: every key and
// pub/sub channel of the namespace — "{NS}:…" (the engine, streams,
// notifications, results) and "NS:…" (sessions) — and every command except
// the dangerous ones (FLUSHALL, KEYS, CONFIG, DEBUG, …). Use them as
// ACL SETUSER <user> on ><password> <rules…>.
func ACLRules(namespace string) []string {
	if namespace == "" {
		namespace = "taskflow"
	}
	return []string{
		"resetkeys", "resetchannels",
		"~{" + namespace + "}:*", "~" + namespace + ":*",
		"&{" + namespace + "}:*", "&" + namespace + ":*",
		"-@all", "+@all", "-@dangerous",
		// Harmless reads go-redis and the health checks use.
		"+info", "+client|setname",
	}
}

// ServiceACLRules are the rules of an external service's user: only the
// agent's streams and service registry, only the commands of
// docs/protocol.md.
func ServiceACLRules(namespace string) []string {
	if namespace == "" {
		namespace = "taskflow"
	}
	return []string{
		"resetkeys", "resetchannels",
		"~{" + namespace + "}:agent:stream:*", "~{" + namespace + "}:agent:service*",
		"-@all",
		"+xreadgroup", "+xread", "+xack", "+xadd", "+xautoclaim", "+xclaim", "+xgroup|create", "+xrevrange", "+xrange",
		"+xinfo|groups", "+sadd", "+hset", "+hget", "+pexpire", "+del", "+ping", "+hello", "+client|setname",
	}
}
