package service

// Every Redis key the service package owns is built here. They carry the
// store's hash tag "{namespace}" so a later script can touch them with the
// task keys in one Redis Cluster slot.

// sessionTasksKey is a ZSET: the ids of the tasks a session created, scored
// by creation time (unix ms). It expires with the session (refreshed on
// every add). Entries of deleted tasks are removed lazily by listings.
func sessionTasksKey(ns, sessionID string) string {
	return "{" + ns + "}:api:session:" + sessionID + ":tasks"
}
