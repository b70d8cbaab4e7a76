package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/tasktypes/builtin"
)

// TestDependsOn: a task submitted with depends_on is PENDING with
// waiting_on (not 404) until its dependencies complete, then runs; a chain
// (C after B after A) works; only the session's own tasks can be depended
// on; a cancelled dependency cancels the dependent task.
func TestDependsOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	own, other := b.session(), b.session()
	submit := func(tok string, body map[string]any) resp {
		return b.do("POST", "/api/v1/tasks", tok, body)
	}
	r := submit(own.Token, map[string]any{"task_type": "noop"})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	a := r.body["task_id"].(string)

	r = submit(own.Token, map[string]any{"task_type": "noop", "params": map[string]any{"step": "b"}, "depends_on": []string{a}})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	require.Equal(t, "PENDING", r.body["state"])
	bid := r.body["task_id"].(string)
	r = submit(own.Token, map[string]any{"task_type": "noop", "depends_on": []string{bid}})
	require.Equal(t, http.StatusCreated, r.code, "a task may wait on one that waits itself: %s", r.raw)
	c := r.body["task_id"].(string)

	r = b.do("GET", "/api/v1/tasks/"+bid, own.Token, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, "PENDING", r.body["state"])
	require.Equal(t, []any{a}, r.body["waiting_on"])
	require.Equal(t, map[string]any{"step": "b"}, r.body["params"])
	require.Equal(t, own.ID, r.body["session_id"])
	r = b.do("GET", "/api/v1/tasks/"+c, own.Token, nil)
	require.Equal(t, []any{bid}, r.body["waiting_on"])

	t.Run("OwnTasksOnly", func(t *testing.T) {
		b := b.with(t)
		r := b.do("GET", "/api/v1/tasks/"+bid, other.Token, nil)
		require.Equal(t, http.StatusNotFound, r.code, string(r.raw))
		require.Equal(t, "task_not_found", r.errCode())
		// depending on another session's task: as on a missing one
		r = b.do("POST", "/api/v1/tasks", other.Token, map[string]any{"task_type": "noop", "depends_on": []string{a}})
		require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
		require.Equal(t, "depends_on", r.errField())
		require.Equal(t, "depends_on: no task "+a, r.body["error"].(map[string]any)["message"])
		r = b.do("GET", "/api/v1/tasks?status=PENDING", own.Token, nil)
		require.Equal(t, http.StatusOK, r.code, string(r.raw))
		ids := map[string]bool{}
		for _, x := range r.body["tasks"].([]any) {
			ids[x.(map[string]any)["task_id"].(string)] = true
		}
		require.Equal(t, map[string]bool{a: true, bid: true, c: true}, ids, "the session lists its waiting tasks")
	})

	// Listings show what a waiting task waits on, as GET by id does: the
	// session's listing (full and summary forms, all states and PENDING)
	// and the admin's (all states, PENDING paged through queued then
	// waiting tasks).
	t.Run("ListingsShowWaitingOn", func(t *testing.T) {
		b := b.with(t)
		want := map[string]any{a: nil, bid: []any{a}, c: []any{bid}}
		check := func(token, query string, wantTotal int) {
			t.Helper()
			r := b.do("GET", "/api/v1/tasks"+query, token, nil)
			require.Equal(t, http.StatusOK, r.code, string(r.raw))
			got := map[string]any{}
			for _, x := range r.body["tasks"].([]any) {
				m := x.(map[string]any)
				require.Equal(t, "PENDING", m["state"], query)
				got[m["task_id"].(string)] = m["waiting_on"]
			}
			require.Equal(t, want, got, "%s: %s", query, r.raw)
			require.EqualValues(t, wantTotal, r.body["total"], query)
		}
		for _, q := range []string{"", "?summary=true", "?status=PENDING", "?status=PENDING&summary=true", "?task_type=noop"} {
			check(own.Token, q, 3)
			check(adminKey, q, 3)
		}
		r := b.do("GET", "/api/v1/tasks?status=COMPLETED", own.Token, nil)
		require.Empty(t, r.body["tasks"], "a waiting task is PENDING only")

		// The admin's PENDING pages: one queued task, then the two waiting.
		seen := map[string]any{}
		for page := 1; page <= 4; page++ {
			r := b.do("GET", fmt.Sprintf("/api/v1/tasks?status=PENDING&page_size=1&page=%d", page), adminKey, nil)
			require.Equal(t, http.StatusOK, r.code, string(r.raw))
			require.EqualValues(t, 3, r.body["total"])
			ts := r.body["tasks"].([]any)
			if page == 4 {
				require.Empty(t, ts)
				break
			}
			require.Len(t, ts, 1, "page %d", page)
			m := ts[0].(map[string]any)
			seen[m["task_id"].(string)] = m["waiting_on"]
		}
		require.Equal(t, want, seen)
	})

	t.Run("Validation", func(t *testing.T) {
		b := b.with(t)
		for name, tc := range map[string]struct {
			deps any
			code int
		}{
			"Unknown":  {[]string{"no-such-task"}, http.StatusUnprocessableEntity},
			"Repeated": {[]string{a, a}, http.StatusUnprocessableEntity},
			"BadID":    {[]string{"has space"}, http.StatusUnprocessableEntity},
			"NotArray": {a, http.StatusBadRequest},
		} {
			r := b.do("POST", "/api/v1/tasks", own.Token, map[string]any{"task_type": "noop", "depends_on": tc.deps})
			require.Equal(t, tc.code, r.code, "%s: %s", name, r.raw)
			require.Equal(t, "depends_on", r.errField(), name)
		}
	})

	t.Run("CancelledDependency", func(t *testing.T) {
		b := b.with(t)
		r := b.do("POST", "/api/v1/tasks", own.Token, map[string]any{"task_type": "noop", "run_at": time.Now().Add(time.Hour).Format(time.RFC3339)})
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
		e := r.body["task_id"].(string)
		r = b.do("POST", "/api/v1/tasks", own.Token, map[string]any{"task_type": "noop", "depends_on": []string{e}})
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
		d := r.body["task_id"].(string)
		require.Equal(t, http.StatusOK, b.do("POST", "/api/v1/tasks/"+e+"/cancel", own.Token, nil).code)
		require.NoError(t, b.deps.Sweep(context.Background()))
		r = b.do("GET", "/api/v1/tasks/"+d, own.Token, nil)
		require.Equal(t, http.StatusOK, r.code, string(r.raw))
		require.Equal(t, "CANCELLED", r.body["state"])
		require.Nil(t, r.body["waiting_on"])
	})

	t.Run("CancelWhileWaiting", func(t *testing.T) {
		b := b.with(t)
		r := b.do("POST", "/api/v1/tasks", own.Token, map[string]any{"task_type": "noop", "run_at": time.Now().Add(time.Hour).Format(time.RFC3339)})
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
		e := r.body["task_id"].(string)
		r = b.do("POST", "/api/v1/tasks", own.Token, map[string]any{"task_type": "noop", "depends_on": []string{e}})
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
		f := r.body["task_id"].(string)
		r = b.do("DELETE", "/api/v1/tasks/"+f, own.Token, nil)
		require.Equal(t, http.StatusConflict, r.code, string(r.raw))
		require.Equal(t, "task_waiting", r.errCode())
		require.Equal(t, http.StatusNotFound, b.do("POST", "/api/v1/tasks/"+f+"/cancel", other.Token, nil).code)
		r = b.do("POST", "/api/v1/tasks/"+f+"/cancel", own.Token, nil)
		require.Equal(t, http.StatusOK, r.code, string(r.raw))
		require.Equal(t, "cancelled", r.body["outcome"])
		r = b.do("GET", "/api/v1/tasks/"+f, own.Token, nil)
		require.Equal(t, "CANCELLED", r.body["state"])
		require.Nil(t, r.body["waiting_on"])
		require.NoError(t, b.deps.Sweep(context.Background()), "nothing left parked to release")
		require.Equal(t, http.StatusOK, b.do("DELETE", "/api/v1/tasks/"+f, own.Token, nil).code)
		require.Equal(t, http.StatusOK, b.do("POST", "/api/v1/tasks/"+e+"/cancel", own.Token, nil).code)
	})

	// A worker runs A; the dependency graph releases B, then C.
	wst, err := store.New(b.st.Client(), store.Config{Namespace: b.ns})
	require.NoError(t, err)
	mux := taskflow.NewMux()
	builtin.Register(mux)
	w, err := worker.New(wst, mux, worker.Config{ID: "deps-worker", Concurrency: 2, HeartbeatInterval: 50 * time.Millisecond, Lease: time.Second})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { require.NoError(t, w.Run(ctx)) })
	wg.Go(func() { _ = b.deps.Run(ctx) })
	defer func() { stop(); wg.Wait() }()
	require.Eventually(t, func() bool {
		r := b.do("GET", "/api/v1/tasks/"+c, own.Token, nil)
		return r.body["state"] == "COMPLETED"
	}, 20*time.Second, 20*time.Millisecond)
	ra := b.do("GET", "/api/v1/tasks/"+a, own.Token, nil)
	rb := b.do("GET", "/api/v1/tasks/"+bid, own.Token, nil)
	rc := b.do("GET", "/api/v1/tasks/"+c, own.Token, nil)
	require.Equal(t, "COMPLETED", rb.body["state"])
	require.Nil(t, rc.body["waiting_on"])
	ta, _ := time.Parse(time.RFC3339Nano, ra.body["completed_at"].(string))
	tb, _ := time.Parse(time.RFC3339Nano, rb.body["started_at"].(string))
	require.False(t, tb.Before(ta), "B started after A completed")
}

// TestSchedules: recurring tasks over HTTP — validation naming the field,
// ownership, firing (one task per due time, owned by the session), delete.
func TestSchedules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	own, other := b.session(), b.session()

	for name, tc := range map[string]struct {
		body  map[string]any
		code  int
		field string
	}{
		"NoCron":      {map[string]any{"task_type": "noop"}, 422, "cron"},
		"BadCron":     {map[string]any{"cron": "61 * * * *", "task_type": "noop"}, 422, "cron"},
		"SixFields":   {map[string]any{"cron": "0 0 0 * * *", "task_type": "noop"}, 422, "cron"},
		"NeverDue":    {map[string]any{"cron": "0 0 30 2 *", "task_type": "noop"}, 422, "cron"},
		"NoType":      {map[string]any{"cron": "@hourly"}, 422, "task_type"},
		"UnknownType": {map[string]any{"cron": "@hourly", "task_type": "mystery"}, 422, "task_type"},
		"BadID":       {map[string]any{"id": "a/b", "cron": "@hourly", "task_type": "noop"}, 422, "id"},
		"BadTimeout":  {map[string]any{"cron": "@hourly", "task_type": "noop", "timeout": 0}, 422, "timeout"},
		"BadPriority": {map[string]any{"cron": "@hourly", "task_type": "noop", "priority": "urgent"}, 422, "priority"},
		"ParamsArray": {map[string]any{"cron": "@hourly", "task_type": "noop", "params": []int{1}}, 422, "params"},
		"Unknown":     {map[string]any{"cron": "@hourly", "task_type": "noop", "every": 5}, 400, "every"},
		"CronNumber":  {map[string]any{"cron": 5, "task_type": "noop"}, 400, "cron"},
	} {
		r := b.do("POST", "/api/v1/schedules", own.Token, tc.body)
		require.Equal(t, tc.code, r.code, "%s: %s", name, r.raw)
		require.Equal(t, tc.field, r.errField(), "%s: %s", name, r.raw)
	}
	r0 := b.do("POST", "/api/v1/schedules", own.Token, map[string]any{"cron": "0 0 30 2 *", "task_type": "noop"})
	require.Contains(t, string(r0.raw), "never comes due", "30 February is refused with the reason")

	r := b.do("POST", "/api/v1/schedules/", own.Token, map[string]any{"id": "nightly", "cron": "0 3 * * *", "task_type": "noop",
		"params": map[string]any{"k": "v"}, "priority": "high", "timeout": 60})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	require.Equal(t, "/api/v1/schedules/nightly", r.hdr.Get("Location"))
	require.Equal(t, "nightly", r.body["schedule_id"])
	require.Equal(t, own.ID, r.body["session_id"])
	require.Equal(t, "high", r.body["priority"])
	require.EqualValues(t, 60, r.body["timeout"])
	next, err := time.Parse(time.RFC3339, r.body["next_run_at"].(string))
	require.NoError(t, err)
	require.Equal(t, 3, next.Hour())
	require.Zero(t, next.Minute())
	require.True(t, next.After(time.Now()) && next.Before(time.Now().Add(24*time.Hour)))

	r = b.do("POST", "/api/v1/schedules", other.Token, map[string]any{"id": "nightly", "cron": "@hourly", "task_type": "noop"})
	require.Equal(t, http.StatusConflict, r.code, "an id in use is not replaced: %s", r.raw)
	require.Equal(t, "duplicate_schedule_id", r.errCode())
	require.Contains(t, string(r.raw), "a schedule with id nightly exists", "the message names the id")

	require.Equal(t, http.StatusNotFound, b.do("GET", "/api/v1/schedules/nightly", other.Token, nil).code)
	require.Equal(t, http.StatusNotFound, b.do("DELETE", "/api/v1/schedules/nightly", other.Token, nil).code)
	r = b.do("GET", "/api/v1/schedules", other.Token, nil)
	require.EqualValues(t, 0, r.body["count"])
	r = b.do("GET", "/api/v1/schedules", own.Token, nil)
	require.EqualValues(t, 1, r.body["count"])
	require.EqualValues(t, 1, b.do("GET", "/api/v1/schedules", adminKey, nil).body["count"])

	// Firing: every minute; two schedulers ticking fire each due time once.
	r = b.do("POST", "/api/v1/schedules", own.Token, map[string]any{"id": "minutely", "cron": "* * * * *", "task_type": "noop"})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	ctx := context.Background()
	b.clock.Advance(61 * time.Second)
	minutely := func(ids []string) (out []string) { // "nightly" may be due too near 03:00 UTC
		for _, id := range ids {
			if strings.HasPrefix(id, "cron-minutely-") {
				out = append(out, id)
			}
		}
		return out
	}
	fired, err := b.cron.Tick(ctx)
	require.NoError(t, err)
	ids := minutely(fired)
	require.Len(t, ids, 1)
	again, err := b.cron.Tick(ctx)
	require.NoError(t, err)
	require.Empty(t, again)
	r = b.do("GET", "/api/v1/tasks/"+ids[0], own.Token, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, own.ID, r.body["session_id"])
	require.Equal(t, http.StatusNotFound, b.do("GET", "/api/v1/tasks/"+ids[0], other.Token, nil).code)
	r = b.do("GET", "/api/v1/tasks", own.Token, nil)
	require.EqualValues(t, 1, r.body["total"], "the fired task is in its session's listing (the store indexes it on enqueue): %s", r.raw)
	require.Equal(t, ids[0], r.body["tasks"].([]any)[0].(map[string]any)["task_id"])

	// A summarize template carries its content; without it, 422 naming content.
	r = b.do("POST", "/api/v1/schedules", own.Token, map[string]any{"cron": "@daily", "task_type": "summarize"})
	require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
	require.Equal(t, "content", r.errField())
	r = b.do("POST", "/api/v1/schedules", own.Token, map[string]any{"id": "digest", "cron": "* * * * *", "task_type": "summarize", "content": "One. Two."})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	require.Equal(t, "One. Two.", r.body["content"])
	b.clock.Advance(time.Minute)
	fired, err = b.cron.Tick(ctx)
	require.NoError(t, err)
	digests := 0
	for _, id := range fired {
		if strings.HasPrefix(id, "cron-digest-") {
			digests++
			r = b.do("GET", "/api/v1/tasks/"+id, own.Token, nil)
			require.Equal(t, "One. Two.", r.body["content"])
		}
	}
	require.Equal(t, 1, digests)
	require.Equal(t, http.StatusOK, b.do("DELETE", "/api/v1/schedules/digest", own.Token, nil).code)

	r = b.do("DELETE", "/api/v1/schedules/minutely", own.Token, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	r = b.do("GET", "/api/v1/schedules/minutely", own.Token, nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "schedule_not_found", r.errCode())
	b.clock.Advance(2 * time.Minute)
	fired, err = b.cron.Tick(ctx)
	require.NoError(t, err)
	require.Empty(t, minutely(fired), "a deleted schedule fires no more")
	r = b.do("GET", "/api/v1/schedules/bad%20id", own.Token, nil)
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "schedule_id", r.errField())
}
