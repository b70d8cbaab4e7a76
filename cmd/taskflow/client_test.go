package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClientCommandsDLQAndFile: the client commands against a running
// server — submit from a FILE with --wait, a task that ends in the DLQ
// (exit code 2), `dlq` listing it, `status ID` showing its error and no
// result, and `retry ID` taking it out of the DLQ list.
func TestClientCommandsDLQAndFile(t *testing.T) {
	t.Parallel()
	base, _ := startDev(t, nil)

	file := filepath.Join(t.TempDir(), "article.txt")
	require.NoError(t, os.WriteFile(file, []byte(article), 0o600))
	out, errOut, err := client(t, base, "", "submit", file, "--wait")
	require.NoError(t, err, errOut)
	require.Regexp(t, `task \S+ submitted`, errOut)
	require.Contains(t, errOut, "COMPLETED", "progress shown until done")
	require.Contains(t, article, strings.TrimSpace(strings.Split(out, "\n")[0]), "the summary is sentences of the file")

	_, errOut, err = client(t, base, "", "submit", "--type", "sleep", "--params", `{"duration_ms":1,"fail":"permanent"}`, "--wait")
	var ee *ExitError
	require.True(t, errors.As(err, &ee), "%v", err)
	require.Equal(t, 2, ee.Code, "a task ending in the DLQ exits 2")
	require.Contains(t, errOut, "DLQ")
	id := strings.Fields(strings.TrimPrefix(strings.Split(errOut, "\n")[0], "task "))[0]

	out, _, err = client(t, base, "", "dlq")
	require.NoError(t, err)
	require.Contains(t, out, id)
	require.Contains(t, out, "(1 of 1)")

	out, _, err = client(t, base, "", "status", id)
	require.NoError(t, err)
	require.Regexp(t, `state\s+DLQ`, out)
	require.Contains(t, out, "asked to fail permanently")
	require.NotContains(t, out, "result", "a dead-lettered task has no result line")

	out, _, err = client(t, base, "", "retry", id)
	require.NoError(t, err)
	require.Contains(t, out, id+" PENDING")
	// it fails again (permanent), so it comes back to the DLQ; in between
	// the manual retry took it out of the list: the state history says so.
	out, _, err = client(t, base, "", "status", id, "--json")
	require.NoError(t, err)
	require.Contains(t, out, `"cause":"manual_retry"`)
}

// TestDevRefusesBadBuiltinParams: the built-in types' params (sleep's,
// summarize's) are checked at submit, on the real server: 422 naming
// params.<field>, no task made.
func TestDevRefusesBadBuiltinParams(t *testing.T) {
	t.Parallel()
	base, _ := startDev(t, nil)
	for body, field := range map[string]string{
		`{"task_type":"sleep","params":{"duration_ms":-5}}`:                             "params.duration_ms",
		`{"task_type":"sleep","params":{"fail":"explode"}}`:                             "params.fail",
		`{"task_type":"sleep","params":{"duration":10}}`:                                "params.duration",
		`{"task_type":"sleep","params":{"duration_ms":"10"}}`:                           "params.duration_ms",
		`{"task_type":"sleep","params":{"duration_ms":86400001}}`:                       "params.duration_ms",
		`{"task_type":"summarize","content":"A text.","params":{"colour":1}}`:           "params.colour",
		`{"task_type":"summarize","content":"A text.","params":{"max_sentences":-4}}`:   "params.max_sentences",
		`{"task_type":"summarize","content":"A text.","params":{"max_chars":"many"}}`:   "params.max_chars",
		`{"task_type":"summarize","content":"A text.","params":{"content":"Another."}}`: "params.content",
	} {
		res, err := http.Post(base+"/api/v1/tasks", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		var e struct {
			Error struct{ Code, Field, Message string } `json:"error"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
		res.Body.Close()
		require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode, body)
		require.Equal(t, field, e.Error.Field, "%s: %s", body, e.Error.Message)
	}
	res, err := http.Post(base+"/api/v1/tasks", "application/json", strings.NewReader(`{"task_type":"noop","params":{"payload":"anything"}}`))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode, "noop ignores its params")
	out, _, err := client(t, base, "", "tasks")
	require.NoError(t, err)
	require.Contains(t, out, "(1 of 1)", "only the noop was created")
}
