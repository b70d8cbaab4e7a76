package follower

import (
	"context"
	"log/slog"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/task"
)

// Archiver copies every task that finishes — in-process or external:
// COMPLETED, DLQ, CANCELLED — to the PostgreSQL archive, following the
// store's lifecycle events from its own cursor kept in Redis (a restart
// resumes; an event read twice is an idempotent upsert). When events were
// trimmed from the capped stream before it read them it archives the
// missed window from the finished-task indexes (see follower); tasks
// purged from Redis meanwhile (after the retention) are lost to the
// archive.
type Archiver struct {
	f *follower
}

// Gaps counts the times the archiver found events trimmed before it read
// them (and swept the finished-task indexes instead).
func (a *Archiver) Gaps() int64 { return a.f.gaps.Load() }

// OnGap makes fn run at each gap too (Metrics.Gap counts them); call it
// before Run.
func (a *Archiver) OnGap(fn func()) { a.f.onGap = fn }

// NewArchiver returns an Archiver of st's namespace into arc.
func NewArchiver(st *store.Store, arc *archive.Archive, log *slog.Logger) *Archiver {
	f := newFollower(st, "archiver", newKeys(st.Namespace()).archiveCursor(), log)
	f.handle = func(ctx context.Context, ts []*task.Task) error { return arc.PutBatch(ctx, ts) }
	return &Archiver{f: f}
}

// Run archives until ctx ends.
func (a *Archiver) Run(ctx context.Context) error { return a.f.run(ctx) }
