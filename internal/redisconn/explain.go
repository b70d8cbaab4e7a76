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
	msg := err.Error()
	var hint string
	switch {
	case strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK "):
		hint = "this Redis is a cluster node that does not hold the namespace's slot: give REDIS_URL in the cluster form (redis://host1:port1?addr=host2:port2&addr=host3:port3) so the client follows the cluster"
	case strings.HasPrefix(msg, "READONLY "):
		hint = "this Redis is a read-only replica: point REDIS_URL at the primary (or at the cluster)"
	case strings.HasPrefix(msg, "CLUSTERDOWN "):
		hint = "the Redis Cluster cannot serve the namespace's slot now (a master is down and no replica took over)"
	case strings.Contains(msg, "cluster support disabled"):
		hint = "REDIS_URL names a cluster but this Redis is a single server: drop the addr/cluster parameters"
	default:
		return err
	}
	return fmt.Errorf("%w: %w (%s)", ErrTopology, err, hint)
}
