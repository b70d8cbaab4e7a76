package protocol

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/retry"
)

// Loop is the read loop of one consumer of a consumer group, shared by the
// two sides of the protocol: an external service reading task.create in
// its group (extsvc) and the agent's outcome consumer reading the response
// streams in agent-group (internal/external/outcome). Each turn it
//
//   - takes over, every ClaimIdle/3, the entries that consumers of the
//     group have held unacknowledged for ClaimIdle (XAUTOCLAIM: a dead
//     consumer's work), going on with the scan at the next turn while a
//     scan fills a batch;
//   - else reads new entries (XREADGROUP, blocking up to Block);
//   - hands the batch to the handler, which acknowledges what it applied;
//   - backs off (Backoff) while Redis fails, so a Redis restart is
//     waited for, not hammered.
//
// Delivery is at least once: an entry the handler does not acknowledge
// stays pending and is claimed again after ClaimIdle, by this consumer
// or another.
type Loop struct {
	// Client is the Redis to read (owned by the caller).
	Client redis.UniversalClient
	// Group and Consumer name the reader; the group must exist
	// (EnsureGroup).
	Group, Consumer string
	// Streams are the streams read together.
	Streams []string
	// Count is the most entries one read returns (a claim takes up to
	// Count per stream). Default 10.
	Count int64
	// Room, when set, bounds each read to what the handler can take now
	// (an extsvc service's free task slots): it returns that number,
	// waiting while it is 0, and returns 0 only when ctx ends. Nil: Count.
	Room func(ctx context.Context) int64
	// Block is how long a read waits for new entries. Default 1s.
	Block time.Duration
	// ClaimIdle is how long an entry may stay unacknowledged by its
	// consumer before it is claimed. Default 30s.
	ClaimIdle time.Duration
	// Backoff is the pause after a failed read, growing while reads keep
	// failing. Default 100 ms doubling up to 5 s, no jitter.
	Backoff retry.Backoff
	// Logger gets the claims (Info) and the failed reads (Warn). Default:
	// discard.
	Logger *slog.Logger
}

// Run reads until ctx ends, then returns nil; a handler's error ends it
// at once and is returned (the batch's unacknowledged entries stay
// pending). handle gets each non-empty batch: entries claimed from other
// consumers (a batch of their own) or new ones, in stream order per
// stream.
func (l *Loop) Run(ctx context.Context, handle func(context.Context, []Message) error) error {
	cfg := l.withDefaults()
	// per stream, where the claim scan goes on ("0-0": from the start)
	cursors := make(map[string]string, len(cfg.Streams))
	nextClaim := time.Time{}
	fails := 0
	for ctx.Err() == nil {
		n := cfg.Count
		if cfg.Room != nil {
			if n = min(n, cfg.Room(ctx)); n <= 0 {
				continue // ctx ended while waiting for room
			}
		}
		var msgs []Message
		var err error
		if now := time.Now(); !now.Before(nextClaim) {
			var scanned bool
			msgs, scanned, err = cfg.claim(ctx, cursors, n)
			if scanned || err != nil {
				nextClaim = now.Add(cfg.ClaimIdle / 3)
			}
		}
		if err == nil && len(msgs) == 0 {
			msgs, err = ReadGroup(ctx, cfg.Client, cfg.Group, cfg.Consumer, cfg.Streams, n, cfg.Block)
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			cfg.Logger.Warn("read failed; retrying", "group", cfg.Group, "consumer", cfg.Consumer, "err", err)
			t := time.NewTimer(cfg.Backoff.Delay(fails, nil))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			fails++
			continue
		}
		fails = 0
		if len(msgs) == 0 {
			continue
		}
		if err := handle(ctx, msgs); err != nil {
			return err
		}
	}
	return nil
}

func (l *Loop) withDefaults() Loop {
	c := *l
	if c.Count <= 0 {
		c.Count = 10
	}
	if c.Block <= 0 {
		c.Block = time.Second
	}
	if c.ClaimIdle <= 0 {
		c.ClaimIdle = 30 * time.Second
	}
	if c.Backoff.Initial <= 0 {
		c.Backoff = retry.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: new(0.0)}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// claim takes over up to n idle entries of each stream, from where the
// last scan of that stream stopped. scanned reports that every stream's
// scan reached its end (the next claim is due after ClaimIdle/3); on an
// error the scans start over.
func (l *Loop) claim(ctx context.Context, cursors map[string]string, n int64) (msgs []Message, scanned bool, err error) {
	scanned = true
	for _, s := range l.Streams {
		start := cursors[s]
		if start == "" {
			start = "0-0"
		}
		got, next, err := AutoClaim(ctx, l.Client, s, l.Group, l.Consumer, l.ClaimIdle, start, n)
		if err != nil {
			clear(cursors)
			return nil, true, err
		}
		cursors[s] = next
		if next != "0-0" {
			scanned = false
		}
		for _, m := range got {
			l.Logger.Info("entry claimed from a dead consumer", "stream", m.Stream, "entry", m.ID, "group", l.Group, "consumer", l.Consumer)
		}
		msgs = append(msgs, got...)
	}
	return msgs, scanned, nil
}
