// Package redisconn is the one place taskflow builds Redis clients. A URL
// names a single server (redis://, rediss:// for TLS, unix://) or a Redis
// Cluster: the seed node's URL with the other seeds as addr parameters
// (redis://h1:p1?addr=h2:p2&addr=h3:p3), or a single seed with
// cluster=true. ACL user and password come from the URL in both modes.
//
// Every client honours its context's deadline on reads and writes
// (ContextTimeoutEnabled), so a request with a 1 s budget gets its answer —
// or its error — within about 1 s even when Redis stalls.
package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options tune a client beyond its URL. Zero values take the defaults.
type Options struct {
	// PoolSize is the minimum number of connections per node (the URL's
	// pool_size wins when larger). Default 64: taskflow's API and workers
	// run many concurrent calls.
	PoolSize int
	// PingTimeout bounds the check Open makes that Redis answers.
	// Default 5s.
	PingTimeout time.Duration
	// NoPing skips that check (a process that must start while Redis is
	// down and recover by itself).
	NoPing bool
}

// ErrURL is wrapped by the errors of a URL that cannot be used.
var ErrURL = errors.New("invalid Redis URL")

// IsCluster reports whether rawURL names a Redis Cluster (addr parameters
// or cluster=true).
func IsCluster(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	q := u.Query()
	return q.Has("addr") || strings.EqualFold(q.Get("cluster"), "true")
}

// Open builds the client rawURL names and checks that it answers (unless
// o.NoPing). The caller owns the client.
func Open(ctx context.Context, rawURL string, o Options) (redis.UniversalClient, error) {
	c, addrs, err := build(rawURL, o)
	if err != nil {
		return nil, err
	}
	if o.NoPing {
		return c, nil
	}
	pt := o.PingTimeout
	if pt <= 0 {
		pt = 5 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, pt)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redis at %s does not answer: %w", addrs, err)
	}
	return c, nil
}

// Addrs lists the addresses rawURL names (host:port or a socket path), for
// messages; the URL's password is never part of it.
func Addrs(rawURL string) (string, error) {
	_, addrs, err := options(rawURL, Options{})
	return addrs, err
}

func build(rawURL string, o Options) (redis.UniversalClient, string, error) {
	opt, addrs, err := options(rawURL, o)
	if err != nil {
		return nil, "", err
	}
	switch v := opt.(type) {
	case *redis.ClusterOptions:
		cc := redis.NewClusterClient(v)
		cc.AddHook(reloadOnFailure{cc: cc})
		return cc, addrs, nil
	case *redis.Options:
		return redis.NewClient(v), addrs, nil
	}
	return nil, "", fmt.Errorf("%w: unexpected options %T", ErrURL, opt)
}

func options(rawURL string, o Options) (any, string, error) {
	if rawURL == "" {
		return nil, "", fmt.Errorf("%w: empty", ErrURL)
	}
	pool := o.PoolSize
	if pool <= 0 {
		pool = 64
	}
	if IsCluster(rawURL) {
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrURL, redacted(err))
		}
		q := u.Query()
		q.Del("cluster") // ours; go-redis refuses parameters it does not know
		u.RawQuery = q.Encode()
		co, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrURL, redacted(err))
		}
		if co.PoolSize < pool {
			co.PoolSize = pool
		}
		co.ContextTimeoutEnabled = true
		return co, strings.Join(co.Addrs, ","), nil
	}
	so, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrURL, redacted(err))
	}
	if so.PoolSize < pool {
		so.PoolSize = pool
	}
	so.ContextTimeoutEnabled = true
	return so, so.Addr, nil
}

// redacted drops a URL from a parse error's text: url.Parse quotes the
// whole input, password included.
func redacted(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}
