// Package depend lets a task wait for other tasks: B after A, or fan-in (C
// after A and B). The waiting task is parked outside the queues and created
// in the store — with the id it was given at submit — once every dependency
// is COMPLETED; if a dependency ends in the DLQ or CANCELLED, it is created
// and cancelled at once, so its owner sees why it never ran. Releasing is
// exactly once: the store refuses a second task with the same id.
//
// The Watcher follows the store's lifecycle events to release promptly and
// sweeps the parked tasks periodically, so an event it missed (a restart)
// only delays a release.
package depend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/eventlog"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/task"
)

// MaxDependencies bounds a task's dependencies.
const MaxDependencies = 100

// ErrInvalid is wrapped by validation errors.
var ErrInvalid = errors.New("invalid dependencies")

// Config configures a Graph.
type Config struct {
	// Sweep is how often the parked tasks are rechecked. Default 5s.
	Sweep time.Duration
	// TTL bounds how long a task stays parked. Default 7 days.
	TTL time.Duration
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
	// Clock stamps when a task was parked (its created_at until it is
	// released). Default the real clock.
	Clock clock.Clock
}

// Graph parks and releases dependent tasks.
type Graph struct {
	st  *store.Store
	rdb redis.UniversalClient
	cfg Config
	k   keys
}

// New returns a Graph over st.
func New(st *store.Store, cfg Config) *Graph {
	if cfg.Sweep == 0 {
		cfg.Sweep = 5 * time.Second
	}
	if cfg.TTL == 0 {
		cfg.TTL = 7 * 24 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Graph{st: st, rdb: st.Client(), cfg: cfg, k: newKeys(st.Namespace())}
}

// parked is what a waiting task's key holds.
type parked struct {
	Request store.EnqueueRequest `json:"request"`
	After   []string             `json:"after"`
}

// Submit creates r after the tasks in after: at once when they are all
// COMPLETED, else parked. It returns the task's id. Dependencies must
// exist; a dependency that already failed for good cancels the task.
func (g *Graph) Submit(ctx context.Context, r store.EnqueueRequest, after []string) (string, error) {
	if len(after) > MaxDependencies {
		return "", fmt.Errorf("%w: %d dependencies (at most %d)", ErrInvalid, len(after), MaxDependencies)
	}
	if r.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return "", err
		}
		r.ID = id.String()
	}
	seen := map[string]bool{}
	for _, d := range after {
		if d == r.ID || seen[d] {
			return "", fmt.Errorf("%w: %q is repeated or the task itself", ErrInvalid, d)
		}
		seen[d] = true
	}
	deps, err := g.st.GetMany(ctx, after)
	if err != nil {
		return "", err
	}
	if len(deps) != len(after) {
		// a dependency still parked itself exists (chains: C after B after A)
		missing, err := g.missingNotParked(ctx, after, deps)
		if err != nil {
			return "", err
		}
		if len(missing) > 0 {
			return "", fmt.Errorf("%w: dependency %s does not exist", ErrInvalid, missing[0])
		}
	}
	if len(after) == 0 {
		_, err = g.st.Enqueue(ctx, r)
		return r.ID, err
	}
	b, err := json.Marshal(parked{Request: r, After: after})
	if err != nil {
		return "", err
	}
	_, err = g.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, g.k.waiting(r.ID), b, g.cfg.TTL)
		p.ZAdd(ctx, g.k.pending(), redis.Z{Score: float64(g.cfg.Clock.Now().UnixMilli()), Member: r.ID})
		for _, d := range after {
			p.SAdd(ctx, g.k.waiters(d), r.ID)
			p.Expire(ctx, g.k.waiters(d), g.cfg.TTL)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	// A dependency may have finished before we registered: check now.
	return r.ID, g.check(ctx, r.ID)
}

// Waiting reports whether id is parked, and on what.
func (g *Graph) Waiting(ctx context.Context, id string) ([]string, bool, error) {
	raw, err := g.rdb.Get(ctx, g.k.waiting(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var p parked
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, false, err
	}
	return p.After, true, nil
}

// check releases or cancels the parked task id when its dependencies allow.
func (g *Graph) check(ctx context.Context, id string) error {
	raw, err := g.rdb.Get(ctx, g.k.waiting(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return g.rdb.ZRem(ctx, g.k.pending(), id).Err()
	}
	if err != nil {
		return err
	}
	var p parked
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	deps, err := g.st.GetMany(ctx, p.After)
	if err != nil {
		return err
	}
	done, doomed := 0, ""
	for _, d := range deps {
		switch d.State {
		case task.StateCompleted:
			done++
		case task.StateDLQ, task.StateCancelled:
			doomed = d.ID + " ended " + string(d.State)
		}
	}
	if len(deps) < len(p.After) {
		missing, err := g.missingNotParked(ctx, p.After, deps)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			doomed = "dependency " + missing[0] + " was deleted"
		}
	}
	switch {
	case doomed != "":
		if _, err := g.st.Enqueue(ctx, p.Request); err != nil && !errors.Is(err, task.ErrDuplicateTaskID) {
			return err
		}
		if _, err := g.st.Cancel(ctx, id); err != nil && !errors.Is(err, task.ErrWrongState) {
			return err
		}
		g.cfg.Logger.Info("dependent task cancelled", "task_id", id, "because", doomed)
	case done == len(p.After):
		if _, err := g.st.Enqueue(ctx, p.Request); err != nil && !errors.Is(err, task.ErrDuplicateTaskID) {
			return err
		}
		g.cfg.Logger.Info("dependent task released", "task_id", id)
	default:
		return nil
	}
	_, err = g.rdb.TxPipelined(ctx, func(pp redis.Pipeliner) error {
		pp.Del(ctx, g.k.waiting(id))
		pp.ZRem(ctx, g.k.pending(), id)
		for _, d := range p.After {
			pp.SRem(ctx, g.k.waiters(d), id)
		}
		return nil
	})
	return err
}

// Sweep rechecks every parked task.
func (g *Graph) Sweep(ctx context.Context) error {
	ids, err := g.rdb.ZRange(ctx, g.k.pending(), 0, -1).Result()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := g.check(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// Run follows the lifecycle events and sweeps until ctx ends.
func (g *Graph) Run(ctx context.Context) error {
	r := eventlog.NewReader(g.rdb, g.st.EventStreamKeys()...)
	after, err := r.Latest(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: not a failure
		}
		return err
	}
	if err := g.Sweep(ctx); err != nil && ctx.Err() == nil {
		g.cfg.Logger.Warn("dependency sweep", "err", err)
	}
	next := time.Now().Add(g.cfg.Sweep)
	for ctx.Err() == nil {
		evs, cur, err := r.Read(ctx, after, 100, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			g.cfg.Logger.Warn("dependency watcher: read events", "err", err)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		after = cur
		for _, e := range evs {
			if e.To != task.StateCompleted && e.To != task.StateDLQ && e.To != task.StateCancelled {
				continue
			}
			ws, err := g.rdb.SMembers(ctx, g.k.waiters(e.TaskID)).Result()
			if err != nil {
				continue
			}
			for _, w := range ws {
				if err := g.check(ctx, w); err != nil && ctx.Err() == nil {
					g.cfg.Logger.Warn("dependency check", "task_id", w, "err", err)
				}
			}
		}
		if time.Now().After(next) {
			next = time.Now().Add(g.cfg.Sweep)
			if err := g.Sweep(ctx); err != nil && ctx.Err() == nil { // a stop is not a failure
				g.cfg.Logger.Warn("dependency sweep", "err", err)
			}
		}
	}
	return nil
}
