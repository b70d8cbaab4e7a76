package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListSessions: GET /api/v1/sessions gives the admin the live
// sessions, newest first, with the size of each one's task index (the
// dashboard's session picker); a session may not list the others.
func TestListSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.session()
	second := b.session()
	for range 2 {
		r := b.do("POST", "/api/v1/tasks", first.Token, map[string]any{"task_type": "noop"})
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
	}

	r := b.do("GET", "/api/v1/sessions", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, 2.0, r.body["count"])
	require.Equal(t, 2.0, r.body["total"])
	ss := r.body["sessions"].([]any)
	ids := map[string]float64{}
	for _, x := range ss {
		s := x.(map[string]any)
		require.NotEmpty(t, s["created_at"])
		require.NotEmpty(t, s["expires_at"])
		require.NotContains(t, s, "token", "tokens are never listed")
		ids[s["session_id"].(string)] = s["tasks"].(float64)
	}
	require.Equal(t, map[string]float64{first.ID: 2, second.ID: 0}, ids)

	r = b.do("GET", "/api/v1/sessions?limit=1", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Len(t, r.body["sessions"], 1)
	require.Equal(t, 2.0, r.body["total"])

	// an ended session leaves the list
	r = b.do("DELETE", "/api/v1/sessions/current", second.Token, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	r = b.do("GET", "/api/v1/sessions", adminKey, nil)
	require.Equal(t, 1.0, r.body["total"])

	require.Equal(t, http.StatusForbidden, b.do("GET", "/api/v1/sessions", first.Token, nil).code)
	require.Equal(t, http.StatusUnauthorized, b.do("GET", "/api/v1/sessions", "", nil).code)
	require.Equal(t, http.StatusBadRequest, b.do("GET", "/api/v1/sessions?limit=0", adminKey, nil).code)
	require.Equal(t, http.StatusBadRequest, b.do("GET", "/api/v1/sessions?limit=5000", adminKey, nil).code)
}
