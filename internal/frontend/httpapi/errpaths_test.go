package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

// TestBodyReadFailureIsInvalidBody: a body that cannot be read (here a
// malformed chunked encoding) is 400 invalid_body, not a 500.
func TestBodyReadFailureIsInvalidBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.srv.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("POST /api/v1/tasks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + adminKey +
		"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"tas\r\nzz\r\n"))
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
	require.Equal(t, "invalid_body", e.Error.Code, e.Error.Message)
}

// TestDeleteTimeoutTask: a TIMEOUT task (its handler may still run on a
// worker) can be deleted; the worker's late completion then finds no task
// and writes nothing, so no half task is left behind.
func TestDeleteTimeoutTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.session().Token
	id := b.submit(tok, "Runs too long. Then deleted.")
	ts := b.activate(1)
	require.Len(t, ts, 1)
	require.NoError(t, b.st.MarkTimeout(context.Background(), id, ts[0].Lease))
	r := b.do("GET", "/api/v1/tasks/"+id, tok, nil)
	require.Equal(t, "TIMEOUT", r.body["state"])
	r = b.do("DELETE", "/api/v1/tasks/"+id, tok, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	err := b.st.Complete(context.Background(), id, ts[0].Lease, []byte(`{"summary":"late"}`))
	require.True(t, errors.Is(err, task.ErrNotFound), "late completion: %v", err)
	require.Equal(t, http.StatusNotFound, b.do("GET", "/api/v1/tasks/"+id, adminKey, nil).code)
	r = b.do("GET", "/api/v1/queues/status", adminKey, nil)
	for st, n := range r.body["states"].(map[string]any) {
		require.EqualValues(t, 0, n, "state %s still counts the task", st)
	}
}
