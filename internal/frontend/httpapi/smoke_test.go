package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSubmitAndGet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.session()
	id := b.submit(s.Token, "Redis is fast. Go is simple. Tasks are durable.")
	r := b.do("GET", "/api/v1/tasks/"+id, s.Token, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, "PENDING", r.body["state"])
	require.Equal(t, "summarize", r.body["task_type"])
	require.Equal(t, s.ID, r.body["session_id"])
	require.Equal(t, "Redis is fast. Go is simple. Tasks are durable.", r.body["content"])
}
