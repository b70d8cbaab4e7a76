package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestDevWithNodeService: the Node example (examples/node-service, on the
// TypeScript SDK of sdk/typescript) serves text.wordcount for the real server: a task
// submitted over HTTP is dispatched by a worker, run by the node process,
// applied by the orchestrator, its result retrieved and its session
// notified — the whole path a service in another language takes.
func TestDevWithNodeService(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is not on PATH")
	dir, err := filepath.Abs("../../examples/node-service")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "node_modules", "@taskflow", "sdk", "dist", "index.js"))
	require.NoError(t, err, "examples/node-service/node_modules or the SDK's build is missing: run `make node-service-deps` (.ci/run does)")

	_, ns := testredis.Client(t)
	cmd := exec.Command(node, "service.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REDIS_URL="+testredis.URL(), "TASKFLOW_NAMESPACE="+ns, "BLOCK_MS=100")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	ready, exited := make(chan struct{}), make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				close(ready)
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("the node service never became ready: %s", stderr.String())
	}

	base, printed := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": "dev-node-admin-key-0123456789"})
	do := func(method, path, token, body string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := do("POST", "/api/v1/sessions", "", "")
	require.Equal(t, http.StatusCreated, code, body)
	var sess struct {
		Token string `json:"token"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &sess))

	// The service published its type's spec when it registered: the API
	// lists it and refuses params that break it, naming the field.
	code, body = do("GET", "/api/v1/task-types", sess.Token, "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"published_by":"wordcount-service"`)
	require.Contains(t, body, "the text whose words are counted")
	for bad, field := range map[string]string{`{"content":"one two"}`: "params.text", `{"text":"a","content":"b"}`: "params.content", `{}`: "params.text", `{"text":5}`: "params.text"} {
		code, body = do("POST", "/api/v1/tasks", sess.Token, `{"task_type":"text.wordcount","params":`+bad+`}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		require.Contains(t, body, `"field":"`+field+`"`, bad)
	}

	code, body = do("POST", "/api/v1/tasks", sess.Token, `{"task_type":"text.wordcount","params":{"text":"the cat and the hat\nthe end"}}`)
	require.Equal(t, http.StatusCreated, code, body)
	var sub struct {
		ID string `json:"task_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &sub))

	var v struct {
		Status string `json:"status"`
		Result struct {
			Summary  string `json:"summary"`
			Metadata struct {
				Words int `json:"words"`
				Lines int `json:"lines"`
			} `json:"metadata"`
		} `json:"result"`
	}
	require.Eventually(t, func() bool {
		code, body := do("GET", "/api/v1/results/"+sub.ID, sess.Token, "")
		return code == http.StatusOK && json.Unmarshal([]byte(body), &v) == nil && v.Status == "completed"
	}, 30*time.Second, 20*time.Millisecond, "node stderr: %s\n%s", stderr.String(), printed.String())
	require.Equal(t, "7 words, 5 distinct", v.Result.Summary)
	require.Equal(t, 7, v.Result.Metadata.Words)
	require.Equal(t, 2, v.Result.Metadata.Lines)

	// notified once the outcome is applied (the state is written first)
	require.Eventually(t, func() bool {
		code, body := do("GET", notify.PathPoll+"?after=0", sess.Token, "")
		return code == http.StatusOK && strings.Contains(body, sub.ID) && strings.Contains(body, "task_completed") &&
			strings.Contains(body, "Your word count is ready")
	}, 10*time.Second, 20*time.Millisecond, "the notification says what finished, in the service's words")
}
