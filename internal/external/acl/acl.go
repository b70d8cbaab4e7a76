// Package acl holds the Redis ACL rules of a deployment's two kinds of
// users: the one taskflow's own processes run as, and one per external
// service, which may use only the protocol's commands on the protocol's
// keys. docs/notifications.md says how to apply them.
package acl

import (
	"strings"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/protocol"
)

// ProcessRules are the ACL SETUSER rules of the Redis user the taskflow
// processes (API, workers, scheduler, orchestrator) run as: every key and
// pub/sub channel of the namespace — "{NS}:…" (the engine, streams,
// notifications, results) and "NS:…" (sessions) — and every command except
// the dangerous ones (FLUSHALL, KEYS, CONFIG, DEBUG, …); with several
// partitions (TASKFLOW_PARTITIONS) each partition's "{NS:pJ}:…" too. Use
// them as ACL SETUSER <user> on ><password> <rules…>.
func ProcessRules(ns keyspace.Namespace, partitions int) []string {
	name := ns.Name()
	rules := []string{"resetkeys", "resetchannels", "~" + ns.Pattern(), "~" + name + ":*"}
	var channels []string
	if partitions > 1 {
		for _, p := range ns.PartitionPrefixes(partitions) {
			rules = append(rules, "~"+p+"*")
			channels = append(channels, "&"+p+"*")
		}
	}
	rules = append(rules, "&"+ns.Pattern(), "&"+name+":*")
	rules = append(rules, channels...)
	return append(rules, "-@all", "+@all", "-@dangerous",
		// Harmless reads go-redis and the health checks use.
		"+info", "+client|setname")
}

// ServiceRules are the rules of an external service's user: only the
// commands of docs/protocol.md, each only on the keys it needs (Redis 7
// selectors):
//   - task.create: read it in the service's group (XREADGROUP, XACK,
//     XAUTOCLAIM, XCLAIM heartbeats, XGROUP CREATE … MKSTREAM, XINFO
//     GROUPS, XRANGE/XREVRANGE) — never XADD, DEL or trim it;
//   - task.cancel: XREAD / XREVRANGE;
//   - task.completed, task.failed, task.progress: XADD only;
//   - the registry: SADD agent:services; HSET, HGET and PEXPIRE of
//     its agent:service:<name> hash (it is never deleted: it expires);
//     HSET of agent:task-types (its types' descriptions and schemas);
//   - result files: DEL, HSET and PEXPIRE of agent:artifact:<task>:<name>.
//
// No DEL, XDEL or XTRIM on any stream, so a service cannot remove work or
// outcomes. A service can still publish an outcome for any task id; the
// outcome consumer applies only one carrying the attempt's token.
func ServiceRules(ns keyspace.Namespace) []string {
	k := protocol.NewKeys(ns) // the protocol's keys, named where the protocol is
	return []string{
		"resetkeys", "resetchannels", "-@all",
		"~" + k.Create(), "~" + k.Cancel(),
		"+xreadgroup", "+xread", "+xack", "+xautoclaim", "+xclaim", "+xgroup|create", "+xrevrange", "+xrange",
		"+xinfo|groups", "+ping", "+hello", "+client|setname",
		"(~" + k.Completed() + " ~" + k.Failed() + " ~" + k.Progress() + " +xadd)",
		"(~" + k.Services() + " +sadd)",
		"(~" + k.Service("*") + " +hset +hget +pexpire)",
		"(~" + k.TaskTypes() + " +hset)",
		"(~" + strings.TrimSuffix(k.Artifact("*", ""), ":") + " +hset +pexpire +del)", // agent:artifact:*
	}
}
