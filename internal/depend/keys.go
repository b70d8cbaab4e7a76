package depend

// keys builds the Redis keys of task dependencies, under the deployment's
// hash tag {namespace}.
type keys struct{ ns string }

func newKeys(namespace string) keys { return keys{ns: "{" + namespace + "}:"} }

// waiting is a parked task (STRING: JSON of its request and its
// dependencies) until every dependency has completed.
func (k keys) waiting(id string) string { return k.ns + "deps:task:" + id }

// pending indexes the parked tasks (ZSET id → parked at, unix ms).
func (k keys) pending() string { return k.ns + "deps:pending" }

// waiters are the parked tasks waiting on one task (SET of ids).
func (k keys) waiters(dep string) string { return k.ns + "deps:waiters:" + dep }
