package redisconn

import (
	"errors"
	"fmt"
	"strings"
)

// ErrTopology is wrapped by the errors Explain recognises: Redis answered,
// but this client talks to the wrong node for the namespace (a cluster
// node holding another slot, a replica) or the cluster cannot serve.
var ErrTopology = errors.New("redis topology")

// Explain wraps a Redis error that comes from where the client points,
// not from the command, with what to do about it; other errors come back
// as they are. The text keeps Redis's own (MOVED 1234 host:port, ...), so
// a log line names both.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	if hint := topologyHint(err); hint != "" {
		return fmt.Errorf("%w: %w (%s)", ErrTopology, err, hint)
	}
	return err
}

// topologyHint is what to do about the first Redis answer in err's tree
// (err itself, what it wraps, each of a joined error's parts: the store
// wraps Redis's answers in its own words) that says the client points at
// the wrong node or the cluster cannot serve; "" when none does.
func topologyHint(err error) string {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK "):
		return "this Redis is a cluster node that does not hold the namespace's slot: give REDIS_URL in the cluster form (redis://host1:port1?addr=host2:port2&addr=host3:port3) so the client follows the cluster"
	case strings.HasPrefix(msg, "READONLY "):
		return "this Redis is a read-only replica: point REDIS_URL at the primary (or at the cluster)"
	case strings.HasPrefix(msg, "CLUSTERDOWN "):
		return "the Redis Cluster cannot serve the namespace's slot now (a master is down and no replica took over; with several partitions, see cluster-require-full-coverage in docs/operations.md)"
	case strings.Contains(msg, "cluster support disabled"):
		return "REDIS_URL names a cluster but this Redis is a single server: drop the addr/cluster parameters"
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return topologyHint(inner)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if inner != nil {
				if h := topologyHint(inner); h != "" {
					return h
				}
			}
		}
	}
	return ""
}
