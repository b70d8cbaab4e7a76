// Package follower hands on the tasks that finish, in-process or external,
// to the parts that keep or announce them: the Archiver copies each to the
// PostgreSQL archive and the InProcessNotifier tells the sessions of
// their in-process tasks' ends. Both follow the store's lifecycle event
// stream from a cursor of their own kept in Redis (follower), so a
// restart resumes, neither delays the other, and a follower that fell
// behind the capped stream sweeps the finished-task indexes instead.
package follower

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

	"github.com/taskflow/taskflow/internal/lifecycle"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/task"
)

// finishedStates are the states a follower hands on: a task's run is over.
var finishedStates = []task.State{task.StateCompleted, task.StateDLQ, task.StateCancelled}

func finished(s task.State) bool {
	return s == task.StateCompleted || s == task.StateDLQ || s == task.StateCancelled
}

// follower reads the store's lifecycle event stream from a cursor kept in
// Redis (a restart resumes) and hands each batch of tasks that finished —
// COMPLETED, DLQ, CANCELLED, as they are when read — to handle. It is the
// loop of the Archiver and the InProcessNotifier: each has its own cursor,
// so each sees every event.
//
// The event stream is capped (store.Config.EventStreamMaxLen): a follower
// that falls further behind than the cap would miss the events that were
// trimmed. Before each read it compares its cursor with the stream's first
// entry (XINFO STREAM): when the stream has lost entries and its cursor's
// entry is among them, events after the cursor may have been trimmed
// unread (Redis 7.0 does not record the last trimmed id, so this counts a
// trim that stopped exactly at the cursor too, harmlessly). On such a gap
// it logs it, counts it (Gaps, and OnGap), and hands on the missed window
// from the finished-task indexes instead (newest first back to the
// cursor's time), then resumes from the entry that was newest when the
// sweep began. Tasks purged from Redis meanwhile are lost to it.
type follower struct {
	name   string // in logs: "archiver", "notifier"
	st     *store.Store
	rdb    redis.UniversalClient
	reader *lifecycle.Reader
	stream string
	cursor string // key of the cursor
	log    *slog.Logger
	// start is the cursor of a first run (no cursor saved yet).
	start func(context.Context) (string, error)
	// want says whether an event's task is handed on (nil: every task).
	want func(lifecycle.Event) bool
	// handle gets the finished tasks of a batch of events, or of a page
	// of a gap's sweep; it must be idempotent (a batch can be handed on
	// again after a crash).
	handle func(context.Context, []*task.Task) error
	onGap  func()
	gaps   atomic.Int64
}

func newFollower(st *store.Store, name, cursor string, log *slog.Logger) *follower {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &follower{name: name, st: st, rdb: st.Client(), reader: lifecycle.NewReader(st.Client(), st.EventStreamKey()),
		stream: st.EventStreamKey(), cursor: cursor, log: log,
		start: func(context.Context) (string, error) { return "0", nil }}
}

// run follows the stream until ctx ends.
func (f *follower) run(ctx context.Context) error {
	after, err := f.origin(ctx)
	if err != nil {
		return nil // ctx ended
	}
	for ctx.Err() == nil {
		resume, err := f.sweepGap(ctx, after)
		if err == nil && resume != after {
			after = resume
			err = f.rdb.Set(ctx, f.cursor, after, 0).Err()
		}
		var evs []lifecycle.Event
		var next string
		if err == nil {
			evs, next, err = f.reader.Read(ctx, after, 200, time.Second)
		}
		if err == nil {
			err = f.handleEvents(ctx, evs)
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			f.log.Warn(f.name+": retrying", "err", err)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			continue
		}
		if next != after {
			after = next
			if err := f.rdb.Set(ctx, f.cursor, after, 0).Err(); err != nil && ctx.Err() == nil {
				f.log.Warn(f.name+": save cursor", "err", err)
			}
		}
	}
	return nil
}

// origin reads the saved cursor, else the first run's start, retrying a
// failed read every second (a follower that gave up here would stop
// archiving or notifying for the process's life); it fails only when ctx
// ends.
func (f *follower) origin(ctx context.Context) (string, error) {
	for {
		after, err := f.rdb.Get(ctx, f.cursor).Result()
		if errors.Is(err, redis.Nil) {
			after, err = f.start(ctx)
		}
		if err == nil {
			return after, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		f.log.Warn(f.name+": read cursor, retrying", "err", err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func (f *follower) handleEvents(ctx context.Context, evs []lifecycle.Event) error {
	var ids []string
	seen := map[string]bool{}
	for _, e := range evs {
		if finished(e.To) && !seen[e.TaskID] && (f.want == nil || f.want(e)) {
			seen[e.TaskID] = true
			ids = append(ids, e.TaskID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	ts, err := f.st.GetMany(ctx, ids)
	if err != nil {
		return err
	}
	return f.handle(ctx, ts)
}

// sweepGap checks whether events after the cursor after were trimmed
// unread; if so it hands on the finished tasks of the missed window from
// the state indexes and returns the cursor to resume from (else after).
func (f *follower) sweepGap(ctx context.Context, after string) (string, error) {
	info, err := f.rdb.XInfoStream(ctx, f.stream).Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return after, nil // nothing written yet
		}
		return after, fmt.Errorf("%s: stream info: %w", f.name, err)
	}
	cursor, _, _ := strings.Cut(after, ".")
	if info.EntriesAdded <= info.Length || info.Length == 0 || compareIDs(cursor, info.FirstEntry.ID) >= 0 {
		return after, nil // nothing removed, or the cursor's entry is still there
	}
	f.gaps.Add(1)
	if f.onGap != nil {
		f.onGap()
	}
	resume, err := f.reader.Latest(ctx) // events after it are read as usual
	if err != nil {
		return after, err
	}
	fromMS, _ := splitStreamID(cursor)
	since := time.UnixMilli(fromMS)
	f.log.Warn(f.name+": lifecycle events were trimmed before it read them; handling the missed window from the finished-task indexes",
		"cursor", cursor, "first_kept", info.FirstEntry.ID, "since", since.UTC())
	n := 0
	for _, st := range finishedStates {
		for off := 0; ; off += 500 {
			page, err := f.st.ListByState(ctx, st, store.ListOptions{Offset: off, Limit: 500})
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
				if f.want == nil || f.want(lifecycle.Event{TaskID: t.ID, To: t.State, TaskType: t.Type, SessionID: t.SessionID}) {
					batch = append(batch, t)
				}
			}
			if len(batch) > 0 {
				if err := f.handle(ctx, batch); err != nil {
					return after, err
				}
				n += len(batch)
			}
			if older || len(page.Tasks) < 500 {
				break
			}
		}
	}
	f.log.Warn(f.name+": missed window handled from the indexes", "tasks", n, "resume", resume)
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
