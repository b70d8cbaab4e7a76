package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSpec001TaskShape: a task carries every key of task
// metadata; the ones not known yet are null (not missing), and the DLQ
// listing keeps the failure snapshot beside them.
func TestSpec001TaskShape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.submit(adminKey, "One sentence here. Another one there.")
	r := b.do("GET", "/api/v1/tasks/"+id, adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	for _, k := range []string{"task_id", "state", "content", "retry_count", "max_retries", "last_error", "error_type",
		"retry_after", "created_at", "updated_at", "completed_at", "result", "error_history"} {
		require.Contains(t, r.body, k, "documented field %s", k)
	}
	for _, k := range []string{"last_error", "error_type", "retry_after", "completed_at", "result"} {
		require.Nil(t, r.body[k], "%s of a PENDING task", k)
	}
	require.Equal(t, []any{}, r.body["error_history"])
	doc := b.do("GET", "/openapi.json", "", nil)
	props := doc.body["components"].(map[string]any)["schemas"].(map[string]any)["Task"].(map[string]any)["properties"].(map[string]any)
	for _, k := range []string{"last_error", "error_type", "retry_after", "completed_at", "result"} {
		require.Equal(t, true, props[k].(map[string]any)["nullable"], "OpenAPI says %s may be null", k)
	}

	b.deadLetter(id)
	r = b.do("GET", "/api/v1/tasks/"+id, adminKey, nil)
	require.Equal(t, "DLQ", r.body["state"])
	require.Equal(t, "bad input", r.body["last_error"])
	require.Equal(t, "InvalidInput", r.body["error_type"])
	require.Nil(t, r.body["result"])

	d := b.do("GET", "/api/v1/queues/dlq", adminKey, nil)
	require.Equal(t, http.StatusOK, d.code, string(d.raw))
	items := d.body["tasks"].([]any)
	require.Len(t, items, 1)
	it := items[0].(map[string]any)
	require.Equal(t, id, it["task_id"])
	require.Equal(t, "bad input", it["last_error"])
	require.Contains(t, it, "completed_at")
	snap, ok := it["dlq"].(map[string]any)
	require.True(t, ok, "dlq snapshot kept: %s", d.raw)
	require.Equal(t, id, snap["task_id"])
	require.Equal(t, "FAILED", snap["from_state"])
	require.EqualValues(t, 0, snap["retry_count"], "a number, not a string")
	at, err := time.Parse(time.RFC3339Nano, snap["dlq_at"].(string))
	require.NoError(t, err, "dlq_at is a time, not unix ms: %v", snap["dlq_at"])
	require.WithinDuration(t, b.clock.Now(), at, time.Second)
}
