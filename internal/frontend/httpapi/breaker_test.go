package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/engine/breaker"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/tasktypes/builtin"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
	"github.com/taskflow/taskflow/task"
)

func TestBreakerCommands(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctl := service.NewRedisBreakerControl(rdb, keyspace.MustParse(ns), nil)
	b := setup(t, setupOpts{breakers: ctl})

	// No worker listens: recorded for workers that start later (202).
	r := b.do("POST", "/api/v1/workers/reset-circuit-breaker", adminKey, map[string]any{"dependency": "openrouter"})
	require.Equal(t, http.StatusAccepted, r.code, string(r.raw))
	require.EqualValues(t, 0, r.body["workers"])
	forced, err := rdb.HGetAll(context.Background(), breaker.ForcedKey(keyspace.MustParse(ns))).Result()
	require.NoError(t, err)
	require.Contains(t, forced, "openrouter")

	// A worker listening on the channel receives each command.
	ctx := context.Background()
	sub := redisconn.Subscribe(ctx, rdb, ctl.Channel())
	defer sub.Close()
	_, err = sub.Receive(ctx) // subscription confirmed
	require.NoError(t, err)
	msgs := sub.Channel()

	r = b.do("POST", "/api/v1/workers/open-circuit-breaker/", adminKey, map[string]any{"dependency": "openrouter", "duration_seconds": 30})
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, "OPEN", r.body["state"])
	require.EqualValues(t, 1, r.body["workers"])
	var cmd service.BreakerCommand
	select {
	case m := <-msgs:
		require.NoError(t, json.Unmarshal([]byte(m.Payload), &cmd))
	case <-time.After(5 * time.Second):
		t.Fatal("no command published")
	}
	require.Equal(t, "open", cmd.Op)
	require.Equal(t, "openrouter", cmd.Dependency)
	require.InDelta(t, time.Now().Add(30*time.Second).UnixMilli(), cmd.Until, 5000)

	r = b.do("POST", "/api/v1/workers/reset-circuit-breaker", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	cmd = service.BreakerCommand{}
	select {
	case m := <-msgs:
		require.NoError(t, json.Unmarshal([]byte(m.Payload), &cmd))
	case <-time.After(5 * time.Second):
		t.Fatal("no command published")
	}
	require.Equal(t, service.BreakerCommand{Op: "reset", At: cmd.At}, cmd)
}

// TestBreakerControlReachesWorkers: a real worker applies the operator's
// commands. Forced open over the API, the worker stops starting tasks of
// that dependency (they wait, no retry spent) while other types run;
// reset over the API, the waiting task runs.
func TestBreakerControlReachesWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{breakerControl: true})
	wst, err := store.New(b.st.Client(), store.Config{Namespace: b.ns})
	require.NoError(t, err)
	var calls atomic.Int64
	mux := taskflow.NewMux()
	builtin.Register(mux)
	mux.HandleFunc("guarded", func(context.Context, *task.Task) (json.RawMessage, error) {
		calls.Add(1)
		return json.RawMessage(`{"ok":true}`), nil
	})
	w, err := worker.New(wst, mux, worker.Config{ID: "breaker-test-worker", Concurrency: 2,
		HeartbeatInterval: 50 * time.Millisecond, Lease: time.Second,
		Dependencies: map[string]string{"guarded": "upstream"},
		// a held-open breaker sends tasks back for this long between looks
		Breaker: breaker.Config{Timeout: 100 * time.Millisecond}})
	require.NoError(t, err)
	wctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { require.NoError(t, w.Run(wctx)) })
	defer func() { stop(); wg.Wait() }()

	ctx := context.Background()
	channel := breaker.CommandChannel(keyspace.MustParse(b.ns))
	require.Eventually(t, func() bool { // Run subscribes before it fetches
		n, err := testredis.Subscribers(ctx, b.st.Client(), channel)
		return err == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond)

	breakers := func() map[string]any {
		r := b.do("GET", "/api/v1/workers", adminKey, nil)
		require.Equal(t, http.StatusOK, r.code, string(r.raw))
		ws := r.body["workers"].([]any)
		if len(ws) != 1 {
			return nil
		}
		m, _ := ws[0].(map[string]any)["circuit_breakers"].(map[string]any)
		return m
	}

	// Open with no duration: held open until a reset.
	r := b.do("POST", "/api/v1/workers/open-circuit-breaker", adminKey, map[string]any{"dependency": "upstream"})
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, map[string]any{"dependency": "upstream", "state": "OPEN", "workers": float64(1)}, r.body)
	require.Eventually(t, func() bool { return breakers()["upstream"] == "OPEN" }, 10*time.Second, 10*time.Millisecond,
		"the worker republishes its breakers once it applied the command")

	tok := b.session().Token
	r = b.do("POST", "/api/v1/tasks", tok, map[string]any{"task_type": "guarded"})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	guarded := r.body["task_id"].(string)
	r = b.do("POST", "/api/v1/tasks", tok, map[string]any{"task_type": "noop"})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	other := r.body["task_id"].(string)

	state := func(id string) map[string]any {
		r := b.do("GET", "/api/v1/tasks/"+id, tok, nil)
		require.Equal(t, http.StatusOK, r.code, string(r.raw))
		return r.body
	}
	// The other type runs; the guarded task is handed back (several times:
	// the breaker is looked at again every 100 ms) and never reaches its
	// handler, without spending a retry.
	testwait.Until(t, 10*time.Second, 10*time.Millisecond, func() bool {
		if state(other)["state"] == "COMPLETED" && w.Stats().Released >= 3 {
			return true
		}
		_, err := wst.PromoteDue(ctx, 100) // the scheduler's step: waits back to the queue
		require.NoError(t, err)
		return false
	}, func() string { return fmt.Sprintf("noop not completed or guarded task not released: %+v", w.Stats()) })
	require.Zero(t, calls.Load(), "no guarded task started while the breaker was forced open")
	g := state(guarded)
	require.Contains(t, []any{"PENDING", "ACTIVE"}, g["state"])
	require.EqualValues(t, 0, g["retry_count"])

	// Reset: the waiting task runs.
	r = b.do("POST", "/api/v1/workers/reset-circuit-breaker", adminKey, map[string]any{"dependency": "upstream"})
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, map[string]any{"dependency": "upstream", "state": "CLOSED", "workers": float64(1)}, r.body)
	var seen any
	testwait.Until(t, 10*time.Second, 10*time.Millisecond, func() bool {
		if seen = state(guarded)["state"]; seen == "COMPLETED" {
			return true
		}
		_, err := wst.PromoteDue(ctx, 100)
		require.NoError(t, err)
		return false
	}, func() string { return fmt.Sprintf("guarded task did not run after the reset (state %v)", seen) })
	require.EqualValues(t, 1, calls.Load())
	require.Eventually(t, func() bool { return breakers()["upstream"] == "CLOSED" }, 10*time.Second, 10*time.Millisecond)

	// Open for a duration: the answer says until when; the workers view
	// shows it open.
	before := time.Now()
	r = b.do("POST", "/api/v1/workers/open-circuit-breaker", adminKey, map[string]any{"duration_seconds": 30})
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, "OPEN", r.body["state"])
	require.Equal(t, "", r.body["dependency"])
	until, err := time.Parse(time.RFC3339Nano, r.body["until"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(30*time.Second), until, 5*time.Second)
	require.Eventually(t, func() bool { return breakers()["upstream"] == "OPEN" }, 10*time.Second, 10*time.Millisecond,
		"an empty dependency opens every breaker the worker's types need")

	// A worker started now applies the command in force.
	late, err := worker.New(wst, mux, worker.Config{ID: "late-worker", Concurrency: 1,
		HeartbeatInterval: 50 * time.Millisecond, Lease: time.Second, Dependencies: map[string]string{"guarded": "upstream"}})
	require.NoError(t, err)
	lctx, stopLate := context.WithCancel(context.Background())
	wg.Go(func() { require.NoError(t, late.Run(lctx)) })
	defer stopLate()
	require.Eventually(t, func() bool {
		r := b.do("GET", "/api/v1/workers", adminKey, nil)
		for _, x := range r.body["workers"].([]any) {
			wk := x.(map[string]any)
			if wk["worker_id"] == "late-worker" {
				cb, _ := wk["circuit_breakers"].(map[string]any)
				return cb["upstream"] == "OPEN"
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "a worker started after the command applies it")
	require.Equal(t, breaker.Open, late.Breakers().State("upstream"))

	// Reset every breaker: nothing stays in force.
	r = b.do("POST", "/api/v1/workers/reset-circuit-breaker", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.EqualValues(t, 2, r.body["workers"])
	n, err := b.st.Client().Exists(ctx, breaker.ForcedKey(keyspace.MustParse(b.ns))).Result()
	require.NoError(t, err)
	require.Zero(t, n)
}
