// Package eventlog reads the lifecycle events the store's transitions write:
// every transition of a task (from, to, time, task type, session) is one
// event. The transition scripts append the events of one script call as ONE
// entry of a capped Redis stream, so a batch of 64 completions costs one
// XADD, not 64. A deployment split into partitions has one such stream per
// partition (a task's events are in its partition's). Readers (the API's
// SSE stream, session notifications) follow the streams and can resume
// from an Event.ID after a disconnect, as long as the entry is still
// within the cap.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/task"
)

// Event is one task transition.
type Event struct {
	// ID is the cursor right after this event: pass it to Reader.Read or
	// Reader.Subscribe to resume after it. Read from one stream it is
	// "<stream entry id>.<index in entry>"; from several, the composite
	// cursor of Reader.
	ID        string     `json:"id" jsonschema:"event id (resume with Last-Event-ID)"`
	TaskID    string     `json:"task_id"`
	From      task.State `json:"from,omitempty" jsonschema:"absent when the task was created"`
	To        task.State `json:"to"`
	At        time.Time  `json:"at"`
	TaskType  string     `json:"task_type,omitempty"`
	SessionID string     `json:"session_id,omitempty"`

	// stream is the index, among its Reader's streams, of the stream the
	// event was read from (Reader.Follows).
	stream int
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

// Sep joins the positions of a cursor over several streams. Stream ids
// and event ids hold digits, "-" and "." only.
const Sep = "~"

// pollEvery is how often a blocked Read over streams that no single XREAD
// may name together looks at them again (see Read).
var pollEvery = 50 * time.Millisecond

// Reader follows the lifecycle event streams of a deployment
// (store.EventStreamKeys(): one per partition).
//
// A cursor says where a Reader stands. In one stream a position is "0"
// (before the oldest entry kept), an entry id "<ms>-<seq>" (after that
// whole entry) or an event id "<ms>-<seq>.<i>" (after event i of the
// entry). A Reader of one stream takes the position itself as its cursor,
// as before partitions existed. A Reader of several streams joins one
// position per stream, in the order of its streams, with Sep:
// "1700000000000-0.2~0~1700000000123-4"; the bare "0" is also taken there,
// as "0" in every stream. Every Event's ID is the cursor right after it, so
// any event's id resumes after that event (SSE Last-Event-ID).
//
// Order: the events of one stream come in that stream's order. Across
// streams there is none: a Read returns the events it got merged by their
// entries' times (the writers' clocks, so only roughly in time order), and
// a later Read can return an event of one stream older than one of
// another stream returned before.
type Reader struct {
	rdb     redis.UniversalClient
	streams []string
	// groups are the streams one XREAD may name together (indexes into
	// streams): all of them on a single server; each alone on a Redis
	// Cluster, where each partition's stream is in a slot of its own and a
	// command naming keys of two slots is refused (CROSSSLOT).
	groups [][]int
}

// NewReader returns a Reader of streams: one or more distinct stream keys,
// in a fixed order (the order of a cursor's positions).
func NewReader(rdb redis.UniversalClient, streams ...string) *Reader {
	if len(streams) == 0 {
		panic("lifecycle: NewReader without a stream")
	}
	r := &Reader{rdb: rdb, streams: slices.Clone(streams)}
	if _, single := rdb.(*redis.Client); single || len(streams) == 1 {
		all := make([]int, len(streams))
		for i := range all {
			all[i] = i
		}
		r.groups = [][]int{all}
	} else {
		for i := range streams {
			r.groups = append(r.groups, []int{i})
		}
	}
	return r
}

// pos is a position in one stream: after entry's event idx, or after the
// whole entry (idx -1).
type pos struct {
	entry string
	idx   int
}

func (p pos) String() string {
	if p.idx < 0 {
		return p.entry
	}
	return p.entry + "." + strconv.Itoa(p.idx)
}

// parsePos reads "0", "<ms>-<seq>" or "<ms>-<seq>.<i>".
func parsePos(s string) (pos, bool) {
	entry, rest, hasIdx := strings.Cut(s, ".")
	if entry == "0" && !hasIdx {
		return pos{entry: "0", idx: -1}, true
	}
	ms, seq, ok := strings.Cut(entry, "-")
	if !ok {
		return pos{}, false
	}
	if _, err := strconv.ParseUint(ms, 10, 64); err != nil {
		return pos{}, false
	}
	if _, err := strconv.ParseUint(seq, 10, 64); err != nil {
		return pos{}, false
	}
	if !hasIdx {
		return pos{entry: entry, idx: -1}, true
	}
	if rest == "" || strings.TrimLeft(rest, "0123456789") != "" {
		return pos{}, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return pos{}, false
	}
	return pos{entry: entry, idx: n}, true
}

// clip shortens outside input quoted in an error.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// parse reads a cursor of r's streams, strictly: one position per stream.
func (r *Reader) parse(cursor string) ([]pos, error) {
	n := len(r.streams)
	ps := make([]pos, n)
	if cursor == "0" {
		for i := range ps {
			ps[i] = pos{entry: "0", idx: -1}
		}
		return ps, nil
	}
	if got := strings.Count(cursor, Sep) + 1; got != n {
		return nil, fmt.Errorf("event: cursor %q has %d positions, want %d (one per event stream, joined with %q)", clip(cursor), got, n, Sep)
	}
	for i, part := range strings.Split(cursor, Sep) {
		p, ok := parsePos(part)
		if !ok {
			if n == 1 {
				return nil, fmt.Errorf("event: bad event id %q", clip(cursor))
			}
			return nil, fmt.Errorf("event: cursor %q: position %d, %q, is not \"0\", an entry id or an event id", clip(cursor), i, clip(part))
		}
		ps[i] = p
	}
	return ps, nil
}

func join(ps []pos) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString(Sep)
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Positions checks cursor and returns its position in each stream, in
// stream order ("0" gives "0" in every stream). Its error names the
// cursor.
func (r *Reader) Positions(cursor string) ([]string, error) {
	ps, err := r.parse(cursor)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out, nil
}

// Join makes the cursor of positions, one per stream in stream order
// (what Positions returns).
func (r *Reader) Join(positions []string) (string, error) {
	if len(positions) != len(r.streams) {
		return "", fmt.Errorf("event: %d positions for %d event streams", len(positions), len(r.streams))
	}
	ps := make([]pos, len(positions))
	for i, s := range positions {
		p, ok := parsePos(s)
		if !ok {
			return "", fmt.Errorf("event: position %d, %q, is not \"0\", an entry id or an event id", i, clip(s))
		}
		ps[i] = p
	}
	return join(ps), nil
}

// At is the cursor after stream entry id entry ("<ms>-<seq>") in every
// stream: the events written after that time, by the writers' clocks.
func (r *Reader) At(entry string) string {
	return strings.Repeat(entry+Sep, len(r.streams)-1) + entry
}

// Beyond returns a test of whether an event read by r lies after cursor
// in its own stream (cursor's positions in the other streams do not
// matter): whether it came after a Latest taken earlier, say. An event
// not read by r does not pass.
func (r *Reader) Beyond(cursor string) (func(Event) bool, error) {
	ps, err := r.parse(cursor)
	if err != nil {
		return nil, err
	}
	n := len(r.streams)
	return func(e Event) bool {
		own := e.ID
		if n > 1 {
			parts := strings.Split(e.ID, Sep)
			if len(parts) != n || e.stream < 0 || e.stream >= n {
				return false
			}
			own = parts[e.stream]
		}
		p, ok := parsePos(own)
		if !ok {
			return false
		}
		m := ps[e.stream]
		if c := compareEntries(p.entry, m.entry); c != 0 {
			return c > 0
		}
		return m.idx >= 0 && p.idx > m.idx
	}, nil
}

// entryTime splits a stream id "<ms>-<seq>" ("0" and bad ids: 0, 0).
func entryTime(id string) (ms, seq uint64) {
	a, b, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(a, 10, 64)
	seq, _ = strconv.ParseUint(b, 10, 64)
	return ms, seq
}

func compareEntries(x, y string) int {
	xm, xs := entryTime(x)
	ym, ys := entryTime(y)
	switch {
	case xm != ym:
		if xm < ym {
			return -1
		}
		return 1
	case xs != ys:
		if xs < ys {
			return -1
		}
		return 1
	}
	return 0
}

// Latest returns the cursor at the newest entry of every stream ("0" for
// an empty one): reading after it yields only events still to come.
func (r *Reader) Latest(ctx context.Context) (string, error) {
	if len(r.streams) == 1 {
		xs, err := r.rdb.XRevRangeN(ctx, r.streams[0], "+", "-", 1).Result()
		if err != nil {
			return "", fmt.Errorf("event: latest: %w", err)
		}
		if len(xs) == 0 {
			return "0", nil
		}
		return xs[0].ID, nil
	}
	// one command per stream: they are in different slots on a cluster
	pipe := r.rdb.Pipeline()
	cmds := make([]*redis.XMessageSliceCmd, len(r.streams))
	for i, s := range r.streams {
		cmds[i] = pipe.XRevRangeN(ctx, s, "+", "-", 1)
	}
	_, _ = pipe.Exec(ctx)
	ps := make([]pos, len(r.streams))
	for i, c := range cmds {
		xs, err := c.Result()
		if err != nil {
			return "", fmt.Errorf("event: latest of %s: %w", r.streams[i], err)
		}
		ps[i] = pos{entry: "0", idx: -1}
		if len(xs) > 0 {
			ps[i].entry = xs[0].ID
		}
	}
	return join(ps), nil
}

// Read returns the events after the cursor after ("0" = from the oldest
// kept), waiting up to block when there are none (0 = do not wait), and
// the cursor to pass next time. count bounds the entries read per stream
// per call. A malformed cursor is an error naming it; a failed read
// returns after as the cursor.
//
// Waiting: one stream, or several on a single server, are waited on with
// one XREAD BLOCK naming them all, which answers within a round trip of
// an entry's write. Several streams on a Redis Cluster are in different
// slots, which no one XREAD may name together; they are then looked at
// again every pollEvery (50 ms; one pipelined non-blocking XREAD per
// stream, split by node), until an entry comes, block ends or ctx ends
// (then its error). Not one
// goroutine per stream blocked in XREAD BLOCK: go-redis does not abort a
// blocked command when its context is cancelled (nor a deadline it set
// already), and CLIENT UNBLOCK is a @dangerous command the taskflow ACL
// user lacks (acl.ProcessRules), so once one stream answered, Read could
// not return before every other stream's XREAD had run out its block.
// Subscribe, whose goroutines outlive one read, does block per stream.
func (r *Reader) Read(ctx context.Context, after string, count int64, block time.Duration) ([]Event, string, error) {
	if len(r.streams) == 1 {
		return r.readOne(ctx, after, count, block)
	}
	ps, err := r.parse(after)
	if err != nil {
		return nil, after, err
	}
	base := slices.Clone(ps) // the events' ids start from here
	got := make([][]Event, len(r.streams))

	// finish the entries the cursor stopped inside
	pipe := r.rdb.Pipeline()
	ranges := make([]*redis.XMessageSliceCmd, len(ps))
	for i, p := range ps {
		if p.idx >= 0 {
			ranges[i] = pipe.XRange(ctx, r.streams[i], p.entry, p.entry)
		}
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx)
		n := 0
		for i, c := range ranges {
			if c == nil {
				continue
			}
			xs, err := c.Result()
			if err != nil {
				return nil, after, fmt.Errorf("event: read %s: %w", r.streams[i], err)
			}
			for _, x := range xs {
				for _, e := range decodeMsg(x) {
					if _, j, _ := splitID(e.ID); j > ps[i].idx {
						e.stream = i
						got[i] = append(got[i], e)
						n++
					}
				}
			}
			ps[i].idx = -1
		}
		if n > 0 {
			return merge(base, got), join(ps), nil
		}
	}

	msgs, err := r.readEntries(ctx, ps, count, block)
	if err == nil && msgs == nil && block > 0 && len(r.groups) > 1 {
		msgs, err = r.poll(ctx, ps, count, block)
	}
	if err != nil {
		return nil, after, err
	}
	base = slices.Clone(ps)
	for i, xs := range msgs {
		for _, x := range xs {
			for _, e := range decodeMsg(x) {
				e.stream = i
				got[i] = append(got[i], e)
			}
			ps[i] = pos{entry: x.ID, idx: -1}
		}
	}
	return merge(base, got), join(ps), nil
}

// readEntries reads the entries after ps, per stream (nil: none): one
// XREAD per group, pipelined; it blocks only when one XREAD names them
// all.
func (r *Reader) readEntries(ctx context.Context, ps []pos, count int64, block time.Duration) ([][]redis.XMessage, error) {
	args := func(g []int) *redis.XReadArgs {
		a := &redis.XReadArgs{Streams: make([]string, 0, 2*len(g)), Count: count, Block: -1}
		for _, i := range g {
			a.Streams = append(a.Streams, r.streams[i])
		}
		for _, i := range g {
			a.Streams = append(a.Streams, ps[i].entry)
		}
		return a
	}
	var cmds []*redis.XStreamSliceCmd
	if len(r.groups) == 1 {
		a := args(r.groups[0])
		if block > 0 {
			a.Block = block
		}
		cmds = append(cmds, r.rdb.XRead(ctx, a))
	} else {
		pipe := r.rdb.Pipeline()
		for _, g := range r.groups {
			cmds = append(cmds, pipe.XRead(ctx, args(g)))
		}
		_, _ = pipe.Exec(ctx)
	}
	var out [][]redis.XMessage
	for gi, c := range cmds {
		res, err := c.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if len(r.groups) > 1 {
				return nil, fmt.Errorf("event: read %s: %w", r.streams[r.groups[gi][0]], err)
			}
			return nil, fmt.Errorf("event: read: %w", err)
		}
		for _, s := range res {
			i := slices.Index(r.streams, s.Stream)
			if i < 0 || len(s.Messages) == 0 {
				continue
			}
			if out == nil {
				out = make([][]redis.XMessage, len(r.streams))
			}
			out[i] = append(out[i], s.Messages...)
		}
	}
	return out, nil
}

// poll reads the streams every pollEvery until an entry comes, block has
// passed (nil, nil) or ctx ends (its error).
func (r *Reader) poll(ctx context.Context, ps []pos, count int64, block time.Duration) ([][]redis.XMessage, error) {
	deadline := time.Now().Add(block)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := min(pollEvery, time.Until(deadline))
		if wait <= 0 {
			return nil, nil
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		msgs, err := r.readEntries(ctx, ps, count, 0)
		if err != nil || msgs != nil {
			return msgs, err
		}
	}
}

// merge orders the events read from each stream by their entries' times
// (each stream's keep their order) and gives each the cursor right after
// it, starting from the positions base.
func merge(base []pos, got [][]Event) []Event {
	type item struct {
		e       Event
		own     pos
		ms, seq uint64
	}
	var items []item
	for _, es := range got {
		for _, e := range es {
			p, _ := parsePos(e.ID) // "<entry>.<i>", as Decode makes it
			ms, seq := entryTime(p.entry)
			items = append(items, item{e: e, own: p, ms: ms, seq: seq})
		}
	}
	if len(items) == 0 {
		return nil
	}
	sort.SliceStable(items, func(a, b int) bool {
		x, y := items[a], items[b]
		return x.ms < y.ms || (x.ms == y.ms && x.seq < y.seq)
	})
	cur := slices.Clone(base)
	out := make([]Event, len(items))
	for k, it := range items {
		cur[it.e.stream] = it.own
		it.e.ID = join(cur)
		out[k] = it.e
	}
	return out
}

// readOne is Read of a single stream, whose cursor is the position itself.
func (r *Reader) readOne(ctx context.Context, after string, count int64, block time.Duration) ([]Event, string, error) {
	stream := r.streams[0]
	entry, idx, err := splitID(after)
	if err != nil {
		return nil, after, err
	}
	var out []Event
	next := after
	if idx >= 0 {
		// finish the entry the caller stopped inside
		xs, err := r.rdb.XRange(ctx, stream, entry, entry).Result()
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
	args := &redis.XReadArgs{Streams: []string{stream, entry}, Count: count, Block: -1}
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

// Subscribe calls fn for every event after the cursor after ("" = only
// events still to come) until ctx ends or fn returns an error. It returns
// ctx.Err() or fn's error. Stopping takes up to a second (a blocked XREAD
// runs out its block: go-redis does not abort it).
//
// One stream, or several on a single server, it follows with one XREAD
// BLOCK of a second at a time. Several on a Redis Cluster (different
// slots) it follows with one goroutine per stream, each in XREAD BLOCK on
// its own stream for as long as Subscribe runs, so an event is delivered
// within a round trip of its write and an idle subscription does not poll;
// it holds one pool connection per stream, on that stream's node (with a
// partition per master, one per node: as many as one stream on one node).
// The goroutines end before Subscribe returns.
func (r *Reader) Subscribe(ctx context.Context, after string, fn func(Event) error) error {
	if after == "" {
		var err error
		if after, err = r.Latest(ctx); err != nil {
			return err
		}
	}
	if len(r.groups) > 1 {
		return r.subscribeEach(ctx, after, fn)
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

// subscribeEach is Subscribe over streams that no one XREAD may name
// together: a goroutine per group reads its streams with XREAD BLOCK and
// hands each stream's entries over as they come; the events are given
// their cursors here, in the order fn sees them.
func (r *Reader) subscribeEach(ctx context.Context, after string, fn func(Event) error) error {
	// the rest of the entries the cursor stopped inside, and what is
	// there already
	evs, next, err := r.Read(ctx, after, 100, 0)
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
	start, err := r.parse(next)
	if err != nil {
		return err
	}
	type batch struct {
		stream int
		msgs   []redis.XMessage
		err    error
	}
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan batch)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, g := range r.groups {
		own := make(map[int]pos, len(g)) // where this goroutine has read to
		for _, i := range g {
			own[i] = start[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				args := &redis.XReadArgs{Count: 100, Block: time.Second}
				for _, i := range g {
					args.Streams = append(args.Streams, r.streams[i])
				}
				for _, i := range g {
					args.Streams = append(args.Streams, own[i].entry)
				}
				res, err := r.rdb.XRead(ctx, args).Result()
				if errors.Is(err, redis.Nil) {
					continue
				}
				if err != nil {
					select {
					case ch <- batch{stream: g[0], err: err}:
					case <-ctx.Done():
					}
					return
				}
				for _, s := range res {
					i := slices.Index(r.streams, s.Stream)
					if i < 0 || len(s.Messages) == 0 {
						continue
					}
					select {
					case ch <- batch{stream: i, msgs: s.Messages}:
					case <-ctx.Done():
						return
					}
					own[i] = pos{entry: s.Messages[len(s.Messages)-1].ID, idx: -1}
				}
			}
		}()
	}
	cur := slices.Clone(start) // where fn has been given events to
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case b := <-ch:
			if b.err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("event: read %s: %w", r.streams[b.stream], b.err)
			}
			for _, x := range b.msgs {
				for _, e := range decodeMsg(x) {
					p, _ := parsePos(e.ID)
					cur[b.stream] = p
					e.ID, e.stream = join(cur), b.stream
					if err := fn(e); err != nil {
						return err
					}
				}
				cur[b.stream] = pos{entry: x.ID, idx: -1}
			}
		}
	}
}
