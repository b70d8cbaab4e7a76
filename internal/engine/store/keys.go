package store

import (
	"strconv"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/task"
)

// keys builds the Redis key names of one partition of a deployment (its
// tasks, queues, indexes, lease set, event stream, wake-up lists); globalKeys
// those of the deployment as a whole. A deployment of one partition keeps
// every key under the hash tag {namespace}; one of N > 1 puts partition k
// under {namespace:pk} and the global keys under {namespace}. Every script
// touches one partition's keys only, so a single Redis Cluster slot. Names
// follow the documented layout under those prefixes (docs/architecture.md).
//
// Every script gets its keys in KEYS, whole. The one exception is the
// per-task keys (task:<id>, dlq:task:<id>) of the scripts that learn their
// ids inside the script, from a queue, the scheduled set, the lease set or
// a state index (fetch, promote, reap, sweep, purge): the caller cannot
// name them, so KEYS carries the key *prefix* and the script appends the
// id. The prefix carries the hash tag, so the derived keys live in the same
// slot (Redis Cluster routes the call by KEYS; all are in the partition's tag).
type keys struct {
	p string // the partition's prefix, "{namespace}:" or "{namespace:pJ}:" (keyspace.PartitionPrefixes)
}

// partitionKeys returns the keys of each of n partitions of ns.
func partitionKeys(ns keyspace.Namespace, n int) []keys {
	prefixes := ns.PartitionPrefixes(n)
	out := make([]keys, len(prefixes))
	for k, p := range prefixes {
		out[k] = keys{p: p}
	}
	return out
}

// globalKeys are the deployment's keys outside its partitions, under
// {namespace}: what describes the deployment or its processes rather than
// tasks.
type globalKeys struct {
	p string // "{namespace}:"
}

// meta is the deployment's layout (HASH: partitions), written by the first
// process that starts and checked by every later one (CheckLayout).
func (k globalKeys) meta() string { return k.p + "meta" }

// probe is the key readiness checks write in the global slot.
func (k globalKeys) probe() string { return k.p + "probe" }

// workers is the list of live workers (ZSET worker id → last heartbeat unix ms).
func (k globalKeys) workers() string { return k.p + "workers" }

// worker is one worker's info (HASH: started_at, host, concurrency, types,
// breaker states as JSON), expiring when the worker stops heartbeating.
func (k globalKeys) worker(id string) string { return k.p + "worker:" + id }

// workerTypes are the task types workers serve in process, as their
// handlers declared them (HASH: task type → the spec as JSON, the shape of
// an external service's published spec), written by every public worker
// (package taskflow) when it starts; the task-type registry reads it, so
// an API process accepts a type it has no handler for. No TTL: a type
// stays known after its workers stop (its tasks wait for one).
func (k globalKeys) workerTypes() string { return k.p + "worker:task-types" }

// task is the task hash (HASH): the single source of truth about one task.
func (k keys) task(id string) string { return k.p + "task:" + id }

// sessionTasks is a session's task index (ZSET id → created at ms),
// written by enqueue with the task (and by IndexSessionTask for a task
// parked before it exists); it expires SessionIndexTTL after the
// session's latest task. Entries of deleted or purged tasks stay until a
// reader (the API's session listing) drops them (UnindexSessionTasks).
func (k keys) sessionTasks(sessionID string) string {
	return k.p + "api:session:" + sessionID + ":tasks"
}

// unique is the record of a unique key (STRING "until-ms:holder-id",
// expiring UniqueHold past its task's run time, or unique_for if longer):
// the task that holds key among its owner's (scope: the session id, ""
// for deployment-wide callers). The scope is length-prefixed so no
// session's key can spell another's. It lives in the holder's partition.
func (k keys) unique(scope, key string) string {
	return k.p + "uniq:" + strconv.Itoa(len(scope)) + ":" + scope + ":" + key
}

// idempotency is the record of an Idempotency-Key (HASH fp: the request's
// fingerprint, res: what the call created or answered per task, x: the
// caller's extra text), written by the enqueue script with the tasks and
// expiring after its TTL. scope is the caller (length-prefixed, as for
// unique).
func (k keys) idempotency(scope, key string) string {
	return k.p + "idem:" + strconv.Itoa(len(scope)) + ":" + scope + ":" + key
}

// taskPrefix is task(id) without the id (for scripts that find their ids
// in Redis).
func (k keys) taskPrefix() string { return k.p + "task:" }

// primary is a primary pending queue (LIST, RPUSH + LPOP = FIFO), one per
// priority; normal priority keeps name tasks:pending:primary.
func (k keys) primary(p task.Priority) string {
	switch p {
	case task.PriorityHigh:
		return k.p + "tasks:pending:primary:high"
	case task.PriorityLow:
		return k.p + "tasks:pending:primary:low"
	}
	return k.p + "tasks:pending:primary"
}

// retry is the retry queue (LIST, FIFO): tasks whose retry delay is over.
func (k keys) retry() string { return k.p + "tasks:pending:retry" }

// scheduled holds delayed work (ZSET id → due unix ms): FAILED tasks
// waiting for their retry, delayed first runs and breaker waits (PENDING).
func (k keys) scheduled() string { return k.p + "tasks:scheduled" }

// active is the lease set (ZSET id → lease deadline unix ms). It is also the
// ACTIVE state index.
func (k keys) active() string { return k.p + "tasks:active" }

// handoff indexes the attempts handed off to the external path (ZSET
// "id token timeout-ms" → unix ms of the attempt's next check: service
// liveness, its timeout deadline, then liveness in the TIMEOUT state).
func (k keys) handoff() string { return k.p + "tasks:handoff" }

// stateIndex is the per-state index (ZSET id → unix ms the task entered the
// state); ACTIVE uses the lease set. ZCARD gives the per-state counts.
func (k keys) stateIndex(s task.State) string {
	if s == task.StateActive {
		return k.active()
	}
	return k.p + "tasks:state:" + string(s)
}

// dlq is dead-letter list (LIST of ids, newest first).
func (k keys) dlq() string { return k.p + "dlq:tasks" }

// dlqTask is the failure snapshot of a dead-lettered task (HASH).
func (k keys) dlqTask(id string) string { return k.p + "dlq:task:" + id }

// dlqPrefix is dlqTask(id) without the id.
func (k keys) dlqPrefix() string { return k.p + "dlq:task:" }

// events is the lifecycle event stream (STREAM, capped); each entry holds
// the events of one script call.
func (k keys) events() string { return k.p + "events" }

// wake is the wake-up list (LIST) idle workers block on; enqueues and
// promotions push a token when it is empty.
func (k keys) wake() string { return k.p + "tasks:wake" }

// wakeWorker is one worker's private wake-up list (LIST): pushing to it
// ends that worker's blocking wait at once (shutdown).
func (k keys) wakeWorker(id string) string { return k.p + "tasks:wake:" + id }

// probe is the key readiness checks write (STRING, 10 s): a write in the
// partition's slot succeeds only where serving can.
func (k keys) probe() string { return k.p + "probe" }

// cancelChannel is the pub/sub channel on which cancel requests of ACTIVE
// tasks are announced (a channel, not a key).
func (k keys) cancelChannel() string { return k.p + "cancel" }

// DefaultQueue is the named queue of a task given none (and whose type
// names none): its lists are the partition's historical ones above.
const DefaultQueue = "default"

// named returns the keys of named queue q's lists (primary per priority,
// retry, wake) in this partition: the default queue's names with
// "q:<name>:" after the partition prefix, so they share its hash tag (one
// Cluster slot). The default queue keeps the unprefixed names. Scripts
// that learn a task's queue from its hash (reap, release, promote, cancel,
// delete, sweep, the unparking in fetch) derive these names the same way
// from the default primary list or the partition prefix they are given in
// KEYS (qprefix in lib.lua).
func (k keys) named(q string) keys {
	if q == "" || q == DefaultQueue {
		return k
	}
	return keys{p: k.p + "q:" + q + ":"}
}

// prefix is the partition's key prefix (for scripts deriving named
// queues' and parking lists' keys).
func (k keys) prefix() string { return k.p }

// control holds the partition's pauses and limits (HASH): "p:q:<queue>"
// and "p:t:<type>" → "1" for a paused queue or task type; "l:<scope>" →
// "<rate>/<per ms>/<concurrency>" for a limit on scope "t:<type>",
// "q:<queue>", "k:<limit key>" or "k:*" (every key its own), with this
// partition's share of the rate and concurrency (0 = none). Every
// partition holds the same entries; fetch reads the hash in its own call.
func (k keys) control() string { return k.p + "ctl" }

// running counts the attempts in flight per scope (HASH scope → count):
// every named queue's, and those of the scopes with a concurrency limit.
// Fetch adds to it, the end of an attempt (lh field of the task) takes
// away.
func (k keys) running() string { return k.p + "ctl:running" }

// rateState is the rate limits' state (HASH scope → theoretical arrival
// time, unix ms, of the generic cell rate algorithm).
func (k keys) rateState() string { return k.p + "ctl:rate" }

// parkIndex indexes the parking lists that hold tasks (ZSET scope → unix
// ms from when a fetch may move some back to their queues; 1e15 while
// only the end of an attempt or a control change can).
func (k keys) parkIndex() string { return k.p + "ctl:parked" }

// parkPrefix is the prefix of the parking lists (LIST of ids, oldest
// first): park:<scope> holds the PENDING tasks that a pause of their type
// or a limit of their type or key holds back, out of their queue so the
// tasks behind them proceed. Scripts append the scope.
func (k keys) parkPrefix() string { return k.p + "park:" }

// park is one scope's parking list.
func (k keys) park(scope string) string { return k.p + "park:" + scope }

// parkWake is the wake-up list pushed when parked tasks may move back (a
// slot freed, a pause lifted, a limit changed): every worker blocks on it
// with its queues' lists, and its next fetch moves them.
func (k keys) parkWake() string { return k.p + "tasks:wake:parked" }

// queueDone counts completions per queue and minute (HASH "<queue>|<unix
// minute>" → count; the minute before last is deleted as a new one
// starts): the queues' completed/min rate.
func (k keys) queueDone() string { return k.p + "ctl:done" }

// queues is the set of queue names ever used in the deployment (SET),
// added to by the first enqueue of each process into a named queue.
func (k globalKeys) queues() string { return k.p + "queues" }

// limits holds the limits as set, whole (HASH "<t|q|k>:<name>" → JSON
// rate_limit, rate_per_ms, concurrency); the partitions' control hashes
// hold their shares.
func (k globalKeys) limits() string { return k.p + "limits" }
