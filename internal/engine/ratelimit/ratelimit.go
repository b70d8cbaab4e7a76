// Package ratelimit is a fleet-wide rate limit shared through Redis: at most
// Limit grants in any window of Interval, counted across every worker of
// every process that uses the same namespace and name. One Lua script (a
// sliding-window log in a sorted set) decides atomically; the caller's clock
// gives "now".
package ratelimit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/taskflow/taskflow/internal/engine/keyspace"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/acquire.lua
var acquireLua string

var acquireScript = redis.NewScript(acquireLua)

// Clock tells the time (internal/engine/clock's Real and Fake satisfy it).
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Config configures a Limiter.
type Config struct {
	// Limit is how many grants any window of Interval may hold. 0 disables
	// the limit (every Acquire is granted without touching Redis). Default 0.
	Limit int
	// Interval is the window length. Default 1 s.
	Interval time.Duration
	// Name says which shared budget this is (one per outside API). Default
	// "default".
	Name string
	// Namespace is the deployment's namespace (keys shared with the
	// engine's slot). Required.
	Namespace keyspace.Namespace
	// Clock gives "now". Default the wall clock.
	Clock Clock
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if c.Name == "" {
		c.Name = "default"
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	return c
}

// Validate says what is wrong with c (after WithDefaults).
func (c Config) Validate() error {
	switch {
	case c.Limit < 0:
		return fmt.Errorf("ratelimit: limit %d is negative (0 disables the limit)", c.Limit)
	case c.Interval < time.Millisecond:
		return fmt.Errorf("ratelimit: interval %s is shorter than 1ms", c.Interval)
	}
	return nil
}

// Limiter takes grants from a shared window. Safe for concurrent use.
type Limiter struct {
	rdb    redis.Scripter
	cfg    Config
	key    string
	prefix string
	seq    atomic.Uint64
}

// ErrLimited is wrapped by LimitedError.
var ErrLimited = errors.New("rate limit reached")

// LimitedError says the limit is reached and when to try again.
type LimitedError struct {
	Name string
	Wait time.Duration
}

func (e *LimitedError) Error() string {
	return fmt.Sprintf("%s: %q allows no more requests now, retry in %s", ErrLimited, e.Name, e.Wait)
}
func (e *LimitedError) Unwrap() error { return ErrLimited }

// New returns a Limiter on rdb (nil only when the limit is disabled).
func New(rdb redis.Scripter, cfg Config) (*Limiter, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Limit > 0 && rdb == nil {
		return nil, errors.New("ratelimit: a Redis client is required when the limit is on")
	}
	if cfg.Limit > 0 && cfg.Namespace.IsZero() {
		return nil, errors.New("ratelimit: Config.Namespace is required when the limit is on")
	}
	return &Limiter{
		rdb:    rdb,
		cfg:    cfg,
		key:    window(cfg.Namespace, cfg.Name),
		prefix: strconv.FormatUint(rand.Uint64(), 36) + ":",
	}, nil
}

// Config returns the limiter's configuration (defaults applied).
func (l *Limiter) Config() Config { return l.cfg }

// Acquire takes one grant. It returns nil when granted, a *LimitedError
// (errors.Is ErrLimited) saying how long to wait when the window is full,
// or the Redis error.
func (l *Limiter) Acquire(ctx context.Context) error {
	return l.acquire(ctx, l.key)
}

func (l *Limiter) acquire(ctx context.Context, key string) error {
	if l.cfg.Limit == 0 {
		return nil
	}
	now := l.cfg.Clock.Now().UnixMilli()
	id := l.prefix + strconv.FormatUint(l.seq.Add(1), 36)
	res, err := acquireScript.Run(ctx, l.rdb, []string{key},
		now, l.cfg.Interval.Milliseconds(), l.cfg.Limit, id).Int64Slice()
	if err != nil {
		return fmt.Errorf("ratelimit: acquire %q: %w", l.cfg.Name, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("ratelimit: acquire %q: unexpected reply %v", l.cfg.Name, res)
	}
	if res[0] == 1 {
		return nil
	}
	return &LimitedError{Name: l.cfg.Name, Wait: time.Duration(res[1]) * time.Millisecond}
}
