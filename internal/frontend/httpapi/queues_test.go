package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNamedQueuesPausesAndLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.session()

	r := b.do("POST", "/api/v1/tasks", s.Token, map[string]any{"task_type": "noop", "queue": "emails", "limit_key": "tenant-1"})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	id := r.body["task_id"].(string)
	r = b.do("GET", "/api/v1/tasks/"+id, s.Token, nil)
	require.Equal(t, "emails", r.body["queue"])
	require.Equal(t, "tenant-1", r.body["limit_key"])

	r = b.do("POST", "/api/v1/tasks", s.Token, map[string]any{"task_type": "noop", "queue": "Not Valid"})
	require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
	require.Equal(t, "queue", r.errField())

	r = b.do("GET", "/api/v1/queues", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	qs := r.body["queues"].([]any)
	require.Len(t, qs, 2)
	require.Equal(t, "default", qs[0].(map[string]any)["name"])
	emails := qs[1].(map[string]any)
	require.Equal(t, "emails", emails["name"])
	require.Equal(t, float64(1), emails["pending"].(map[string]any)["normal"])

	r = b.do("POST", "/api/v1/queues/emails/pause", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, true, r.body["paused"])
	r = b.do("GET", "/api/v1/queues/emails", adminKey, nil)
	require.Equal(t, true, r.body["paused"])
	r = b.do("POST", "/api/v1/queues/emails/resume", adminKey, nil)
	require.Equal(t, false, r.body["paused"])
	r = b.do("GET", "/api/v1/queues/nope", adminKey, nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "queue_not_found", r.errCode())

	r = b.do("POST", "/api/v1/task-types/noop/pause", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	r = b.do("GET", "/api/v1/queues", adminKey, nil)
	require.Equal(t, []any{"noop"}, r.body["paused_task_types"])
	r = b.do("POST", "/api/v1/task-types/noop/resume", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))

	r = b.do("PUT", "/api/v1/limits", adminKey, map[string]any{"scope": "queue", "name": "emails", "rate": map[string]any{"limit": 10, "per": 1}, "concurrency": 2})
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	r = b.do("GET", "/api/v1/limits", adminKey, nil)
	ls := r.body["limits"].([]any)
	require.Len(t, ls, 1)
	l := ls[0].(map[string]any)
	require.Equal(t, float64(2), l["concurrency"])
	require.Equal(t, map[string]any{"limit": float64(10), "per": float64(1)}, l["rate"])
	r = b.do("GET", "/api/v1/queues/emails", adminKey, nil)
	require.Len(t, r.body["limits"], 1)

	r = b.do("PUT", "/api/v1/limits", adminKey, map[string]any{"scope": "queue", "name": "emails"})
	require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
	require.Equal(t, "rate", r.errField())
	r = b.do("PUT", "/api/v1/limits", adminKey, map[string]any{"scope": "task_type", "name": "noop", "rate": map[string]any{"limit": 0, "per": 1}})
	require.Equal(t, "rate.limit", r.errField())

	r = b.do("DELETE", "/api/v1/limits/queue/emails", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, true, r.body["deleted"])
	r = b.do("DELETE", "/api/v1/limits/queue/emails", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, false, r.body["deleted"], "a repeated delete is no error")
	r = b.do("DELETE", "/api/v1/limits/tenant/x", adminKey, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.code)
	require.Equal(t, "scope", r.errField())

	// a session may not control queues
	r = b.do("POST", "/api/v1/queues/emails/pause", s.Token, nil)
	require.Equal(t, http.StatusForbidden, r.code)
}
