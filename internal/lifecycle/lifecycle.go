// Package lifecycle reads the lifecycle events the store's transitions write:
// every transition of a task (from, to, time, task type, session) is one
// event. The transition scripts append the events of one script call as ONE
// entry of a capped Redis stream, so a batch of 64 completions costs one
// XADD, not 64. Readers (the API's SSE stream, session notifications)
// follow the stream and can resume from an Event.ID after a disconnect, as
// long as the entry is still within the cap.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/task"
)

// Event is one task transition.
type Event struct {
	// ID orders events: "<stream entry id>.<index in entry>"; pass it to
	// Reader.Read to resume after this event.
	ID        string     `json:"id"`
	TaskID    string     `json:"task_id"`
	From      task.State `json:"from,omitempty"` // empty when the task was created
	To        task.State `json:"to"`
	At        time.Time  `json:"at"`
	TaskType  string     `json:"task_type,omitempty"`
	SessionID string     `json:"session_id,omitempty"`
}

// Field is the stream entry field holding the packed events.
const Field = "e"

// Decode unpacks the events of one stream entry: records separated by
// \x1e, fields by \x1f (task id, from, to, unix ms, task type, session).
// Malformed records are skipped.
func Decode(entryID, packed string) []Event {
	if packed == "" {
		return nil
	}
	recs := strings.Split(packed, "\x1e")
	out := make([]Event, 0, len(recs))
	for i, r := range recs {
		f := strings.Split(r, "\x1f")
		if len(f) != 6 || f[0] == "" {
			continue
		}
		msec, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, Event{
			ID: entryID + "." + strconv.Itoa(i), TaskID: f[0], From: task.State(f[1]), To: task.State(f[2]),
			At: time.UnixMilli(msec).UTC(), TaskType: f[4], SessionID: f[5],
		})
	}
	return out
}

// splitID parses "<entry>.<index>"; a bare entry id means after the whole entry.
func splitID(id string) (entry string, idx int, err error) {
	entry, rest, ok := strings.Cut(id, ".")
	if !ok {
		return id, -1, nil
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return "", 0, fmt.Errorf("event: bad event id %q", id)
	}
	return entry, n, nil
}

// Reader follows one event stream (store.EventStreamKey()).
type Reader struct {
	rdb    redis.UniversalClient
	stream string
}

// NewReader returns a Reader of stream.
func NewReader(rdb redis.UniversalClient, stream string) *Reader {
	return &Reader{rdb: rdb, stream: stream}
}

// Latest returns the id of the newest event entry ("0" when the stream is
// empty): reading after it yields only events still to come.
func (r *Reader) Latest(ctx context.Context) (string, error) {
	xs, err := r.rdb.XRevRangeN(ctx, r.stream, "+", "-", 1).Result()
	if err != nil {
		return "", fmt.Errorf("event: latest: %w", err)
	}
	if len(xs) == 0 {
		return "0", nil
	}
	return xs[0].ID, nil
}

// Read returns the events after the event id after ("0" = from the
// oldest kept), waiting up to block when there are none (0 = do not
// wait), and the id to pass next time. count bounds the stream entries
// read per call.
func (r *Reader) Read(ctx context.Context, after string, count int64, block time.Duration) ([]Event, string, error) {
	entry, idx, err := splitID(after)
	if err != nil {
		return nil, after, err
	}
	var out []Event
	next := after
	if idx >= 0 {
		// finish the entry the caller stopped inside
		xs, err := r.rdb.XRange(ctx, r.stream, entry, entry).Result()
		if err != nil {
			return nil, after, fmt.Errorf("event: read: %w", err)
		}
		for _, x := range xs {
			for _, e := range decodeMsg(x) {
				if _, i, _ := splitID(e.ID); i > idx {
					out = append(out, e)
				}
			}
		}
		next = entry
		if len(out) > 0 {
			return out, out[len(out)-1].ID, nil
		}
	}
	args := &redis.XReadArgs{Streams: []string{r.stream, entry}, Count: count, Block: -1}
	if block > 0 {
		args.Block = block
	}
	res, err := r.rdb.XRead(ctx, args).Result()
	if errors.Is(err, redis.Nil) {
		return nil, next, nil
	}
	if err != nil {
		return nil, after, fmt.Errorf("event: read: %w", err)
	}
	for _, s := range res {
		for _, x := range s.Messages {
			out = append(out, decodeMsg(x)...)
			next = x.ID
		}
	}
	return out, next, nil
}

func decodeMsg(x redis.XMessage) []Event {
	v, _ := x.Values[Field].(string)
	return Decode(x.ID, v)
}

// Subscribe calls fn for every event after the id after ("" = only events
// still to come) until ctx ends or fn returns an error. It returns
// ctx.Err() or fn's error.
func (r *Reader) Subscribe(ctx context.Context, after string, fn func(Event) error) error {
	if after == "" {
		var err error
		if after, err = r.Latest(ctx); err != nil {
			return err
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		evs, next, err := r.Read(ctx, after, 100, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		for _, e := range evs {
			if err := fn(e); err != nil {
				return err
			}
		}
		after = next
	}
}
