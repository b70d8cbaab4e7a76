package service

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/breaker"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
)

// BreakerCommand is what the operator endpoints publish on the breaker
// channel (breaker.CommandChannel: "{ns}:breaker:commands") for every
// worker to apply to its own circuit breakers.
type BreakerCommand = breaker.Command

// BreakerOutcome is what an operator breaker action did.
type BreakerOutcome struct {
	// Dependency is the breaker moved; empty = every breaker of each worker.
	Dependency string `json:"dependency" jsonschema:"the breaker moved; empty = every breaker"`
	// State is the state the breakers were put in (CLOSED or OPEN).
	State breaker.State `json:"state" openapi:"enum=CLOSED|OPEN"`
	// Until is when a forced open ends; zero = held open until a reset.
	Until time.Time `json:"until,omitzero" jsonschema:"open: when the forced open ends; absent = until a reset"`
	// Workers is how many worker processes received the command (each
	// applies it on receipt). 0: none runs now; the command is recorded
	// and workers apply it when they start.
	Workers int64 `json:"workers" jsonschema:"worker processes that received the command (each applies it on receipt)"`
}

// RedisBreakerControl publishes breaker commands to the workers over Redis
// pub/sub and records them in breaker.ForcedKey in the same transaction, so
// workers that start later apply them too.
type RedisBreakerControl struct {
	rdb redis.UniversalClient
	ns  keyspace.Namespace
	now func() time.Time
}

// NewRedisBreakerControl returns a control for the workers of namespace ns.
func NewRedisBreakerControl(rdb redis.UniversalClient, ns keyspace.Namespace, now func() time.Time) *RedisBreakerControl {
	if now == nil {
		now = time.Now
	}
	return &RedisBreakerControl{rdb: rdb, ns: ns, now: now}
}

// Channel is the pub/sub channel workers subscribe to.
func (c *RedisBreakerControl) Channel() string { return breaker.CommandChannel(c.ns) }

// Reset publishes a reset command.
func (c *RedisBreakerControl) Reset(ctx context.Context, dependency string) (BreakerOutcome, error) {
	n, err := c.publish(ctx, BreakerCommand{Op: breaker.OpReset, Dependency: dependency})
	return BreakerOutcome{Dependency: dependency, State: breaker.Closed, Workers: n}, err
}

// Open publishes a forced-open command lasting d (0: until a reset).
func (c *RedisBreakerControl) Open(ctx context.Context, dependency string, d time.Duration) (BreakerOutcome, error) {
	cmd := BreakerCommand{Op: breaker.OpOpen, Dependency: dependency}
	out := BreakerOutcome{Dependency: dependency, State: breaker.Open}
	if d > 0 {
		out.Until = c.now().Add(d).Truncate(time.Millisecond).UTC()
		cmd.Until = out.Until.UnixMilli()
	}
	n, err := c.publish(ctx, cmd)
	out.Workers = n
	return out, err
}

func (c *RedisBreakerControl) publish(ctx context.Context, cmd BreakerCommand) (int64, error) {
	cmd.At = c.now().UnixMilli()
	b, err := json.Marshal(cmd)
	if err != nil {
		return 0, err
	}
	key := breaker.ForcedKey(c.ns)
	var pub *redis.IntCmd
	_, err = c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if cmd.Dependency == "" {
			// every dependency: replaces what was in force
			p.Del(ctx, key)
			if cmd.Op == breaker.OpOpen {
				p.HSet(ctx, key, "", b)
			}
		} else {
			// kept for a reset too: it overrides an earlier all-dependencies open
			p.HSet(ctx, key, cmd.Dependency, b)
		}
		if redisconn.Sharded(c.rdb) {
			pub = p.SPublish(ctx, c.Channel(), b)
		} else {
			pub = p.Publish(ctx, c.Channel(), b)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("publish breaker command: %w", err)
	}
	return pub.Val(), nil
}

// BreakerAction resets or opens circuit breakers (operator): a forced
// open lasts d, or until a reset when d is 0.
func (s *Service) BreakerAction(ctx context.Context, p auth.Principal, open bool, dependency string, d time.Duration) (BreakerOutcome, error) {
	if err := requireAdmin(p); err != nil {
		return BreakerOutcome{}, err
	}
	if s.cfg.Breakers == nil {
		return BreakerOutcome{}, Conflict("breaker_control_unavailable", "no circuit breaker control is configured in this process")
	}
	var (
		out BreakerOutcome
		err error
	)
	if open {
		out, err = s.cfg.Breakers.Open(ctx, dependency, d)
	} else {
		out, err = s.cfg.Breakers.Reset(ctx, dependency)
	}
	if err != nil {
		return BreakerOutcome{}, storeErr("", err)
	}
	return out, nil
}
