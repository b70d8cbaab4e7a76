package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
)

func TestRetryRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.session().Token

	pending := b.submit(tok, "Pending task. Cannot be retried.")
	r := b.do("POST", "/api/v1/tasks/"+pending+"/retry", tok, nil)
	require.Equal(t, http.StatusConflict, r.code, string(r.raw))
	require.Equal(t, "task_not_retryable", r.errCode())
	require.Contains(t, r.body["error"].(map[string]any)["message"], "PENDING")

	b.deadLetter(pending)
	r = b.do("GET", "/api/v1/queues/status", adminKey, nil)
	require.EqualValues(t, 1, r.body["queues"].(map[string]any)["dlq"])

	r = b.do("GET", "/api/v1/queues/dlq", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code)
	require.EqualValues(t, 1, r.body["total"])
	entry := r.body["tasks"].([]any)[0].(map[string]any)
	require.Equal(t, pending, entry["task_id"])
	require.Equal(t, "InvalidInput", entry["dlq"].(map[string]any)["error_type"])

	r = b.do("POST", "/api/v1/tasks/"+pending+"/retry/", tok, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, "PENDING", r.body["state"])

	r = b.do("GET", "/api/v1/queues/status", adminKey, nil)
	q := r.body["queues"].(map[string]any)
	require.EqualValues(t, 0, q["dlq"])
	require.EqualValues(t, 1, q["retry"])
	r = b.do("GET", "/api/v1/queues/retry/tasks", adminKey, nil)
	require.EqualValues(t, 1, r.body["total"])
	require.Equal(t, pending, r.body["tasks"].([]any)[0].(map[string]any)["task_id"])

	r = b.do("GET", "/api/v1/tasks/"+pending, tok, nil)
	require.EqualValues(t, 0, r.body["retry_count"])
	require.NotEmpty(t, r.body["error_history"])
}

func TestCancelAndDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.session().Token
	ctx := context.Background()

	// PENDING → cancelled at once.
	p := b.submit(tok, "Cancel me. Please.")
	r := b.do("POST", "/api/v1/tasks/"+p+"/cancel", tok, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, "cancelled", r.body["outcome"])
	require.Equal(t, "CANCELLED", b.do("GET", "/api/v1/tasks/"+p, tok, nil).body["state"])
	r = b.do("POST", "/api/v1/tasks/"+p+"/cancel", tok, nil)
	require.Equal(t, http.StatusConflict, r.code)
	require.Equal(t, "task_not_cancellable", r.errCode())

	// ACTIVE → delete refused, cancel requested.
	a := b.submit(tok, "Running task. A worker holds it.")
	ts := b.activate(10)
	require.Len(t, ts, 1)
	require.Equal(t, a, ts[0].ID)
	r = b.do("DELETE", "/api/v1/tasks/"+a, tok, nil)
	require.Equal(t, http.StatusConflict, r.code, string(r.raw))
	require.Equal(t, "task_active", r.errCode())
	require.Equal(t, "ACTIVE", b.do("GET", "/api/v1/tasks/"+a, tok, nil).body["state"], "a refused delete leaves the task whole")
	r = b.do("POST", "/api/v1/tasks/"+a+"/cancel", tok, nil)
	require.Equal(t, http.StatusAccepted, r.code, string(r.raw))
	require.Equal(t, "requested", r.body["outcome"])
	// The worker sees the request and ends the task CANCELLED; then delete works.
	require.NoError(t, b.st.CancelActive(ctx, a, ts[0].Lease, "cancelled by user"))
	r = b.do("DELETE", "/api/v1/tasks/"+a, tok, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	r = b.do("GET", "/api/v1/tasks/"+a, tok, nil)
	require.Equal(t, http.StatusNotFound, r.code)
	r = b.do("GET", "/api/v1/tasks", tok, nil)
	require.EqualValues(t, 1, r.body["total"], "the deleted task left the session's listing")

	// COMPLETED cannot be retried, says so.
	c := b.submit(tok, "Done task. Finished.")
	ts = b.activate(10)
	require.Len(t, ts, 1)
	require.NoError(t, b.st.Complete(ctx, c, ts[0].Lease, []byte(`{"summary":"Done."}`)))
	r = b.do("POST", "/api/v1/tasks/"+c+"/retry", tok, nil)
	require.Equal(t, http.StatusConflict, r.code)
	require.Contains(t, r.body["error"].(map[string]any)["message"], "COMPLETED")
	r = b.do("GET", "/api/v1/tasks/"+c, tok, nil)
	require.Equal(t, map[string]any{"summary": "Done."}, r.body["result"])
}

func TestRequeueOrphaned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.session().Token
	id := b.submit(tok, "Orphan. Its worker died.")
	ts, err := b.st.Fetch(context.Background(), store.FetchRequest{N: 1, WorkerID: "w", TokenPrefix: "x", Lease: time.Second})
	require.NoError(t, err)
	require.Len(t, ts, 1)
	r := b.do("POST", "/api/v1/tasks/requeue-orphaned", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code)
	require.EqualValues(t, 0, r.body["requeued"], "the lease is still valid")
	b.clock.Advance(2 * time.Second)
	r = b.do("POST", "/api/v1/tasks/requeue-orphaned", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code)
	require.EqualValues(t, 1, r.body["requeued"])
	require.Equal(t, id, r.body["task_ids"].([]any)[0])
	require.Equal(t, "PENDING", b.do("GET", "/api/v1/tasks/"+id, tok, nil).body["state"])
}

func TestGenericCreate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.session().Token
	r := b.do("POST", "/api/v1/tasks", tok, map[string]any{"task_type": "sleep", "params": map[string]any{"duration_ms": 5},
		"priority": "high", "timeout": 2.5, "max_retries": 1})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	id := r.body["task_id"].(string)
	require.Equal(t, "/api/v1/tasks/"+id, r.hdr.Get("Location"))
	r = b.do("GET", "/api/v1/tasks/"+id, tok, nil)
	require.Equal(t, "high", r.body["priority"])
	require.EqualValues(t, 2.5, r.body["timeout"])
	require.EqualValues(t, 1, r.body["max_retries"])
	require.Equal(t, map[string]any{"duration_ms": float64(5)}, r.body["params"])

	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r = b.do("POST", "/api/v1/tasks", tok, map[string]any{"task_type": "noop", "run_at": later})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	r = b.do("GET", "/api/v1/queues/scheduled/tasks", adminKey, nil)
	require.EqualValues(t, 1, r.body["total"])
	r = b.do("GET", "/api/v1/queues/primary:high/tasks", adminKey, nil)
	require.EqualValues(t, 1, r.body["total"])
}

func TestListing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.session().Token
	var ids []string
	for range 5 {
		ids = append(ids, b.submit(tok, "Listed task. Number something."))
		b.clock.Advance(time.Millisecond) // distinct creation times for the order check
	}
	r := b.do("POST", "/api/v1/tasks", tok, map[string]any{"task_type": "noop"})
	require.Equal(t, http.StatusCreated, r.code)

	// The short form: status + limit (limit is page_size's other name).
	r = b.do("GET", "/api/v1/tasks/?status=PENDING&limit=2", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.EqualValues(t, 6, r.body["total"])
	require.Len(t, r.body["tasks"], 2)

	// task_type filter, oldest first by creation, pages.
	r = b.do("GET", "/api/v1/tasks?task_type=summarize&sort_by=created_at&sort_order=asc&page=2&page_size=2", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.EqualValues(t, 5, r.body["total"])
	got := r.body["tasks"].([]any)
	require.Len(t, got, 2)
	require.Equal(t, ids[2], got[0].(map[string]any)["task_id"])
	require.Equal(t, ids[3], got[1].(map[string]any)["task_id"])
	require.Contains(t, got[0].(map[string]any), "content")

	// Summaries leave out content and result.
	r = b.do("GET", "/api/v1/tasks?summary=true&sort_by=created_at", tok, nil)
	require.Equal(t, http.StatusOK, r.code)
	require.EqualValues(t, 6, r.body["total"])
	first := r.body["tasks"].([]any)[0].(map[string]any)
	require.NotContains(t, first, "content")
	require.NotContains(t, first, "result")
	require.Equal(t, "noop", first["task_type"], "newest first")

	// PROCESSING is name for ACTIVE.
	r = b.do("GET", "/api/v1/tasks?status=processing", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code)
	require.EqualValues(t, 0, r.body["total"])
}

// TestListingAcrossStatesPagesDeep: merged listings page beyond one store
// page (1,000) correctly.
func TestListingAcrossStatesPagesDeep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 1205
	var ids []string
	for range n {
		r := b.do("POST", "/api/v1/tasks", adminKey, map[string]any{"task_type": "noop"})
		require.Equal(t, http.StatusCreated, r.code)
		ids = append(ids, r.body["task_id"].(string))
		b.clock.Advance(time.Millisecond) // distinct creation times
	}
	// Page 3 of 500, newest first by creation: tasks n-1001 … n-1205 (oldest).
	r := b.do("GET", "/api/v1/tasks?page=3&page_size=500&sort_by=created_at&summary=true", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.EqualValues(t, n, r.body["total"])
	got := r.body["tasks"].([]any)
	require.Len(t, got, n-1000)
	require.Equal(t, ids[n-1001], got[0].(map[string]any)["task_id"])
	require.Equal(t, ids[0], got[len(got)-1].(map[string]any)["task_id"])
	// The same through the type filter.
	r = b.do("GET", "/api/v1/tasks?task_type=noop&page=3&page_size=500&sort_by=created_at&summary=true", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.EqualValues(t, n, r.body["total"])
	require.Len(t, r.body["tasks"], n-1000)
}

// TestListingBySessionAndPriority: the admin narrows a listing to one
// session and to a priority; a session may name only itself.
func TestListingBySessionAndPriority(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s1, s2 := b.session(), b.session()
	for _, c := range []struct {
		tok, prio string
	}{{s1.Token, "high"}, {s1.Token, "low"}, {s1.Token, "high"}, {s2.Token, "high"}} {
		r := b.do("POST", "/api/v1/tasks", c.tok, map[string]any{"task_type": "noop", "priority": c.prio})
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	}
	total := func(path, tok string) any {
		t.Helper()
		r := b.do("GET", path, tok, nil)
		require.Equal(t, http.StatusOK, r.code, string(r.raw))
		return r.body["total"]
	}
	require.EqualValues(t, 3, total("/api/v1/tasks?session_id="+s1.ID, adminKey))
	require.EqualValues(t, 1, total("/api/v1/tasks?session_id="+s2.ID, adminKey))
	require.EqualValues(t, 3, total("/api/v1/tasks?priority=high", adminKey))
	require.EqualValues(t, 3, total("/api/v1/tasks?priority=high&status=PENDING", adminKey))
	require.EqualValues(t, 2, total("/api/v1/tasks?priority=high&session_id="+s1.ID, adminKey))
	require.EqualValues(t, 1, total("/api/v1/tasks?priority=low", s1.Token))
	require.EqualValues(t, 3, total("/api/v1/tasks?session_id="+s1.ID, s1.Token))

	r := b.do("GET", "/api/v1/tasks?session_id="+s1.ID, s2.Token, nil)
	require.Equal(t, http.StatusForbidden, r.code)
	require.Equal(t, "session_id", r.errField())
	r = b.do("GET", "/api/v1/tasks?priority=urgent", adminKey, nil)
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "priority", r.errField())
	r = b.do("GET", "/api/v1/tasks?session_id=a%20b", adminKey, nil)
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "session_id", r.errField())
}
