package service

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// BreakerCommand is what the operator endpoints publish on the breaker
// channel ("{ns}:breaker:commands") for every worker to apply to its own
// circuit breakers.
type BreakerCommand struct {
	// Op is "reset" (close the breaker, clear its counts) or "open" (force
	// it open until Until, then HALF_OPEN as after a normal timeout).
	Op string `json:"op"`
	// Dependency names the breaker; empty means every breaker.
	Dependency string `json:"dependency,omitempty"`
	// Until is when a forced open ends (unix ms); 0 = the breaker's timeout.
	Until int64 `json:"until_ms,omitempty"`
	// At is when the operator asked (unix ms).
	At int64 `json:"at_ms"`
}

// RedisBreakerControl publishes breaker commands to the workers over Redis
// pub/sub. A command no worker receives is an error: the operator learns
// that nothing changed.
type RedisBreakerControl struct {
	rdb redis.UniversalClient
	ns  string
	now func() time.Time
}

// NewRedisBreakerControl returns a control for the workers of namespace ns.
func NewRedisBreakerControl(rdb redis.UniversalClient, ns string, now func() time.Time) *RedisBreakerControl {
	if now == nil {
		now = time.Now
	}
	return &RedisBreakerControl{rdb: rdb, ns: ns, now: now}
}

// Channel is the pub/sub channel workers subscribe to.
func (c *RedisBreakerControl) Channel() string { return breakerChannel(c.ns) }

// Reset publishes a reset command.
func (c *RedisBreakerControl) Reset(ctx context.Context, dependency string) error {
	return c.publish(ctx, BreakerCommand{Op: "reset", Dependency: dependency})
}

// Open publishes a forced-open command lasting d (0: the breaker's timeout).
func (c *RedisBreakerControl) Open(ctx context.Context, dependency string, d time.Duration) error {
	cmd := BreakerCommand{Op: "open", Dependency: dependency}
	if d > 0 {
		cmd.Until = c.now().Add(d).UnixMilli()
	}
	return c.publish(ctx, cmd)
}

func (c *RedisBreakerControl) publish(ctx context.Context, cmd BreakerCommand) error {
	cmd.At = c.now().UnixMilli()
	b, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	n, err := c.rdb.Publish(ctx, c.Channel(), b).Result()
	if err != nil {
		return fmt.Errorf("publish breaker command: %w", err)
	}
	if n == 0 {
		return Conflict("breaker_control_unavailable", "no worker listens for breaker commands on %s; nothing changed", c.Channel())
	}
	return nil
}
