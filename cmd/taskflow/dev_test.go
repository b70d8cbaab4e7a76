package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDev runs `taskflow dev` on a free loopback port and returns its base
// URL and what it printed; it is stopped at cleanup (and must stop cleanly).
func startDev(t testing.TB, env map[string]string, args ...string) (string, *syncBuffer) {
	t.Helper()
	pr, pw := io.Pipe()
	var printed syncBuffer
	m := testMain(env, io.Discard)
	m.Stderr = io.MultiWriter(pw, &printed)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, append([]string{"dev", "--addr", "127.0.0.1:0"}, args...)) }()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "taskflow dev: open "); ok {
				urls <- strings.TrimSuffix(strings.Fields(u)[0], "/docs")
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("taskflow dev did not stop within 30s")
		}
		pw.Close()
	})
	select {
	case u := <-urls:
		return u, &printed
	case err := <-done:
		t.Fatalf("taskflow dev stopped: %v\n%s", err, printed.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("taskflow dev printed no URL:\n%s", printed.String())
	}
	return "", nil
}

// client runs a client command against base and returns stdout, stderr.
func client(t *testing.T, base, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	m := testMain(map[string]string{"TASKFLOW_URL": base}, &out)
	m.Stdin = strings.NewReader(stdin)
	m.Stderr = &errb
	err := m.Run(context.Background(), args)
	return out.String(), errb.String(), err
}

const article = `Redis is an in-memory data store used as a database, a cache and a message broker.
It keeps data structures such as strings, hashes, lists, sets and sorted sets in memory.
Because the data lives in memory, Redis answers most commands in well under a millisecond.
Redis can persist its data to disk with snapshots or an append-only file.
The weather in the city was pleasant on the day of the release.
Many task queues use Redis lists and sorted sets to hold pending and scheduled work.`

// TestDevZeroSetup is the README's promise: with nothing configured,
// `taskflow dev` serves the API on loopback with an embedded Redis, and a
// summarize request returns a summary.
func TestDevZeroSetup(t *testing.T) {
	t.Parallel()
	base, printed := startDev(t, nil)
	require.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), base)
	p := printed.String()
	require.Contains(t, p, "NOTHING IS KEPT")
	require.Contains(t, p, "running OPEN")

	out, errOut, err := client(t, base, article, "submit", "--wait")
	require.NoError(t, err, errOut)
	require.Contains(t, errOut, "COMPLETED")
	require.Contains(t, errOut, "summary by extractive")
	summary := strings.TrimSpace(out)
	require.NotEmpty(t, summary)
	require.Less(t, len(summary), len(article), "a summary is shorter than its text")
	require.Contains(t, article, strings.Split(summary, "\n")[0][:40], "extractive: sentences of the text")

	// nothing to submit: said before anything is sent
	_, _, err = client(t, base, " \n", "submit")
	require.EqualError(t, err, "stdin: no content to submit (pipe a text in, or name a FILE)")
	empty := t.TempDir() + "/empty.txt"
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	_, _, err = client(t, base, "", "submit", empty)
	require.EqualError(t, err, empty+": no content to submit (the file is empty)")

	out, _, err = client(t, base, "", "status")
	require.NoError(t, err)
	require.Regexp(t, `COMPLETED\s+1`, out)

	out, _, err = client(t, base, "", "tasks", "--status", "COMPLETED")
	require.NoError(t, err)
	require.Contains(t, out, "summarize")
	require.Contains(t, out, "(1 of 1)")

	id := strings.Fields(strings.Split(out, "\n")[1])[0]
	_, _, err = client(t, base, "", "retry", id)
	require.ErrorContains(t, err, "only FAILED or DLQ tasks can be retried")

	out, _, err = client(t, base, "", "dlq")
	require.NoError(t, err)
	require.Contains(t, out, "(0 of 0)")

	out, _, err = client(t, base, "", "status", id, "--json")
	require.NoError(t, err)
	require.Contains(t, out, `"summarizer":"extractive"`)
}

func TestDevWithRedisURLAndAdminKey(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	key := "dev-admin-key-0123456789"
	base, printed := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": key})
	require.Contains(t, printed.String(), "using Redis at")
	require.NotContains(t, printed.String(), "running OPEN")
	_, _, err := client(t, base, "", "status")
	require.ErrorContains(t, err, "HTTP 401")
	require.ErrorContains(t, err, "set TASKFLOW_TOKEN", "says how to authenticate")
	var out, errb bytes.Buffer
	m := testMain(map[string]string{"TASKFLOW_URL": base, "TASKFLOW_TOKEN": key}, &out)
	m.Stdin, m.Stderr = strings.NewReader("One thing. Another thing."), &errb
	require.NoError(t, m.Run(context.Background(), []string{"submit", "--wait"}), errb.String())
	require.NotEmpty(t, strings.TrimSpace(out.String()))
}

func TestServerCommandsRefuse(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
		want string
	}{
		"APIWithoutAdminKey": {map[string]string{"REDIS_URL": testredis.URL()}, []string{"api"}, "TASKFLOW_ADMIN_KEY is not set"},
		"APIWithoutRedis":    {map[string]string{"TASKFLOW_ADMIN_KEY": "0123456789abcdef0123"}, []string{"api"}, "REDIS_URL is not set"},
		"APIShortKey":        {map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_ADMIN_KEY": "short"}, []string{"api"}, "at least 16 characters"},
		"DevPublicAddr":      {nil, []string{"dev", "--addr", "0.0.0.0:0"}, "loopback only"},
		"BadDuration":        {map[string]string{"TASKFLOW_SESSION_TTL": "forever"}, []string{"dev"}, "TASKFLOW_SESSION_TTL"},
		"SubmitMissingFile":  {nil, []string{"submit", "/nonexistent/file.txt"}, "/nonexistent/file.txt"},
		"SubmitBadParams":    {nil, []string{"submit", "--type", "noop", "--params", "[1"}, "--params"},
		"NoServer":           {map[string]string{"TASKFLOW_URL": "http://127.0.0.1:1"}, []string{"status"}, "cannot reach the taskflow API"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := testMain(tc.env, io.Discard)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := m.Run(ctx, tc.args)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestAPIInsecureServes: --insecure starts without an admin key and stops
// cleanly when its context ends.
func TestAPIInsecureServes(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	var printed syncBuffer
	m := testMain(map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns}, io.Discard)
	m.Stderr = &printed
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	go func() { done <- m.Run(ctx, []string{"api", "--insecure", "--addr", addr}) }()
	require.Eventually(t, func() bool {
		res, err := http.Get("http://" + addr + "/api/v1/queues/status")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK // open: no credentials needed
	}, 20*time.Second, 20*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("api did not stop")
	}
}

// The banner names the client as a person types it in the same directory.
func TestSelfCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "taskflow")
	require.NoError(t, os.WriteFile(bin, []byte("x"), 0o755))
	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte("y"), 0o755))
	found := func(p string) func(string) (string, error) {
		return func(string) (string, error) { return p, nil }
	}
	missing := func(string) (string, error) { return "", exec.ErrNotFound }
	yes := func(string) bool { return true }
	no := func(string) bool { return false }

	// make install: PATH finds this very binary
	require.Equal(t, "taskflow", selfCommand("taskflow", bin, found(bin), no))
	// make run: started as bin/taskflow
	require.Equal(t, "bin/taskflow", selfCommand("bin/taskflow", bin, missing, no))
	// go run from the repository: the binary is a temporary file
	tmp := "/tmp/go-build123/b001/exe/taskflow"
	require.Equal(t, "go run ./cmd/taskflow", selfCommand(tmp, tmp, missing, yes))
	// PATH finds another taskflow: this one's absolute path
	require.Equal(t, bin, selfCommand("taskflow", bin, found(other), no))
	require.Equal(t, bin, selfCommand("taskflow", bin, missing, no))
}

// `taskflow healthcheck`, the probe of the image (which has no curl):
// 0 when the API answers 200, 1 when it answers otherwise or not at all.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	base, _ := startDev(t, nil)
	run := func(args ...string) error {
		return testMain(nil, io.Discard).Run(context.Background(), append([]string{"healthcheck"}, args...))
	}
	require.NoError(t, run("--url", base))
	require.NoError(t, run("--url", base, "--path", "/ready"))
	var ee *ExitError
	require.ErrorAs(t, run("--url", base, "--path", "/no-such-probe"), &ee)
	require.Equal(t, 1, ee.Code)
	require.ErrorAs(t, run("--url", "http://127.0.0.1:1"), &ee)
	require.Equal(t, 1, ee.Code)
	require.ErrorAs(t, run("--url", base, "--path", "live"), &ee)
	require.Equal(t, 2, ee.Code)
}
