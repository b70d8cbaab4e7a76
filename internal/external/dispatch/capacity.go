package dispatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/protocol"
)

// Capacity is how many tasks of each type the live services run at once:
// the sum, over the live registrations listing the type, of the
// concurrency each instance publishes (docs/protocol.md, "Register"). A
// live registration that publishes none (a service written before the
// field existed) counts DefaultInFlight, the bound such a deployment had.
// Instance entries past their expiry are removed as they are read.
func Capacity(ctx context.Context, rdb redis.UniversalClient, ns keyspace.Namespace, now time.Time) (map[string]int, error) {
	k := protocol.NewKeys(ns)
	names, err := rdb.SMembers(ctx, k.Services()).Result()
	if err != nil {
		return nil, fmt.Errorf("dispatch: services: %w", err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(names))
	if len(names) > 0 {
		if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, n := range names {
				cmds[i] = p.HGetAll(ctx, k.Service(n))
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("dispatch: registrations: %w", err)
		}
	}
	out := map[string]int{}
	for i, n := range names {
		h := cmds[i].Val()
		types := strings.TrimSpace(h["types"])
		if types == "" {
			continue // expired: the service is gone
		}
		total, published := 0, false
		var stale []string
		for f, v := range h {
			if !strings.HasPrefix(f, protocol.ConcurrencyFieldPrefix) {
				continue
			}
			c, until, ok := protocol.ParseConcurrency(v)
			if !ok || until < now.UnixMilli() {
				stale = append(stale, f)
				continue
			}
			total += c
			published = true
		}
		if len(stale) > 0 {
			_ = rdb.HDel(ctx, k.Service(n), stale...).Err() // tidying only: read again next time
		}
		if !published {
			total = DefaultInFlight
		}
		for _, t := range strings.Split(types, ",") {
			out[t] += total
		}
	}
	return out, nil
}

// bounds caches Capacity for the dispatcher: read at most every refresh.
type bounds struct {
	rdb     redis.UniversalClient
	ns      keyspace.Namespace
	refresh time.Duration

	mu   sync.Mutex
	at   time.Time
	caps map[string]int
}

// Headroom is how many times the live services' total concurrency a
// self-sized bound admits: an attempt holds its place from its dispatch
// until its outcome is applied, so besides the ones the services run some
// wait in task.create to be read and some are done and wait to be applied.
// A bound of exactly the concurrency left the services short of work as
// soon as it was reached (measured: 10 ms tasks at concurrency 200 went
// from ≈ 6,400 to ≈ 2,800 tasks/s); at twice it was still reached while
// the worker fetched a batch per round trip, and the waits for a place cost
// a third of the no-op rate (≈ 7,000 against ≈ 9,600 tasks/s at four
// times, docs/benchmarks.md). Four times keeps the services busy and the
// backlog still in the priority queues.
const Headroom = 4

// of is typ's bound: Headroom × the live services' total concurrency,
// DefaultInFlight while none serves it (the tasks wait for one anyway) or
// while the registry cannot be read.
func (b *bounds) of(ctx context.Context, typ string, now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.caps == nil || now.Sub(b.at) >= b.refresh {
		caps, err := Capacity(ctx, b.rdb, b.ns, now)
		if err == nil {
			b.caps, b.at = caps, now
		} else if b.caps == nil {
			return DefaultInFlight
		}
	}
	if c := b.caps[typ]; c > 0 {
		return Headroom * c
	}
	return DefaultInFlight
}
