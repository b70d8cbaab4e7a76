// Package maintenance runs the engine's periodic work: due retries and
// delayed tasks move from the scheduled set to their queues, expired leases
// are reaped (the tasks of a crashed worker go back to their queue), and
// tasks older than the max age are dead-lettered, and finished tasks older
// than their retention are deleted.
//
// Several schedulers may run at once (one per process, or many): every step
// is one idempotent script over a bounded batch, so two schedulers racing
// cannot move a task twice. No leader is elected.
package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/task"
)

// Default retentions of finished tasks.
const (
	DefaultRetention    = 24 * time.Hour
	DefaultDLQRetention = 7 * 24 * time.Hour
)

// Config configures a Scheduler.
type Config struct {
	// Interval between ticks. Default 500ms (due retries move at least
	// once a second).
	Interval time.Duration
	// Batch is the most entries one script call handles. Default 1000.
	Batch int
	// MaxBatchesPerTick bounds the work of one tick per step, so a huge
	// backlog of due entries is spread over ticks. Default 50.
	MaxBatchesPerTick int
	// Retention is how long COMPLETED and CANCELLED tasks stay in Redis
	// after they finished (24 h of task metadata); then the
	// hash and its index entries are deleted (the archive keeps them).
	// nil: 24h; 0 keeps them forever.
	Retention *time.Duration
	// DLQRetention is how long DLQ tasks (with their DLQ list entry and
	// failure snapshot) stay, so operators can inspect and retry them;
	// the DLQ stream keeps 7 days too. nil: 7 days; 0 keeps them forever.
	DLQRetention *time.Duration
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Interval == 0 {
		c.Interval = 500 * time.Millisecond
	}
	if c.Batch == 0 {
		c.Batch = 1000
	}
	if c.MaxBatchesPerTick == 0 {
		c.MaxBatchesPerTick = 50
	}
	if c.Retention == nil {
		c.Retention = new(DefaultRetention)
	}
	if c.DLQRetention == nil {
		c.DLQRetention = new(DefaultDLQRetention)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate says what is wrong with c.
func (c Config) Validate() error {
	if c.Interval <= 0 || c.Interval > time.Second {
		return fmt.Errorf("scheduler: Interval %s must be within (0, 1s]", c.Interval)
	}
	if c.Batch < 1 || c.Batch > 5000 || c.MaxBatchesPerTick < 1 {
		return fmt.Errorf("scheduler: Batch %d must be within [1, 5000] and MaxBatchesPerTick %d >= 1", c.Batch, c.MaxBatchesPerTick)
	}
	return nil
}

// Scheduler runs the periodic steps against one store.
type Scheduler struct {
	st  *store.Store
	cfg Config
}

// New returns a Scheduler.
func New(st *store.Store, cfg Config) (*Scheduler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("scheduler: nil store")
	}
	return &Scheduler{st: st, cfg: cfg}, nil
}

// TickResult counts what one tick did.
type TickResult struct {
	Promoted     int
	Reaped       int
	DeadLettered int
	// Purged counts finished tasks deleted by retention.
	Purged int
}

// Run ticks every Interval until ctx ends; step errors are logged and the
// next tick tries again. It returns nil when ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("scheduler tick", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Tick runs every step once: promote due entries, reap expired leases,
// sweep too-old pending tasks, delete finished tasks past their retention. It returns what it did and the steps'
// errors joined.
func (s *Scheduler) Tick(ctx context.Context) (TickResult, error) {
	var r TickResult
	var errs []error
	for i := 0; i < s.cfg.MaxBatchesPerTick; i++ {
		n, err := s.st.PromoteDue(ctx, s.cfg.Batch)
		r.Promoted += n
		if err != nil {
			errs = append(errs, fmt.Errorf("promote: %w", err))
			break
		}
		if n < s.cfg.Batch {
			break
		}
	}
	for i := 0; i < s.cfg.MaxBatchesPerTick; i++ {
		ids, handled, err := s.st.ReapExpired(ctx, s.cfg.Batch)
		r.Reaped += len(ids)
		if err != nil {
			errs = append(errs, fmt.Errorf("reap: %w", err))
			break
		}
		if len(ids) > 0 {
			s.cfg.Logger.Info("requeued tasks whose lease expired", "n", len(ids))
		}
		if handled < s.cfg.Batch {
			break
		}
	}
	for i := 0; i < s.cfg.MaxBatchesPerTick; i++ {
		n, err := s.st.SweepAged(ctx, s.cfg.Batch)
		r.DeadLettered += n
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep: %w", err))
			break
		}
		if n < s.cfg.Batch {
			break
		}
	}
	for _, p := range []struct {
		state task.State
		keep  time.Duration
	}{{task.StateCompleted, *s.cfg.Retention}, {task.StateCancelled, *s.cfg.Retention}, {task.StateDLQ, *s.cfg.DLQRetention}} {
		if p.keep <= 0 { // 0: kept forever
			continue
		}
		for i := 0; i < s.cfg.MaxBatchesPerTick; i++ {
			n, handled, err := s.st.Purge(ctx, p.state, p.keep, s.cfg.Batch)
			r.Purged += n
			if err != nil {
				errs = append(errs, fmt.Errorf("purge %s: %w", p.state, err))
				break
			}
			if handled < s.cfg.Batch {
				break
			}
		}
	}
	return r, errors.Join(errs...)
}
