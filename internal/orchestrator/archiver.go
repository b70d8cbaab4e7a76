package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
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
//
// The event stream is capped (store.Config.EventStreamMaxLen): an archiver
// that falls further behind than the cap (or that starts for the first
// time on a stream that was already trimmed) would miss the events that
// were trimmed. Before each read it compares its cursor with the stream's
// first entry (XINFO STREAM): when the stream has lost entries and its
// cursor's entry is among them, events after the cursor may have been
// trimmed unread (Redis 7.0 does not record the last trimmed id, so this
// counts a trim that stopped exactly at the cursor too, harmlessly). On
// such a gap it logs it, counts it (Gaps), and archives the missed window from
// the finished-task indexes instead (COMPLETED, DLQ, CANCELLED, newest
// first back to the cursor's time), then resumes from the entry that was
// newest when the sweep began. Tasks purged from Redis meanwhile (after
// the retention) are lost to the archive.
type Archiver struct {
	st     *store.Store
	rdb    redis.UniversalClient
	arc    *archive.Archive
	k      keys
	log    *slog.Logger
	reader *event.Reader
	stream string
	gaps   atomic.Int64
}

// Gaps counts the times the archiver found events trimmed before it read
// them (and swept the finished-task indexes instead).
func (a *Archiver) Gaps() int64 { return a.gaps.Load() }

// NewArchiver returns an Archiver of st's namespace into arc.
func NewArchiver(st *store.Store, arc *archive.Archive, namespace string, log *slog.Logger) *Archiver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if namespace == "" {
		namespace = "taskflow"
	}
	return &Archiver{st: st, rdb: st.Client(), arc: arc, k: newKeys(namespace), log: log,
		reader: event.NewReader(st.Client(), st.EventStreamKey()), stream: st.EventStreamKey()}
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
		resume, err := a.sweepGap(ctx, after)
		if err == nil && resume != after {
			after = resume
			err = a.rdb.Set(ctx, a.k.archiveCursor(), after, 0).Err()
		}
		var evs []event.Event
		var next string
		if err == nil {
			evs, next, err = a.reader.Read(ctx, after, 200, time.Second)
		}
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

// sweepGap checks whether events after the cursor after were trimmed
// unread; if so it archives the finished tasks of the missed window from
// the state indexes and returns the cursor to resume from (else after).
func (a *Archiver) sweepGap(ctx context.Context, after string) (string, error) {
	info, err := a.rdb.XInfoStream(ctx, a.stream).Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return after, nil // nothing written yet
		}
		return after, fmt.Errorf("archiver: stream info: %w", err)
	}
	cursor, _, _ := strings.Cut(after, ".")
	if info.EntriesAdded <= info.Length || info.Length == 0 || compareIDs(cursor, info.FirstEntry.ID) >= 0 {
		return after, nil // nothing removed, or the cursor's entry is still there
	}
	a.gaps.Add(1)
	resume, err := a.reader.Latest(ctx) // events after it are read as usual
	if err != nil {
		return after, err
	}
	fromMS, _ := splitStreamID(cursor)
	since := time.UnixMilli(fromMS)
	a.log.Warn("archiver: lifecycle events were trimmed before it read them; archiving the missed window from the finished-task indexes",
		"cursor", cursor, "first_kept", info.FirstEntry.ID, "since", since.UTC())
	n := 0
	for _, st := range []task.State{task.StateCompleted, task.StateDLQ, task.StateCancelled} {
		for off := 0; ; off += 500 {
			page, err := a.st.ListByState(ctx, st, store.ListOptions{Offset: off, Limit: 500})
			if err != nil {
				return after, err
			}
			var batch []*task.Task
			older := false
			for _, t := range page.Tasks {
				if t.UpdatedAt.Before(since) {
					older = true // newest first: the rest is older still
					break
				}
				batch = append(batch, t)
			}
			if len(batch) > 0 {
				if err := a.arc.PutBatch(ctx, batch); err != nil {
					return after, err
				}
				n += len(batch)
			}
			if older || len(page.Tasks) < 500 {
				break
			}
		}
	}
	a.log.Warn("archiver: missed window archived from the indexes", "tasks", n, "resume", resume)
	return resume, nil
}

// compareIDs orders two stream ids ("ms-seq"; "0" and "" are the start).
func compareIDs(x, y string) int {
	xm, xs := splitStreamID(x)
	ym, ys := splitStreamID(y)
	switch {
	case xm != ym:
		return cmpInt(xm, ym)
	default:
		return cmpInt(xs, ys)
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// splitStreamID parses "ms-seq" (a bad or empty id is 0-0).
func splitStreamID(id string) (ms, seq int64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseInt(m, 10, 64)
	seq, _ = strconv.ParseInt(s, 10, 64)
	return ms, seq
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
