package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// sseEvent is one Server-Sent Event as a client reads it.
type sseEvent struct {
	id, name, data string
	comment        bool
}

// readSSE parses events from the stream onto a channel until it ends.
func readSSE(body *bufio.Reader, out chan<- sseEvent) {
	defer close(out)
	var ev sseEvent
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev.name != "" || ev.comment {
				out <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ev.comment = true
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
}

func openStream(t *testing.T, b *testBundle, ctx context.Context, lastID string) <-chan sseEvent {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", b.srv.URL+"/api/v1/queues/status/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	ch := make(chan sseEvent, 100)
	go readSSE(bufio.NewReader(res.Body), ch)
	return ch
}

func next(t *testing.T, ch <-chan sseEvent, skipComments bool) sseEvent {
	t.Helper()
	for {
		select {
		case ev, ok := <-ch:
			require.True(t, ok, "stream ended")
			if ev.comment && skipComments {
				continue
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
		}
	}
}

func TestStatusStream(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{heartbeat: 50 * time.Millisecond})
	tok := b.session().Token
	b.submit(tok, "Before the stream. Counted in the snapshot.")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := openStream(t, b, ctx, "")

	snap := next(t, ch, true)
	require.Equal(t, "snapshot", snap.name)
	var qs map[string]any
	require.NoError(t, json.Unmarshal([]byte(snap.data), &qs))
	require.EqualValues(t, 1, qs["queues"].(map[string]any)["primary"])

	// Idle: only heartbeats arrive.
	hb := next(t, ch, false)
	require.True(t, hb.comment, "expected a heartbeat, got %+v", hb)

	id := b.submit(tok, "During the stream. Seen as an event.")
	ev := next(t, ch, true)
	require.Equal(t, "task", ev.name)
	require.NotEmpty(t, ev.id)
	var te map[string]any
	require.NoError(t, json.Unmarshal([]byte(ev.data), &te))
	require.Equal(t, id, te["task_id"])
	require.Equal(t, "PENDING", te["to"])
	require.Equal(t, "summarize", te["task_type"])

	q := next(t, ch, true)
	require.Equal(t, "queues", q.name)
	require.NoError(t, json.Unmarshal([]byte(q.data), &qs))
	require.EqualValues(t, 2, qs["queues"].(map[string]any)["primary"])
	require.EqualValues(t, 2, qs["states"].(map[string]any)["PENDING"])

	// The worker takes it: ACTIVE arrives too.
	ts := b.activate(1)
	require.Len(t, ts, 1)
	ev = next(t, ch, true)
	require.Equal(t, "task", ev.name)
	require.NoError(t, json.Unmarshal([]byte(ev.data), &te))
	require.Equal(t, "ACTIVE", te["to"])
	require.Equal(t, "PENDING", te["from"])

	// Resume after the first task event: the ACTIVE one is replayed.
	cancel()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	firstID := ""
	{
		ch2 := openStream(t, b, ctx2, "0")
		require.Equal(t, "snapshot", next(t, ch2, true).name)
		var seen []string
		for len(seen) < 3 {
			e := next(t, ch2, true)
			if e.name != "task" {
				continue
			}
			if firstID == "" {
				firstID = e.id
			}
			require.NoError(t, json.Unmarshal([]byte(e.data), &te))
			seen = append(seen, te["to"].(string))
		}
		require.Equal(t, []string{"PENDING", "PENDING", "ACTIVE"}, seen, "from the start of the stream")
		cancel2()
	}
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	ch3 := openStream(t, b, ctx3, firstID)
	require.Equal(t, "snapshot", next(t, ch3, true).name)
	e := next(t, ch3, true)
	require.Equal(t, "task", e.name)
	require.NoError(t, json.Unmarshal([]byte(e.data), &te))
	require.Equal(t, id, te["task_id"], "resumed after the first event")
}

// TestStatusStreamIdleCostsNoPolling: an idle stream blocks in Redis
// (XREAD BLOCK) instead of polling. Measured on a Redis of the test's own:
// while 20 heartbeats go by, Redis sees only a handful of commands.
func TestStatusStreamIdleCostsNoPolling(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	b := setup(t, setupOpts{server: srv, heartbeat: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := openStream(t, b, ctx, "")
	require.Equal(t, "snapshot", next(t, ch, true).name)
	require.True(t, next(t, ch, false).comment) // the stream is settled

	admin := srv.Client()
	processed := func() int64 {
		info, err := admin.Info(context.Background(), "stats").Result()
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
	before := processed()
	for range 20 { // ≈ 1 s of heartbeats
		require.True(t, next(t, ch, false).comment)
	}
	// One blocking XREAD per second, plus the INFO calls themselves.
	require.LessOrEqual(t, processed()-before, int64(6), "an idle stream must not poll Redis")
}

// TestCloseStreamsEndsStreams: at shutdown every stream gets event:
// shutdown and ends, so the HTTP server's graceful shutdown can finish.
func TestCloseStreamsEndsStreams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := openStream(t, b, ctx, "")
	require.Equal(t, "snapshot", next(t, ch, true).name)
	b.api.CloseStreams()
	b.api.CloseStreams() // twice is fine
	ev := next(t, ch, true)
	require.Equal(t, "shutdown", ev.name)
	select {
	case _, ok := <-ch:
		require.False(t, ok, "the stream ends after the shutdown event")
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end")
	}
}

// TestStreamLimit: streams beyond MaxStreams are refused with 503 rather
// than starving the Redis pool the other requests share.
func TestStreamLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxStreams: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		require.Equal(t, "snapshot", next(t, openStream(t, b, ctx, ""), true).name)
	}
	r := b.do("GET", "/api/v1/queues/status/stream", adminKey, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.code)
	require.Equal(t, "too_many_streams", r.errCode())
	// Other requests are still served.
	require.Equal(t, http.StatusOK, b.do("GET", "/api/v1/queues/status", adminKey, nil).code)
}
