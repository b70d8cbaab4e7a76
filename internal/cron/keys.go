package cron

// keys builds the Redis keys of recurring schedules, under the
// deployment's hash tag {namespace}.
type keys struct{ ns string }

func newKeys(namespace string) keys { return keys{ns: "{" + namespace + "}:"} }

// schedules holds every schedule (HASH: id → JSON Schedule).
func (k keys) schedules() string { return k.ns + "cron:schedules" }

// last records, per schedule, the latest due time handled (HASH: id →
// unix ms). Only a shortcut: firings are deduplicated by their task id.
func (k keys) last() string { return k.ns + "cron:last" }
