package eventlog

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// streamsOf names n streams of namespace ns the way the store names the
// partitions' (each under a hash tag of its own: different slots on a
// cluster).
func streamsOf(ns string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("{%s:p%d}:events", ns, i)
	}
	return out
}

// rig writes entries to a Reader's streams and remembers, per stream, the
// task ids in the order written.
type rig struct {
	t       *testing.T
	rdb     redis.UniversalClient
	r       *Reader
	written [][]string
	seq     int
}

// modes are the two ways a Reader of several streams reads: one XREAD over
// all of them (a single server), and one per stream with polling while it
// waits (a cluster). The second is forced here so that both run on the
// shared test server; TestSeveralStreamsOnACluster runs it for real.
var modes = []struct {
	name      string
	perStream bool
}{{"one XREAD", false}, {"per stream", true}}

func newRig(t *testing.T, rdb redis.UniversalClient, ns string, n int, perStream bool) *rig {
	r := NewReader(rdb, streamsOf(ns, n)...)
	if perStream {
		r.groups = nil
		for i := range n {
			r.groups = append(r.groups, []int{i})
		}
	}
	return &rig{t: t, rdb: rdb, r: r, written: make([][]string, n)}
}

// add appends one entry of k events (task ids "<stream>:<seq>") to stream
// s, with a malformed record among them when bad.
func (g *rig) add(s, k int, bad bool) {
	g.t.Helper()
	var recs []string
	for range k {
		g.seq++
		id := strconv.Itoa(s) + ":" + strconv.Itoa(g.seq)
		recs = append(recs, strings.Join([]string{id, "", "PENDING", strconv.FormatInt(time.Now().UnixMilli(), 10), "noop", ""}, "\x1f"))
		g.written[s] = append(g.written[s], id)
		if bad {
			recs = append(recs, "broken")
		}
	}
	require.NoError(g.t, g.rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: g.r.streams[s], Values: []any{Field, strings.Join(recs, "\x1e")}}).Err())
}

// fill writes entries of 1 to 3 events to every stream in turn.
func (g *rig) fill(entries int) {
	for i := range entries {
		g.add(i%len(g.written), 1+i%3, i%5 == 4)
	}
}

// drain reads from after until a read returns nothing, count entries per
// stream at a time.
func (g *rig) drain(after string, count int64) ([]Event, string) {
	g.t.Helper()
	var all []Event
	for {
		evs, next, err := g.r.Read(context.Background(), after, count, 0)
		require.NoError(g.t, err)
		if len(evs) == 0 {
			if next == after {
				return all, next
			}
		}
		for _, e := range evs {
			_, err := g.r.Positions(e.ID)
			require.NoError(g.t, err, "an event's id is a cursor")
		}
		all = append(all, evs...)
		after = next
	}
}

// byStream splits events by the stream each came from (its task id's
// prefix), keeping their order.
func byStream(n int, evs []Event) [][]string {
	out := make([][]string, n)
	for _, e := range evs {
		s, _ := strconv.Atoi(strings.SplitN(e.TaskID, ":", 2)[0])
		out[s] = append(out[s], e.TaskID)
	}
	return out
}

func nonNil(xs [][]string) [][]string {
	out := make([][]string, len(xs))
	for i, x := range xs {
		out[i] = append([]string{}, x...)
	}
	return out
}

// TestSeveralStreamsResume: events written to three streams are all read,
// each stream's in order; reading again from any event's id yields
// exactly the events after it; Latest then Read yields only what came
// after.
func TestSeveralStreamsResume(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			rdb, ns := testredis.Client(t)
			g := newRig(t, rdb, ns, 3, m.perStream)
			ctx := context.Background()

			empty, err := g.r.Latest(ctx)
			require.NoError(t, err)
			require.Equal(t, "0~0~0", empty)
			g.fill(30)
			all, end := g.drain("0", 2) // small reads: cursors inside entries, and across batches
			require.Equal(t, nonNil(g.written), nonNil(byStream(3, all)), "every event once, each stream's in order")
			latest, err := g.r.Latest(ctx)
			require.NoError(t, err)
			require.Equal(t, latest, end, "the cursor after everything is the streams' newest entries")

			for k, e := range all {
				rest, _ := g.drain(e.ID, 3)
				require.Equal(t, nonNil(byStream(3, all[k+1:])), nonNil(byStream(3, rest)), "resuming after event %d (%s)", k, e.ID)
			}

			// Latest, then only the new events
			before := slices.Clone(g.written)
			for i := range before {
				before[i] = slices.Clone(before[i])
			}
			g.fill(7)
			news, _ := g.drain(latest, 100)
			want := make([][]string, 3)
			for i := range want {
				want[i] = g.written[i][len(before[i]):]
			}
			require.Equal(t, nonNil(want), nonNil(byStream(3, news)))
			beyond, err := g.r.Beyond(latest)
			require.NoError(t, err)
			for _, e := range news {
				require.True(t, beyond(e), "%s is beyond %s", e.ID, latest)
			}
			for _, e := range all {
				require.False(t, beyond(e), "%s is not beyond %s", e.ID, latest)
			}
			// beyond an event inside an entry: the events after it in its
			// stream, whatever the other streams' positions
			k := len(all) / 2
			beyond, err = g.r.Beyond(all[k].ID)
			require.NoError(t, err)
			var past []Event
			for _, e := range all {
				if beyond(e) && e.stream == all[k].stream {
					past = append(past, e)
				}
			}
			var want2 []Event
			for _, e := range all[k+1:] {
				if e.stream == all[k].stream {
					want2 = append(want2, e)
				}
			}
			require.Equal(t, want2, past)
			// and from a time: At
			at := g.r.At(strings.Split(latest, Sep)[0])
			_, err = g.r.Positions(at)
			require.NoError(t, err)
		})
	}
}

// TestSeveralStreamsSubscribe: Subscribe delivers the events of every
// stream, each stream's in order, from "" (what comes next) and from a
// cursor; each event's id resumes after it.
func TestSeveralStreamsSubscribe(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			rdb, ns := testredis.Client(t)
			g := newRig(t, rdb, ns, 3, m.perStream)
			g.fill(4) // before the subscription: not delivered
			old := nonNil(g.written)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got := make(chan Event, 1000)
			done := make(chan error, 1)
			subscribed := make(chan struct{})
			go func() {
				after, err := g.r.Latest(ctx)
				close(subscribed)
				if err != nil {
					done <- err
					return
				}
				done <- g.r.Subscribe(ctx, after, func(e Event) error { got <- e; return nil })
			}()
			<-subscribed
			g.fill(20)
			var evs []Event
			total := 0
			for i := range g.written {
				total += len(g.written[i]) - len(old[i])
			}
			for len(evs) < total {
				select {
				case e := <-got:
					evs = append(evs, e)
				case <-ctx.Done():
					t.Fatalf("got %d of %d events", len(evs), total)
				}
			}
			want := make([][]string, 3)
			for i := range want {
				want[i] = g.written[i][len(old[i]):]
			}
			require.Equal(t, nonNil(want), nonNil(byStream(3, evs)))
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
			// Subscribe from an event in the middle resumes after it
			ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel2()
			k := len(evs) / 2
			var rest []Event
			err := g.r.Subscribe(ctx2, evs[k].ID, func(e Event) error {
				rest = append(rest, e)
				if len(rest) == len(evs)-k-1 {
					return errEnough
				}
				return nil
			})
			require.ErrorIs(t, err, errEnough)
			require.Equal(t, nonNil(byStream(3, evs[k+1:])), nonNil(byStream(3, rest)))
		})
	}
}

var errEnough = fmt.Errorf("enough")

// TestSeveralStreamsBlockedRead: a Read waiting on three streams returns
// soon after an entry comes to any one of them, not when its block ends;
// a Read that gets nothing returns after its block; a cancelled one
// returns at once.
func TestSeveralStreamsBlockedRead(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			rdb, ns := testredis.Client(t)
			g := newRig(t, rdb, ns, 3, m.perStream)
			ctx := context.Background()
			for s := range 3 {
				after, err := g.r.Latest(ctx)
				require.NoError(t, err)
				type res struct {
					evs  []Event
					took time.Duration
					err  error
				}
				out := make(chan res, 1)
				var wrote time.Time
				started := make(chan struct{})
				go func() {
					close(started)
					evs, _, err := g.r.Read(ctx, after, 10, 10*time.Second)
					out <- res{evs, time.Since(wrote), err}
				}()
				<-started
				time.Sleep(150 * time.Millisecond) // the Read is waiting
				wrote = time.Now()
				g.add(s, 2, false)
				r := <-out
				require.NoError(t, r.err)
				require.Len(t, r.evs, 2)
				require.Equal(t, g.written[s][len(g.written[s])-2:], []string{r.evs[0].TaskID, r.evs[1].TaskID})
				require.Less(t, r.took, time.Second, "stream %d: the Read returned %s after the write", s, r.took)
			}
			after, err := g.r.Latest(ctx)
			require.NoError(t, err)
			t0 := time.Now()
			evs, next, err := g.r.Read(ctx, after, 10, 300*time.Millisecond)
			require.NoError(t, err)
			require.Empty(t, evs)
			require.Equal(t, after, next)
			require.GreaterOrEqual(t, time.Since(t0), 250*time.Millisecond)

			if m.perStream { // a single XREAD BLOCK is not cut short by its context (go-redis)
				cctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(100*time.Millisecond, cancel)
				t0 = time.Now()
				_, _, err = g.r.Read(cctx, after, 10, 10*time.Second)
				require.ErrorIs(t, err, context.Canceled)
				require.Less(t, time.Since(t0), time.Second)
			}
		})
	}
}

// TestSeveralStreamsMalformedCursor: a cursor with the wrong number of
// positions, or a position that is no id, is an error that names it.
func TestSeveralStreamsMalformedCursor(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	r := NewReader(rdb, streamsOf(ns, 3)...)
	ctx := context.Background()
	for _, c := range []string{"", "1-0", "1-0~1-0", "1-0~1-0~1-0~1-0", "x~0~0", "1-0.~0~0", "1-0.-1~0~0", "0.1~0~0",
		"1-0.x~0~0", "1~0~0", "~~", "1-0 ~0~0", "99999999999999999999999-0~0~0", "1-0~0~0~"} {
		_, _, err := r.Read(ctx, c, 10, 0)
		require.Error(t, err, "%q", c)
		require.Contains(t, err.Error(), fmt.Sprintf("%q", c), "the error names the cursor")
		_, err = r.Positions(c)
		require.Error(t, err, "%q", c)
		if c != "" { // Subscribe's "": from now
			err = r.Subscribe(ctx, c, func(Event) error { return nil })
			require.Error(t, err, "%q", c)
		}
	}
	for _, c := range []string{"0", "0~0~0", "1-0~2-3.4~0", "1700000000000-0.12~1700000000000-1~1700000000001-0"} {
		_, _, err := r.Read(ctx, c, 10, 0)
		require.NoError(t, err, "%q", c)
	}
}

// TestOneStreamCursors: a Reader of one stream keeps the cursors of before
// partitions: event ids "<entry>.<i>", a bare entry after the whole entry,
// "0" from the oldest, and the helpers take them as they are.
func TestOneStreamCursors(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	g := newRig(t, rdb, ns, 1, false)
	ctx := context.Background()
	g.add(0, 3, false)
	g.add(0, 2, false)
	xs, err := rdb.XRange(ctx, g.r.streams[0], "-", "+").Result()
	require.NoError(t, err)
	evs, next, err := g.r.Read(ctx, "0", 10, 0)
	require.NoError(t, err)
	require.Len(t, evs, 5)
	require.Equal(t, xs[0].ID+".0", evs[0].ID)
	require.Equal(t, xs[1].ID+".1", evs[4].ID)
	require.Equal(t, xs[1].ID, next)
	latest, err := g.r.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, xs[1].ID, latest)
	rest, next, err := g.r.Read(ctx, evs[1].ID, 10, 0)
	require.NoError(t, err)
	require.Equal(t, []string{evs[2].ID}, []string{rest[0].ID})
	require.Equal(t, evs[2].ID, next, "inside an entry, as before")
	require.Equal(t, "5-0", g.r.At("5-0"))
	ps, err := g.r.Positions(evs[1].ID)
	require.NoError(t, err)
	require.Equal(t, []string{evs[1].ID}, ps)
	c, err := g.r.Join(ps)
	require.NoError(t, err)
	require.Equal(t, evs[1].ID, c)
	beyond, err := g.r.Beyond(evs[1].ID)
	require.NoError(t, err)
	require.True(t, beyond(evs[2]))
	require.False(t, beyond(evs[1]))
	beyond, err = g.r.Beyond(xs[0].ID)
	require.NoError(t, err)
	require.False(t, beyond(evs[2]))
	require.True(t, beyond(evs[3]))
}

// TestSeveralStreamsOnACluster: on a Redis Cluster the streams are in
// different slots; the Reader never names two in one command (CROSSSLOT)
// and still reads, resumes and wakes on each.
func TestSeveralStreamsOnACluster(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	rdb := cl.Client()
	ns := testredis.Namespace(t)
	g := newRig(t, rdb, ns, 3, false)
	require.Len(t, g.r.groups, 3, "one XREAD per stream on a cluster")
	ctx := context.Background()
	slots := map[int64]bool{}
	for _, s := range g.r.streams {
		slot, err := rdb.ClusterKeySlot(ctx, s).Result()
		require.NoError(t, err)
		slots[slot] = true
	}
	require.Len(t, slots, 3, "the test's premise: three slots")

	start, err := g.r.Latest(ctx)
	require.NoError(t, err)
	g.fill(12)
	all, _ := g.drain(start, 2)
	require.Equal(t, nonNil(g.written), nonNil(byStream(3, all)))
	k := len(all) / 3
	rest, _ := g.drain(all[k].ID, 2)
	require.Equal(t, nonNil(byStream(3, all[k+1:])), nonNil(byStream(3, rest)))

	after, err := g.r.Latest(ctx)
	require.NoError(t, err)
	for s := range 3 {
		done := make(chan []Event, 1)
		go func() {
			evs, _, err := g.r.Read(ctx, after, 10, 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			done <- evs
		}()
		time.Sleep(100 * time.Millisecond)
		wrote := time.Now()
		g.add(s, 1, false)
		evs := <-done
		require.Less(t, time.Since(wrote), time.Second)
		require.Len(t, evs, 1)
		after = evs[0].ID
	}

	// Subscribe: one XREAD BLOCK per stream, each on its own node
	sctx, cancel := context.WithCancel(ctx)
	got := make(chan Event, 100)
	done := make(chan error, 1)
	go func() { done <- g.r.Subscribe(sctx, start, func(e Event) error { got <- e; return nil }) }()
	var evs []Event
	for range len(all) + 3 {
		select {
		case e := <-got:
			evs = append(evs, e)
		case <-time.After(5 * time.Second):
			t.Fatalf("got %d events", len(evs))
		}
	}
	require.Equal(t, nonNil(g.written), nonNil(byStream(3, evs)))
	for s := range 3 {
		wrote := time.Now()
		g.add(s, 1, false)
		select {
		case e := <-got:
			require.Less(t, time.Since(wrote), 300*time.Millisecond, "stream %d", s)
			require.Equal(t, g.written[s][len(g.written[s])-1], e.TaskID)
		case <-time.After(5 * time.Second):
			t.Fatalf("stream %d: no event", s)
		}
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

// FuzzCursor: cursors come from clients (SSE Last-Event-ID). Whatever is
// accepted holds only digits and "-", ".", Sep, has one position per
// stream, and reads back the same; nothing panics.
func FuzzCursor(f *testing.F) {
	for _, s := range []string{"0", "0~0~0", "1-0~2-3.4~0", "1-0", "1-0.3", "~", "~~", "1-0~~0", "1-0.~0~0", ".5~0~0",
		"1-0.-1~0~0", "1-0.99999999999999999999~0~0", "", "0.0~0~0", "18446744073709551615-18446744073709551615.7~0~0"} {
		f.Add(s)
	}
	readers := []*Reader{NewReader(nil, "a"), NewReader(nil, "a", "b", "c")}
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range readers {
			ps, err := r.Positions(s)
			if beyond, err := r.Beyond(s); err == nil && beyond(Event{ID: s, stream: len(r.streams) - 1}) {
				t.Fatalf("%q is beyond itself", s)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "event:") {
					t.Fatalf("error without context: %v", err)
				}
				continue
			}
			if len(ps) != len(r.streams) {
				t.Fatalf("%q: %d positions for %d streams", s, len(ps), len(r.streams))
			}
			if strings.Trim(s, "0123456789-.~") != "" {
				t.Fatalf("accepted %q", s)
			}
			c, err := r.Join(ps)
			if err != nil {
				t.Fatalf("%q: join %v: %v", s, ps, err)
			}
			again, err := r.Positions(c)
			if err != nil || !slices.Equal(again, ps) {
				t.Fatalf("%q: %q reads back as %v, %v", s, c, again, err)
			}
		}
	})
}

// TestBeyondOneStream: an event lies beyond an entry id when its entry is
// later; beyond an event id when it is later in the same entry, or in a
// later entry (the cases the API's metrics took from their start mark).
func TestBeyondOneStream(t *testing.T) {
	r := NewReader(nil, "s")
	for _, c := range []struct {
		ev, mark string
		want     bool
	}{
		{"100-0.0", "99-5", true},
		{"100-0.3", "100-0", false},
		{"100-1.0", "100-0", true},
		{"99-9.0", "100-0", false},
		{"1700000000001-0.2", "1700000000000-7", true},
		{"100-0.3", "100-0.2", true},
		{"100-0.2", "100-0.2", false},
		{"100-0.1", "100-0.2", false},
		{"1-0.0", "0", true},
	} {
		beyond, err := r.Beyond(c.mark)
		require.NoError(t, err)
		require.Equal(t, c.want, beyond(Event{ID: c.ev}), "%s beyond %s", c.ev, c.mark)
	}
}

// TestSeveralStreamsSubscribeIdle: an idle Subscribe over three streams
// blocks in Redis rather than polling it (about one XREAD per stream per
// second, whichever way it reads), and delivers an event within a round
// trip or so of its write. Measured on a Redis of the test's own.
func TestSeveralStreamsSubscribeIdle(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			srv := testredis.StartServer(t)
			rdb := srv.Client()
			g := newRig(t, rdb, "idle", 3, m.perStream)
			ctx, cancel := context.WithCancel(context.Background())
			got := make(chan time.Time, 10)
			done := make(chan error, 1)
			go func() { done <- g.r.Subscribe(ctx, "0", func(Event) error { got <- time.Now(); return nil }) }()
			processed := func() int64 {
				info, err := rdb.Info(context.Background(), "stats").Result()
				require.NoError(t, err)
				for _, line := range strings.Split(info, "\r\n") {
					if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
						n, err := strconv.ParseInt(v, 10, 64)
						require.NoError(t, err)
						return n
					}
				}
				t.Fatal("no total_commands_processed")
				return 0
			}
			time.Sleep(200 * time.Millisecond) // settled
			before := processed()
			time.Sleep(2 * time.Second)
			n := processed() - before
			t.Logf("%d commands in 2 s", n)
			require.LessOrEqual(t, n, int64(3*3+2), "an idle subscription must not poll Redis (%d commands in 2 s)", n)
			for s := range 3 {
				wrote := time.Now()
				g.add(s, 1, false)
				select {
				case at := <-got:
					require.Less(t, at.Sub(wrote), 300*time.Millisecond, "stream %d", s)
				case <-time.After(5 * time.Second):
					t.Fatalf("stream %d: no event", s)
				}
			}
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
		})
	}
}
