package redisconn

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// reloadOnFailure makes a cluster client look at the cluster again when a
// node stops answering. go-redis reloads its slot map on MOVED/ASK only; a
// master that died answers nothing, so every command of its slots went on
// dialling it after its replica had taken over. The reload is lazy and
// rate-limited by go-redis, so a burst of failures costs one CLUSTER SLOTS.
// (On a command's failure: a cluster client runs no dial hooks of its own —
// its nodes' clients dial — so DialHook passes through. Reloading on every
// refused dial is left out: a reload dials the seeds, the dead node among
// them, and would ask for the next.)
type reloadOnFailure struct{ cc *redis.ClusterClient }

func (h reloadOnFailure) DialHook(next redis.DialHook) redis.DialHook { return next }

// dialFailed is a node client's hook calling fn, on a goroutine of its
// own, when a dial fails because the node is gone.
type dialFailed struct{ fn func(addr string, err error) }

func (h dialFailed) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil && nodeFailed(err) {
			go h.fn(addr, err)
		}
		return c, err
	}
}

func (dialFailed) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialFailed) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// OnNodeDialFailure calls fn whenever a node of cc refuses a connection:
// the first sign of a master's crash (the connections blocked on it break
// at once and their retries dial it), well before a command's retries give
// up. A cluster client runs no dial hooks itself — its nodes' clients dial
// — so the hook goes on every node's client, those known now and those to
// come.
func OnNodeDialFailure(cc *redis.ClusterClient, fn func(addr string, err error)) {
	h := dialFailed{fn: fn}
	cc.OnNewNode(func(n *redis.Client) { n.AddHook(h) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = cc.ForEachShard(ctx, func(_ context.Context, n *redis.Client) error { n.AddHook(h); return nil })
}

func (h reloadOnFailure) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if nodeFailed(err) {
			h.cc.ReloadState(ctx)
		}
		return err
	}
}

func (h reloadOnFailure) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if nodeFailed(err) {
			h.cc.ReloadState(ctx)
		}
		return err
	}
}

// nodeFailed: the error says a node is gone or the cluster is moving
// slots (not a command's own error).
func nodeFailed(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"CLUSTERDOWN", "TRYAGAIN", "connection refused", "connection reset", "broken pipe"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// NodeFailed reports whether err says the server that was to answer is
// gone or the cluster is moving slots — not a command's own refusal, nor
// the caller's cancelled context.
func NodeFailed(err error) bool { return nodeFailed(err) }
