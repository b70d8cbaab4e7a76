package breaker

// CommandChannel is the pub/sub channel (not a key) on which operator
// commands (a JSON Command) are announced to every worker of namespace ns.
// It carries the store's hash tag "{ns}".
func CommandChannel(ns string) string { return "{" + ns + "}:breaker:commands" }
