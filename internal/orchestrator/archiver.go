package orchestrator

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/archive"
	"github.com/taskflow/taskflow/internal/event"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/task"
)

// Archiver copies every task that finishes — in-process or external:
// COMPLETED, DLQ, CANCELLED — to the PostgreSQL archive, following the
// store's lifecycle events from a cursor kept in Redis (a restart resumes;
// an event read twice is an idempotent upsert).
type Archiver struct {
	st     *store.Store
	rdb    redis.UniversalClient
	arc    *archive.Archive
	k      keys
	log    *slog.Logger
	reader *event.Reader
}

// NewArchiver returns an Archiver of st's namespace into arc.
func NewArchiver(st *store.Store, arc *archive.Archive, namespace string, log *slog.Logger) *Archiver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if namespace == "" {
		namespace = "taskflow"
	}
	return &Archiver{st: st, rdb: st.Client(), arc: arc, k: newKeys(namespace), log: log,
		reader: event.NewReader(st.Client(), st.EventStreamKey())}
}

// Run archives until ctx ends.
func (a *Archiver) Run(ctx context.Context) error {
	after, err := a.rdb.Get(ctx, a.k.archiveCursor()).Result()
	if errors.Is(err, redis.Nil) {
		after = "0" // first run: everything the capped stream still holds
	} else if err != nil {
		return err
	}
	for ctx.Err() == nil {
		evs, next, err := a.reader.Read(ctx, after, 200, time.Second)
		if err == nil {
			err = a.archive(ctx, evs)
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			a.log.Warn("archiver: retrying", "err", err)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			continue
		}
		if next != after {
			after = next
			if err := a.rdb.Set(ctx, a.k.archiveCursor(), after, 0).Err(); err != nil && ctx.Err() == nil {
				a.log.Warn("archiver: save cursor", "err", err)
			}
		}
	}
	return nil
}

func (a *Archiver) archive(ctx context.Context, evs []event.Event) error {
	var ids []string
	seen := map[string]bool{}
	for _, e := range evs {
		if (e.To == task.StateCompleted || e.To == task.StateDLQ || e.To == task.StateCancelled) && !seen[e.TaskID] {
			seen[e.TaskID] = true
			ids = append(ids, e.TaskID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	ts, err := a.st.GetMany(ctx, ids)
	if err != nil {
		return err
	}
	return a.arc.PutBatch(ctx, ts)
}
