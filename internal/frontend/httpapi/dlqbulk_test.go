package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/task"
)

// TestDLQBulk: the operator filters the DLQ by task type and error type,
// retries the named dead letters or all those matching a filter, deletes
// others; a task that left the DLQ meanwhile is reported, not touched;
// a session may not, and a bad body is refused naming the field.
func TestDLQBulk(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	s := b.session()
	var noops, sleeps []string
	for range 3 {
		noops = append(noops, b.submitAs(s, service.SubmitInput{TaskType: "noop"}))
		sleeps = append(sleeps, b.submitAs(s, service.SubmitInput{TaskType: "sleep"}))
	}
	for _, tk := range b.activate(100) {
		et, perm := task.ErrTypeInvalidInput, true
		if tk.Type == "sleep" {
			et = task.ErrTypeServiceUnavailable
		}
		out, err := b.st.Fail(ctx, tk.ID, tk.Lease, store.Failure{ErrorType: et, Message: "failed", Permanent: perm, Attempt: 1})
		require.NoError(t, err)
		require.Equal(t, task.StateDLQ, out.State)
	}

	r := b.do("GET", "/api/v1/queues/dlq?task_type=sleep", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.EqualValues(t, 3, r.body["total"])
	r = b.do("GET", "/api/v1/queues/dlq?error_type="+task.ErrTypeInvalidInput, adminKey, nil)
	require.EqualValues(t, 3, r.body["total"])
	r = b.do("GET", "/api/v1/queues/dlq?task_type=sleep&error_type="+task.ErrTypeInvalidInput, adminKey, nil)
	require.EqualValues(t, 0, r.body["total"])

	// named: two noops retried; the third is retried by hand meanwhile
	// (gone from the DLQ) and is reported, as is an unknown id
	r = b.do("POST", "/api/v1/tasks/"+noops[2]+"/retry", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	r = b.do("POST", "/api/v1/queues/dlq/retry", adminKey, map[string]any{"task_ids": []string{noops[0], noops[1], noops[2], noops[0], "0193ffff-0000-7000-8000-000000000000"}})
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.EqualValues(t, 4, r.body["matched"], "duplicates count once")
	require.EqualValues(t, 2, r.body["done"])
	failed := r.body["failed"].([]any)
	require.Len(t, failed, 2)
	require.Equal(t, "not_in_dlq", failed[0].(map[string]any)["code"])
	require.Equal(t, "task_not_found", failed[1].(map[string]any)["code"])
	for _, id := range noops[:2] {
		got, err := b.st.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, task.StatePending, got.State)
		require.Zero(t, got.RetryCount)
	}

	// all matching a filter: the sleeps deleted, nothing else
	r = b.do("POST", "/api/v1/queues/dlq/delete", adminKey, map[string]any{"all": true, "filter": map[string]any{"task_type": "sleep"}})
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.EqualValues(t, 3, r.body["matched"])
	require.EqualValues(t, 3, r.body["done"])
	for _, id := range sleeps {
		_, err := b.st.Get(ctx, id)
		require.ErrorIs(t, err, task.ErrNotFound)
	}
	r = b.do("GET", "/api/v1/queues/dlq", adminKey, nil)
	require.EqualValues(t, 0, r.body["total"])

	for body, field := range map[string]string{
		`{}`:                            "task_ids",
		`{"task_ids":["x"],"all":true}`: "task_ids",
		`{"task_ids":["a b"]}`:          "task_ids[0]",
		`{"task_ids":["x"],"filter":{"task_type":"noop"}}`: "filter",
	} {
		r = b.do("POST", "/api/v1/queues/dlq/retry", adminKey, body)
		require.Equal(t, http.StatusUnprocessableEntity, r.code, "%s: %s", body, r.raw)
		require.Equal(t, field, r.errField(), body)
	}
	r = b.do("POST", "/api/v1/queues/dlq/retry", adminKey, `{"task_ids":"x"}`)
	require.Equal(t, http.StatusBadRequest, r.code, string(r.raw))
	r = b.do("POST", "/api/v1/queues/dlq/retry", s.Token, map[string]any{"all": true})
	require.Equal(t, http.StatusForbidden, r.code)
}
