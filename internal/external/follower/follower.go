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

	"github.com/taskflow/taskflow/internal/engine/eventlog"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/task"
)

// finishedStates are the states a follower hands on: a task's run is over.
var finishedStates = []task.State{task.StateCompleted, task.StateDLQ, task.StateCancelled}

func finished(s task.State) bool {
	return s == task.StateCompleted || s == task.StateDLQ || s == task.StateCancelled
}

// follower reads the store's lifecycle event streams (one per partition)
// from a cursor kept in Redis (a restart resumes) and hands each batch of
// tasks that finished — COMPLETED, DLQ, CANCELLED, as they are when read —
// to handle. It is the loop of the Archiver and the InProcessNotifier:
// each has its own cursor, so each sees every event. The cursor is the
// eventlog.Reader's: with one partition the stream position itself, as
// before partitions existed (a cursor saved then is read as it is); with
// several, one position per stream.
//
// The event streams are capped (store.Config.EventStreamMaxLen): a
// follower that falls further behind than the cap would miss the events
// that were trimmed. Before each read it compares its position in each
// stream with that stream's first entry (XINFO STREAM): when the stream
// has lost entries and the position's entry is among them, events after it
// may have been trimmed unread (Redis 7.0 does not record the last trimmed
// id, so this counts a trim that stopped exactly at the position too,
// harmlessly). On such a gap it logs it, counts it (Gaps, and OnGap), and
// hands on the missed window from the finished-task indexes instead
// (newest first back to the earliest such position's time), then resumes
// each stream that had a gap from its entry that was newest when the
// sweep began (the other streams go on from where they were). Tasks purged
// from Redis meanwhile are lost to it.
type follower struct {
	name    string // in logs: "archiver", "notifier"
	st      *store.Store
	rdb     redis.UniversalClient
	reader  *eventlog.Reader
	streams []string // the reader's, in cursor order
	cursor  string   // key of the cursor
	log     *slog.Logger
	// start is the cursor of a first run (no cursor saved yet).
	start func(context.Context) (string, error)
	// want says whether an event's task is handed on (nil: every task).
	want func(eventlog.Event) bool
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
	streams := st.EventStreamKeys()
	return &follower{name: name, st: st, rdb: st.Client(), reader: eventlog.NewReader(st.Client(), streams...),
		streams: streams, cursor: cursor, log: log,
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
		var evs []eventlog.Event
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
// ends. A saved cursor that is not one of this deployment's streams (saved
// with another number of partitions, before the deployment was drained and
// made again) is dropped for the start, with a warning: it would fail
// every read.
func (f *follower) origin(ctx context.Context) (string, error) {
	for {
		after, err := f.rdb.Get(ctx, f.cursor).Result()
		if err == nil {
			if _, perr := f.reader.Positions(after); perr != nil {
				f.log.Warn(f.name+": saved cursor does not fit the event streams; starting afresh", "err", perr)
				err = redis.Nil
			}
		}
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

func (f *follower) handleEvents(ctx context.Context, evs []eventlog.Event) error {
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
// unread, in any stream; if so it hands on the finished tasks of the
// missed window from the state indexes and returns the cursor to resume
// from (else after).
func (f *follower) sweepGap(ctx context.Context, after string) (string, error) {
	pos, err := f.reader.Positions(after)
	if err != nil {
		return after, fmt.Errorf("%s: %w", f.name, err)
	}
	// one XINFO STREAM per stream, pipelined (a cluster has them in
	// different slots: the pipeline is split by node)
	pipe := f.rdb.Pipeline()
	infos := make([]*redis.XInfoStreamCmd, len(f.streams))
	for i, k := range f.streams {
		infos[i] = pipe.XInfoStream(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	var gapped []int // the streams whose position's entry was trimmed
	var since time.Time
	var from, firstKept []string
	for i, c := range infos {
		info, err := c.Result()
		if err != nil {
			if strings.Contains(err.Error(), "no such key") {
				continue // nothing written yet
			}
			return after, fmt.Errorf("%s: stream info: %w", f.name, err)
		}
		cursor, _, _ := strings.Cut(pos[i], ".")
		if info.EntriesAdded <= info.Length || info.Length == 0 || compareIDs(cursor, info.FirstEntry.ID) >= 0 {
			continue // nothing removed, or the position's entry is still there
		}
		gapped = append(gapped, i)
		fromMS, _ := splitStreamID(cursor)
		if t := time.UnixMilli(fromMS); len(gapped) == 1 || t.Before(since) {
			since = t
		}
		from = append(from, cursor)
		firstKept = append(firstKept, info.FirstEntry.ID)
	}
	if len(gapped) == 0 {
		return after, nil
	}
	f.gaps.Add(1)
	if f.onGap != nil {
		f.onGap()
	}
	latest, err := f.reader.Latest(ctx) // events after it are read as usual
	if err != nil {
		return after, err
	}
	newest, err := f.reader.Positions(latest)
	if err != nil {
		return after, err
	}
	for _, i := range gapped {
		pos[i] = newest[i]
	}
	resume, err := f.reader.Join(pos)
	if err != nil {
		return after, err
	}
	logArgs := []any{"cursor", strings.Join(from, ","), "first_kept", strings.Join(firstKept, ","), "since", since.UTC()}
	if len(f.streams) > 1 {
		var names []string
		for _, i := range gapped {
			names = append(names, f.streams[i])
		}
		logArgs = append(logArgs, "streams", strings.Join(names, ","))
	}
	f.log.Warn(f.name+": lifecycle events were trimmed before it read them; handling the missed window from the finished-task indexes", logArgs...)
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
				if f.want == nil || f.want(eventlog.Event{TaskID: t.ID, To: t.State, TaskType: t.Type, SessionID: t.SessionID}) {
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
