package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// docRequest is a request a page of the documentation shows with curl.
type docRequest struct {
	file, path, body string
}

// docRequests finds every `curl ... -X POST .../api/v1/PATH ... -d 'JSON'`
// in the README and docs/*.md (a command may continue over lines ending
// with a backslash), and the task of docs/protocol.md's task.create
// example.
func docRequests(t *testing.T) []docRequest {
	t.Helper()
	files := []string{"../../README.md"}
	more, err := os.ReadDir("../../docs")
	require.NoError(t, err)
	for _, f := range more {
		if strings.HasSuffix(f.Name(), ".md") {
			files = append(files, "../../docs/"+f.Name())
		}
	}
	re := regexp.MustCompile(`curl [^\n]*?-X POST [^ ]*?(/api/v1/[^ '"]+)[^\n]*?-d '(\{[^']*\})'`)
	var out []docRequest
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		text := strings.ReplaceAll(string(b), "\\\n", " ")
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			out = append(out, docRequest{file: f, path: m[1], body: m[2]})
		}
	}
	// The task a task.create example of docs/protocol.md carries, as a
	// submit of its task_type and params.
	b, err := os.ReadFile("../../docs/protocol.md")
	require.NoError(t, err)
	create := regexp.MustCompile("(?s)### task.create[^\n]*\n\n```json\n(.*?)```").FindStringSubmatch(string(b))
	require.Len(t, create, 2, "docs/protocol.md shows a task.create")
	var ev struct {
		TaskType string          `json:"task_type"`
		Params   json.RawMessage `json:"params"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(create[1], "…", "")), &ev))
	body, err := json.Marshal(map[string]any{"task_type": ev.TaskType, "params": ev.Params})
	require.NoError(t, err)
	out = append(out, docRequest{file: "../../docs/protocol.md", path: "/api/v1/tasks", body: string(body)})
	return out
}

// TestDocumentedRequestsWork submits every request the documentation shows
// to `taskflow dev --services all --demo-data` (what `make run` starts), as
// a session would, and checks it is accepted and, for a task, that it
// reaches COMPLETED: an example that only reads well fails here.
func TestDocumentedRequestsWork(t *testing.T) {
	t.Parallel()
	reqs := docRequests(t)
	require.GreaterOrEqual(t, len(reqs), 3, "the README shows a summary, a report and a plan")
	base, _ := startDev(t, nil, "--services", "all", "--demo-data", "--output-dir", t.TempDir())
	res, err := http.Post(base+"/api/v1/sessions", "application/json", nil)
	require.NoError(t, err)
	var sess struct{ Token string }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&sess))
	res.Body.Close()
	for _, r := range reqs {
		req, err := http.NewRequest("POST", base+r.path, strings.NewReader(r.body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+sess.Token)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Less(t, res.StatusCode, 300, "%s: POST %s %s → %d %s", r.file, r.path, r.body, res.StatusCode, raw)
		var out struct {
			TaskID string `json:"task_id"`
		}
		_ = json.Unmarshal(raw, &out)
		if out.TaskID == "" {
			continue // a synchronous answer (a plan run)
		}
		require.Eventually(t, func() bool {
			req, _ := http.NewRequest("GET", base+"/api/v1/tasks/"+out.TaskID, nil)
			req.Header.Set("Authorization", "Bearer "+sess.Token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			defer res.Body.Close()
			var tk struct{ State string }
			_ = json.NewDecoder(res.Body).Decode(&tk)
			require.NotEqual(t, "DLQ", tk.State, "%s: %s ended in the DLQ", r.file, r.body)
			return tk.State == "COMPLETED"
		}, 20*time.Second, 50*time.Millisecond, "%s: %s completes", r.file, r.body)
	}
}
