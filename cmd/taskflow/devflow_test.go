package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDevWholeFlow is the README's first hour on `taskflow dev --services
// all --demo-data` (what `make run` starts) with nothing else running: an
// external report is done by the in-process example service, its session is
// notified and gets the result; a named plan runs on the demo data loaded
// into the embedded Redis, from a directory without plans/.
func TestDevWholeFlow(t *testing.T) {
	t.Parallel()
	base, printed := startDev(t, nil, "--services", "all", "--demo-data", "--output-dir", t.TempDir())
	require.Contains(t, printed.String(), "example services running in this process: analysis, document, export, report, wordcount")
	require.Contains(t, printed.String(), "loaded 31 plan demo keys")

	do := func(method, path, token, body string) (int, map[string]any) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		var out map[string]any
		require.NoError(t, json.Unmarshal(raw, &out), string(raw))
		return res.StatusCode, out
	}
	code, sess := do("POST", "/api/v1/sessions", "", "")
	require.Equal(t, http.StatusCreated, code)
	tok := sess["token"].(string)
	code, sub := do("POST", "/api/v1/tasks", tok, `{"task_type":"report.generate","params":{"quarter":"Q4","year":2024,"format":"md","data":{"revenue":[120,135,150]}}}`)
	require.Equal(t, http.StatusCreated, code, sub)
	id := sub["task_id"].(string)
	var notes []any
	require.Eventually(t, func() bool {
		_, out := do("GET", "/api/v1/notifications?mark_read=false", tok, "")
		notes, _ = out["notifications"].([]any)
		return len(notes) > 0
	}, 20*time.Second, 50*time.Millisecond, "the session is told")
	note := notes[0].(map[string]any)
	require.Equal(t, "task_completed", note["type"])
	require.Equal(t, id, note["task_id"])
	code, res := do("GET", "/api/v1/results/"+id, tok, "")
	require.Equal(t, http.StatusOK, code, res)
	require.Equal(t, "completed", res["status"])
	require.Equal(t, "/api/v1/results/"+id+"/files/"+id+".md", res["result"].(map[string]any)["file_url"], "the report is downloadable from the API")
	require.Equal(t, "Your Q4 2024 report is ready", note["message"])

	code, out := do("POST", "/api/v1/plans/complex_dag/execute", tok, `{"user_id":1}`)
	require.Equal(t, http.StatusOK, code, out)
	require.NotEmpty(t, out["candidates"], "the demo data is where the plans read")
}

// Stopping `taskflow dev` (Ctrl-C: its context ends) is not a failure: no
// component logs a warning or an error about the cancellation.
func TestDevStopsQuietly(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	m := testMain(nil, io.Discard)
	m.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pr, pw := io.Pipe()
	m.Stderr = pw
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"dev", "--addr", "127.0.0.1:0", "--services", "all"}) }()
	base := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "taskflow dev: open "); ok {
				base <- strings.TrimSuffix(strings.Fields(u)[0], "/docs")
			}
		}
	}()
	var b string
	select {
	case b = <-base:
	case <-time.After(30 * time.Second):
		t.Fatal("no URL")
	}
	// some work in flight: a chain of dependencies and a running sleep
	for _, body := range []string{`{"task_type":"sleep","params":{"duration_ms":5000}}`, `{"task_type":"noop","delay":60}`} {
		res, err := http.Post(b+"/api/v1/tasks", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		res.Body.Close()
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("dev did not stop")
	}
	pw.Close()
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			require.NotContains(t, line, "context canceled", "a stop logged as a failure")
		}
	}
}

// A task whose service is not running says so, in the task, its result and
// the CLI, and GET /api/v1/services shows which external types have no
// live service; once a service registers, the task runs.
func TestWaitingForAService(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	base, printed := startDev(t, nil, "--output-dir", out) // no --services
	id, _, err := client(t, base, "", "submit", "--type", "data.export", "--params", `{"rows":[{"a":1}],"format":"csv"}`)
	require.NoError(t, err)
	id = strings.TrimSpace(id)

	require.Eventually(t, func() bool {
		got, _, err := client(t, base, "", "status", id)
		return err == nil && strings.Contains(got, "no service for data.export is running")
	}, 10*time.Second, 50*time.Millisecond)
	raw, _, err := client(t, base, "", "status", id, "--json")
	require.NoError(t, err)
	require.Contains(t, raw, `"waiting_for":{"reason":"no_service"`)
	res, err := http.Get(base + "/api/v1/results/" + id)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, string(body), "no service for data.export is running")
	require.Contains(t, string(body), `"status":"waiting_for_service"`)
	// the listing says so too, as the API, the dashboard and the CLI show it
	res, err = http.Get(base + "/api/v1/tasks?summary=true&task_type=data.export")
	require.NoError(t, err)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, string(body), `"waiting_for":{"reason":"no_service"`)
	got, _, err := client(t, base, "", "status", id)
	require.NoError(t, err)
	require.Regexp(t, `state\s+WAITING FOR SERVICE \((PENDING|ACTIVE)\)`, got)
	got, _, err = client(t, base, "", "tasks")
	require.NoError(t, err)
	require.Contains(t, got, "WAITING FOR SERVICE")
	got, _, err = client(t, base, "", "services")
	require.NoError(t, err)
	require.Regexp(t, `data\.export\s+none running`, got)

	// a service starts (as `taskflow service export` would): the task runs
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	m := regexp.MustCompile(`embedded in-memory Redis \((127\.0\.0\.1:\d+)\)`).FindStringSubmatch(printed.String())
	require.Len(t, m, 2, printed.String())
	svcEnv := map[string]string{"REDIS_URL": "redis://" + m[1] + "/0", "TASKFLOW_OUTPUT_DIR": out}
	go func() { done <- testMain(svcEnv, io.Discard).Run(ctx, []string{"service", "export"}) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool {
		got, _, err := client(t, base, "", "status", id)
		return err == nil && strings.Contains(got, "COMPLETED")
	}, 20*time.Second, 50*time.Millisecond)
	got, _, err = client(t, base, "", "services")
	require.NoError(t, err)
	require.Regexp(t, `data\.export\s+export-service`, got)
}

// `submit --wait` of a task whose result has a file says where the file is.
func TestSubmitWaitShowsTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, _ := startDev(t, nil, "--services", "report", "--output-dir", dir)
	out, errOut, err := client(t, base, "", "submit", "--type", "report.generate", "--wait",
		"--params", `{"quarter":"Q4","year":2024,"format":"csv","data":{"revenue":[1,2,3]}}`)
	require.NoError(t, err, errOut)
	m := regexp.MustCompile(`file: (\S+) \(download it with this session's token, or the admin key\)`).FindStringSubmatch(errOut)
	require.Len(t, m, 2, errOut)
	require.True(t, strings.HasPrefix(m[1], base+"/api/v1/results/"), m[1])
	res, err := http.Get(m[1]) // taskflow dev runs open: no token needed
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, string(body), "revenue,3,6.00")
	files, err := filepath.Glob(filepath.Join(dir, "report.generate", "*.csv"))
	require.NoError(t, err)
	require.Len(t, files, 1, "the service's local copy")
	require.Contains(t, out, `"file_url"`)
}

// GET /api/v1/task-types lists every type the deployment accepts with a
// description, its params' JSON Schema, who runs it, and (external ones)
// whether a live service takes it; the schema is the one the submit
// checks.
func TestTaskTypesListing(t *testing.T) {
	t.Parallel()
	base, _ := startDev(t, nil, "--services", "report", "--output-dir", t.TempDir())
	var out struct {
		TaskTypes []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Params      map[string]any `json:"params_schema"`
			HandledBy   string         `json:"handled_by"`
			Services    []string       `json:"services"`
			Online      *bool          `json:"online"`
			PublishedBy string         `json:"published_by"`
		} `json:"task_types"`
	}
	require.Eventually(t, func() bool {
		res, err := http.Get(base + "/api/v1/task-types")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		if json.NewDecoder(res.Body).Decode(&out) != nil {
			return false
		}
		for _, tt := range out.TaskTypes {
			if tt.Name == "report.generate" {
				return tt.Online != nil && *tt.Online
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond, "the in-process report service is online")
	byName := map[string]int{}
	for i, tt := range out.TaskTypes {
		byName[tt.Name] = i
		require.Equal(t, "object", tt.Params["type"], tt.Name)
		if tt.HandledBy == "worker" || tt.PublishedBy != "" {
			require.NotEmpty(t, tt.Description, tt.Name)
		}
	}
	for _, n := range []string{"noop", "sleep", "summarize", "plan", "report.generate", "data.export", "text.wordcount"} {
		require.Contains(t, byName, n)
	}
	rep := out.TaskTypes[byName["report.generate"]]
	require.Equal(t, "service", rep.HandledBy)
	require.Equal(t, []string{"report-service"}, rep.Services)
	require.Equal(t, "report-service", rep.PublishedBy, "the service published the type's spec when it registered")
	require.ElementsMatch(t, []any{"quarter", "year", "data"}, rep.Params["required"])
	exp := out.TaskTypes[byName["data.export"]]
	require.False(t, *exp.Online, "no export service runs")
	require.Empty(t, exp.PublishedBy, "no export service ever registered here: nothing published")
	pl := out.TaskTypes[byName["plan"]]
	require.Equal(t, "worker", pl.HandledBy)
	require.Nil(t, pl.Online)
	require.ElementsMatch(t, []any{"plan_name", "user_id"}, pl.Params["required"])
}
