package protocol

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// runLoop runs l until the returned stop, which returns Run's error.
func runLoop(l *Loop, handle func(context.Context, []Message) error) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, handle) }()
	return func() error { cancel(); return <-done }
}

// TestLoopReadsClaimsAndAcks: new entries of every stream reach the
// handler; entries a dead consumer held past ClaimIdle are claimed (in
// several turns when they fill more than a batch); each read asks for at
// most Room entries.
func TestLoopReadsClaimsAndAcks(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctx := context.Background()
	k := NewKeys(keyspace.MustParse(ns))
	p := NewPublisher(rdb, 0, nil)
	streams := []string{k.Completed(), k.Failed()}
	for _, s := range streams {
		require.NoError(t, EnsureGroup(ctx, rdb, s, "g", "0"))
	}
	// a consumer that read 5 entries of each stream and died
	dead := append(publishN(t, p, k.Completed(), 5), publishN(t, p, k.Failed(), 5)...)
	got, err := ReadGroup(ctx, rdb, "g", "dead", streams, 100, 0)
	require.NoError(t, err)
	require.Len(t, got, 10)

	var mu sync.Mutex
	seen := map[string]bool{}
	var largest int
	var rooms atomic.Int64
	l := &Loop{Client: rdb, Group: "g", Consumer: "live", Streams: streams, Count: 10,
		Block: 20 * time.Millisecond, ClaimIdle: 100 * time.Millisecond,
		Room: func(context.Context) int64 { rooms.Add(1); return 2 }}
	// the handler runs on the loop's goroutine: it records failures for
	// the test to check (a require there would end that goroutine, and
	// stop would wait for it forever), and acks with a context stop does
	// not cancel (the loop's is cancelled while a batch may be in hand)
	var handlerErrs []error
	stop := runLoop(l, func(ctx context.Context, ms []Message) error {
		mu.Lock()
		defer mu.Unlock()
		perStream := map[string]int{}
		for _, m := range ms {
			if m.Err != nil {
				handlerErrs = append(handlerErrs, m.Err)
				continue
			}
			seen[m.ID] = true
			perStream[m.Stream]++
			if err := Ack(context.WithoutCancel(ctx), rdb, m.Stream, "g", m.ID); err != nil {
				handlerErrs = append(handlerErrs, err)
			}
		}
		for _, n := range perStream {
			largest = max(largest, n)
		}
		return nil
	})
	fresh := append(publishN(t, p, k.Completed(), 3), publishN(t, p, k.Failed(), 3)...)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range append(append([]string{}, dead...), fresh...) {
			if !seen[id] {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, stop())
	require.Empty(t, handlerErrs)
	require.LessOrEqual(t, largest, 2, "no read or claim takes more than Room entries of a stream")
	require.Positive(t, rooms.Load())
	for _, s := range streams {
		_, pending, err := Lag(ctx, rdb, s, "g")
		require.NoError(t, err)
		require.Zero(t, pending)
	}
}

// TestLoopHandlerErrorEndsRun: a handler's error is Run's; the batch stays
// pending for a later claim.
func TestLoopHandlerErrorEndsRun(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctx := context.Background()
	k := NewKeys(keyspace.MustParse(ns))
	require.NoError(t, EnsureGroup(ctx, rdb, k.Timeout(), "g", "0"))
	publishN(t, NewPublisher(rdb, 0, nil), k.Timeout(), 2)
	boom := errors.New("boom")
	l := &Loop{Client: rdb, Group: "g", Consumer: "c", Streams: []string{k.Timeout()}, Block: 20 * time.Millisecond}
	err := l.Run(ctx, func(context.Context, []Message) error { return boom })
	require.ErrorIs(t, err, boom)
	_, pending, err := Lag(ctx, rdb, k.Timeout(), "g")
	require.NoError(t, err)
	require.EqualValues(t, 2, pending)
}

// countingHandler counts the log records whose message is msg.
type countingHandler struct {
	slog.Handler
	msg string
	n   *atomic.Int64
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}

// TestLoopBacksOffWhileRedisFails: reads that fail (here: the group is
// missing, NOGROUP) are retried after a pause that grows (Backoff), not
// in a tight loop, and Run ends cleanly with ctx.
func TestLoopBacksOffWhileRedisFails(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	k := NewKeys(keyspace.MustParse(ns))
	var fails atomic.Int64
	logger := slog.New(countingHandler{Handler: slog.DiscardHandler, msg: "read failed; retrying", n: &fails})
	l := &Loop{Client: rdb, Group: "no-such-group", Consumer: "c", Streams: []string{k.Progress()}, Logger: logger,
		Backoff: retry.Backoff{Initial: 40 * time.Millisecond, Max: 160 * time.Millisecond, Jitter: new(0.0)}}
	stop := runLoop(l, func(context.Context, []Message) error {
		t.Error("no batch can be read")
		return nil
	})
	time.Sleep(600 * time.Millisecond)
	require.NoError(t, stop())
	// pauses of 40, 80, 160, 160 … ms: about 5 failures in 600 ms, never
	// hundreds
	require.GreaterOrEqual(t, fails.Load(), int64(3))
	require.LessOrEqual(t, fails.Load(), int64(8))
}
