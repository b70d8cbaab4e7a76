package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// envHelperArgs makes this test binary act as the taskflow binary: the
// JSON array it holds is the command line TestHelperProcess runs.
const envHelperArgs = "TASKFLOW_E2E_ARGS"

// TestHelperProcess is not a test: started by processes.start with
// envHelperArgs set, it runs that taskflow command until SIGTERM and exits
// with its status, so the end-to-end test drives real OS processes
// without building the binary. Run directly, it returns at once.
func TestHelperProcess(t *testing.T) {
	raw := os.Getenv(envHelperArgs)
	if raw == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := NewMain().Run(ctx, args)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskflow:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// process is a taskflow command running in a process of its own.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer // stdout and stderr
	eof  chan struct{}
}

// processes are the processes of one test, stopped together at cleanup.
type processes struct {
	t  *testing.T
	ps []*process
}

func newProcesses(t *testing.T) *processes {
	g := &processes{t: t}
	t.Cleanup(g.stop)
	return g
}

// start runs `taskflow args...` with env added to this process's
// environment.
func (g *processes) start(env map[string]string, args ...string) *process {
	t := g.t
	t.Helper()
	a, err := json.Marshal(args)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envHelperArgs+"="+string(a))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	pipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	p := &process{name: strings.Join(args, " "), cmd: cmd, out: &syncBuffer{}, eof: make(chan struct{})}
	require.NoError(t, cmd.Start())
	g.ps = append(g.ps, p)
	go func() {
		defer close(p.eof)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			_, _ = p.out.Write(append(sc.Bytes(), '\n'))
		}
	}()
	return p
}

// forget drops p (killed and waited for by the test) from those stop
// stops.
func (g *processes) forget(p *process) {
	for i, q := range g.ps {
		if q == p {
			g.ps = append(g.ps[:i], g.ps[i+1:]...)
			return
		}
	}
}

// stop sends SIGTERM to every process at once; each must exit 0 within
// 30 s.
func (g *processes) stop() {
	for _, p := range g.ps {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(30 * time.Second)
	for _, p := range g.ps {
		select {
		case <-p.eof:
		case <-deadline:
			_ = p.cmd.Process.Kill()
			<-p.eof
			g.t.Errorf("%s did not stop on SIGTERM:\n%s", p.name, p.out.String())
		}
		if err := p.cmd.Wait(); err != nil {
			g.t.Errorf("%s: %v\n%s", p.name, err, p.out.String())
		}
	}
}

// expect waits until the process printed something matching re and
// returns the first submatch (or the match).
func (p *process) expect(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	var m []string
	require.Eventually(t, func() bool {
		m = rx.FindStringSubmatch(p.out.String())
		return m != nil
	}, 60*time.Second, 20*time.Millisecond, "%s never printed %q:\n%s", p.name, re, p.out.String())
	return m[len(m)-1]
}

// apiCaller returns a function that calls the API at base as token, with
// body as JSON (nil: none), decodes a 2xx answer into into (nil: not
// read) and returns the status.
func apiCaller(t *testing.T, base string) func(method, path, token string, body, into any) int {
	return func(method, path, token string, body, into any) int {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, err := json.Marshal(body)
			require.NoError(t, err)
			rd = strings.NewReader(string(b))
		}
		req, err := http.NewRequest(method, base+path, rd)
		require.NoError(t, err)
		if rd != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		if into != nil && res.StatusCode < 300 {
			require.NoError(t, json.Unmarshal(raw, into), "%s %s: %s", method, path, raw)
		}
		return res.StatusCode
	}
}

// TestExampleServicesEndToEnd is end-to-end flow on real
// processes: `taskflow dev` (API, workers, orchestrator, archiver) and the
// four example services (`taskflow service report|analysis|document|
// export`), each an OS process, on the real Redis and PostgreSQL. A session
// submits one task per tool over HTTP; each produces its real output file;
// get_task_result and list_user_tasks answer; the session is notified of
// each; another session sees none of it; a finished task removed from
// Redis is read back from the archive. Every process stops cleanly on
// SIGTERM.
func TestExampleServicesEndToEnd(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	dbURL := os.Getenv("TASKFLOW_TEST_DATABASE_URL")
	if dbURL == "" {
		dbURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	schema := "tfe2e_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	t.Cleanup(func() {
		if p, err := pgxpool.New(context.Background(), dbURL); err == nil {
			_, _ = p.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
			p.Close()
		}
	})
	const admin = "e2e-admin-key-0123456789abcdef"
	redisEnv := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns}
	outDir := t.TempDir()
	procs := newProcesses(t)
	devEnv := map[string]string{"DATABASE_URL": dbURL, "TASKFLOW_ARCHIVE_SCHEMA": schema, "TASKFLOW_ADMIN_KEY": admin}
	for k, v := range redisEnv {
		devEnv[k] = v
	}
	dev := procs.start(devEnv, "dev", "--addr", "127.0.0.1:0")
	var services []*process
	for _, name := range []string{"report", "analysis", "document", "export"} {
		services = append(services, procs.start(redisEnv, "service", name, "--output-dir", outDir, "--concurrency", "2"))
	}
	for _, p := range services {
		p.expect(t, "consuming")
	}
	base := dev.expect(t, `taskflow dev: open (http://127\.0\.0\.1:\d+)/docs`)

	do := apiCaller(t, base)
	type session struct {
		ID    string `json:"session_id"`
		Token string `json:"token"`
	}
	newSession := func() session {
		var s session
		require.Equal(t, http.StatusCreated, do("POST", "/api/v1/sessions", "", nil, &s))
		return s
	}
	own, other := newSession(), newSession()

	// One task per example tool, as generate_report_tool & co. would.
	submits := map[string]map[string]any{
		"report.generate":  {"quarter": "Q4", "year": 2024, "format": "md", "data": map[string]any{"revenue": []int{100, 120, 150}}},
		"data.analyze":     {"csv": "city,temp\nOslo,3\nRome,15\nLima,20\n"},
		"document.process": {"content": "<html><body><h1>Title</h1><p>Fish &amp; chips</p></body></html>"},
		"data.export":      {"rows": []map[string]any{{"a": "x", "b": 1}, {"a": "z"}}},
	}
	ids := map[string]string{} // task type → id
	for typ, params := range submits {
		var s struct {
			ID string `json:"task_id"`
		}
		require.Equal(t, http.StatusCreated, do("POST", "/api/v1/tasks", own.Token, map[string]any{"task_type": typ, "params": params}, &s))
		ids[typ] = s.ID
	}

	type view struct {
		Status string `json:"status"`
		Source string `json:"source"`
		Result struct {
			FileURL string `json:"file_url"`
			Summary string `json:"summary"`
		} `json:"result"`
	}
	// output downloads a result's file from the API, as its session; the
	// service's local copy in --output-dir is the same.
	output := func(v view) string {
		t.Helper()
		require.True(t, strings.HasPrefix(v.Result.FileURL, "/api/v1/results/"), v.Result.FileURL)
		req, err := http.NewRequest("GET", base+v.Result.FileURL, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+own.Token)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, string(b))
		req.Header.Set("Authorization", "Bearer "+other.Token)
		res2, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res2.Body.Close()
		require.Equal(t, http.StatusNotFound, res2.StatusCode, "another session cannot download it")
		name := v.Result.FileURL[strings.LastIndexByte(v.Result.FileURL, '/')+1:]
		matches, err := filepath.Glob(filepath.Join(outDir, "*", name))
		require.NoError(t, err)
		require.Len(t, matches, 1)
		local, err := os.ReadFile(matches[0])
		require.NoError(t, err)
		require.Equal(t, string(local), string(b))
		return string(b)
	}
	views := map[string]view{}
	for typ, id := range ids {
		require.Eventually(t, func() bool {
			var v view
			code := do("GET", "/api/v1/results/"+id, own.Token, nil, &v)
			views[typ] = v
			return code == http.StatusOK && v.Status == "completed"
		}, 60*time.Second, 50*time.Millisecond, "%s never completed (%+v)\n%s", typ, views[typ], dev.out.String())
	}
	require.Contains(t, output(views["report.generate"]), "| revenue | 3 | 370.00")
	require.Equal(t, "3 rows, 2 columns (1 numeric)", views["data.analyze"].Result.Summary)
	require.Equal(t, "Title\n\nFish & chips\n", output(views["document.process"]))
	require.Equal(t, "a,b\nx,1\nz,\n", output(views["data.export"]))

	// list_user_tasks; the session's notifications (polled from the oldest).
	var list struct {
		Tasks []struct {
			ID     string `json:"task_id"`
			Status string `json:"status"`
		} `json:"tasks"`
	}
	require.Equal(t, http.StatusOK, do("GET", "/api/v1/results?status_filter=completed", own.Token, nil, &list))
	require.Len(t, list.Tasks, 4)
	var polled struct {
		Notifications []struct {
			Type   string `json:"type"`
			TaskID string `json:"task_id"`
		} `json:"notifications"`
	}
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, do("GET", "/api/v1/notifications?after=0", own.Token, nil, &polled))
		return len(polled.Notifications) >= 4
	}, 20*time.Second, 50*time.Millisecond)
	notified := map[string]string{}
	for _, n := range polled.Notifications {
		notified[n.TaskID] = n.Type
	}
	for typ, id := range ids {
		require.Equal(t, "task_completed", notified[id], typ)
	}

	// Another session: nothing of it.
	for _, id := range ids {
		require.Equal(t, http.StatusNotFound, do("GET", "/api/v1/results/"+id, other.Token, nil, nil))
	}
	require.Equal(t, http.StatusOK, do("GET", "/api/v1/results", other.Token, nil, &list))
	require.Empty(t, list.Tasks)
	require.Equal(t, http.StatusOK, do("GET", "/api/v1/notifications?after=0", other.Token, nil, &polled))
	require.Empty(t, polled.Notifications)

	// The archive has every finished task; one gone from Redis is read back.
	arc, err := archive.Open(context.Background(), archive.Config{DatabaseURL: dbURL, Schema: schema, MaxConns: 1})
	require.NoError(t, err)
	defer arc.Close()
	gone := ids["data.export"]
	require.Eventually(t, func() bool {
		a, err := arc.Get(context.Background(), gone)
		return err == nil && a.State == task.StateCompleted
	}, 20*time.Second, 50*time.Millisecond, "the archiver never stored %s", gone)
	require.Equal(t, http.StatusOK, do("DELETE", "/api/v1/tasks/"+gone, admin, nil, nil))
	var back view
	require.Equal(t, http.StatusOK, do("GET", "/api/v1/results/"+gone, own.Token, nil, &back))
	require.Equal(t, "archive", back.Source)
	require.Equal(t, "completed", back.Status)
	require.Equal(t, "a,b\nx,1\nz,\n", output(back))
	require.Equal(t, http.StatusNotFound, do("GET", "/api/v1/results/"+gone, other.Token, nil, nil))
}

// TestDevEmbeddedRedisExternalTask: `taskflow dev` with nothing configured
// (its embedded in-memory Redis) runs the external path too: a service
// pointed at the embedded server's address takes a data.analyze task,
// the orchestrator applies its outcome and get_task_result answers.
func TestDevEmbeddedRedisExternalTask(t *testing.T) {
	t.Parallel()
	base, printed := startDev(t, nil)
	addr := regexp.MustCompile(`embedded in-memory Redis \(([^)]+)\)`).FindStringSubmatch(printed.String())
	require.NotNil(t, addr, printed.String())
	procs := newProcesses(t)
	svc := procs.start(map[string]string{"REDIS_URL": "redis://" + addr[1] + "/0"}, "service", "analysis", "--output-dir", t.TempDir())
	svc.expect(t, "consuming")

	post, err := http.Post(base+"/api/v1/tasks", "application/json",
		strings.NewReader(`{"task_type":"data.analyze","params":{"csv":"a,b\n1,2\n3,4\n"}}`))
	require.NoError(t, err)
	var s struct {
		ID string `json:"task_id"`
	}
	require.NoError(t, json.NewDecoder(post.Body).Decode(&s))
	post.Body.Close()
	require.Equal(t, http.StatusCreated, post.StatusCode)
	var v struct {
		Status string `json:"status"`
		Result struct {
			Summary string `json:"summary"`
		} `json:"result"`
	}
	require.Eventually(t, func() bool {
		res, err := http.Get(base + "/api/v1/results/" + s.ID)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&v) == nil && v.Status == "completed"
	}, 30*time.Second, 50*time.Millisecond, "last %+v\n%s\n%s", v, printed.String(), svc.out.String())
	require.Equal(t, "2 rows, 2 columns (2 numeric)", v.Result.Summary)
}
