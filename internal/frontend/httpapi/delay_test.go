package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDelay: delay (seconds from now) delays a task's first run as run_at
// does — it waits in the scheduled set, not in a queue — and bad delays are
// a 422 naming the field.
func TestDelay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.session().Token
	for path, body := range map[string]map[string]any{
		"/api/v1/tasks":           {"task_type": "noop", "delay": 3600},
		"/api/v1/tasks/summarize": {"content": "One. Two.", "delay": 0.5},
	} {
		r := b.do("POST", path, tok, body)
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	}
	r := b.do("POST", "/api/v1/tasks", tok, map[string]any{"task_type": "noop", "delay": 0})
	require.Equal(t, http.StatusCreated, r.code, "0 is now: %s", r.raw)
	r = b.do("GET", "/api/v1/queues/scheduled/tasks", adminKey, nil)
	require.EqualValues(t, 2, r.body["total"], string(r.raw))
	r = b.do("GET", "/api/v1/queues/primary/tasks", adminKey, nil)
	require.EqualValues(t, 1, r.body["total"], "only the delay 0 task is queued: %s", r.raw)

	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for name, body := range map[string]map[string]any{
		"negative": {"task_type": "noop", "delay": -1},
		"too far":  {"task_type": "noop", "delay": 31 * 24 * 3600},
		"both":     {"task_type": "noop", "delay": 5, "run_at": later},
		"string":   {"task_type": "noop", "delay": "5s"},
	} {
		r := b.do("POST", "/api/v1/tasks", tok, body)
		require.Contains(t, []int{http.StatusBadRequest, http.StatusUnprocessableEntity}, r.code, "%s: %s", name, r.raw)
		require.Equal(t, "delay", r.body["error"].(map[string]any)["field"], "%s: %s", name, r.raw)
	}
}
