//go:build compose

// Package compose_test brings compose.yaml up for real (`make
// compose-test`): the image built from the Dockerfile, Redis and
// PostgreSQL from a Debian base made with debootstrap (no image registry
// is reachable here), every process on the host's network. It submits
// tasks through both API processes, SIGKILLs a worker container while
// they run, checks that every task completes exactly once, and brings the
// stack down. It needs a running Docker daemon (dockerd), docker-compose
// and, the first time, debootstrap and a Debian mirror in the machine's
// apt sources.
package compose_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	image     = "taskflow:compose-test"
	baseImage = "taskflow-test/debian-services"
	rootImage = "taskflow-test/debian-rootfs"
	adminKey  = "compose-test-admin-key-0123456789"
)

var root, _ = filepath.Abs("../..")

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// docker is Debian's client (BuildKit built in), the one that matches the
// daemon of the docker.io package.
func docker() string {
	if _, err := os.Stat("/usr/bin/docker"); err == nil {
		return "/usr/bin/docker"
	}
	return "docker"
}

// buildImages builds the taskflow image from a binary compiled here
// (BINARY=prebuilt: the compile stage's Go image cannot be pulled), and
// the Redis/PostgreSQL image, from debootstrap the first time.
func buildImages(t *testing.T) {
	out := filepath.Join(root, "bin", "linux")
	require.NoError(t, os.RemoveAll(out))
	require.NoError(t, os.MkdirAll(filepath.Join(out, "data", "output"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(out, "data", "artifacts"), 0o755))
	run(t, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out+"/", "./cmd/taskflow", "./cmd/rankd")
	certs, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, "ca-certificates.crt"), certs, 0o644))
	run(t, []string{"DOCKER_BUILDKIT=1"}, docker(), "build", "--network", "host", "--build-arg", "BINARY=prebuilt", "-t", image, ".")

	if exec.Command(docker(), "image", "inspect", rootImage).Run() != nil {
		mirror := debianMirror(t)
		dir := t.TempDir()
		run(t, nil, "debootstrap", "--variant=minbase", "--include=redis-server,redis-tools,postgresql-15",
			"bookworm", dir, mirror)
		run(t, nil, "sh", "-c", fmt.Sprintf("tar -C %s -c . | %s import - %s", dir, docker(), rootImage))
	}
	run(t, []string{"DOCKER_BUILDKIT=1"}, docker(), "build", "--network", "host", "-t", baseImage,
		"-f", "deploy/compose/test-base.Dockerfile", "deploy/compose")
}

// debianMirror is the first Debian archive of the machine's apt sources.
func debianMirror(t *testing.T) string {
	t.Helper()
	for _, f := range []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if m := regexp.MustCompile(`(?m)^URIs:\s*(\S+)`).FindSubmatch(b); m != nil {
			return string(m[1])
		}
		if m := regexp.MustCompile(`(?m)^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+bookworm\s`).FindSubmatch(b); m != nil {
			return string(m[1])
		}
	}
	t.Fatal("no Debian mirror in the apt sources: debootstrap needs one to make the Redis/PostgreSQL image")
	return ""
}

type api struct {
	t    *testing.T
	base string
}

func (a api) do(method, path string, body any, out any) int {
	a.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(a.t, err)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	if out != nil {
		_ = json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

func TestComposeStack(t *testing.T) {
	buildImages(t)

	project := fmt.Sprintf("tfcompose%d", time.Now().UnixNano()%1_000_000)
	ports := map[string]int{"REDIS_PORT": freePort(t), "POSTGRES_PORT": freePort(t), "API_PORT_1": freePort(t), "API_PORT_2": freePort(t)}
	env := []string{"TASKFLOW_IMAGE=" + image, "REDIS_IMAGE=" + baseImage, "POSTGRES_IMAGE=" + baseImage,
		"TASKFLOW_ADMIN_KEY=" + adminKey, "TASKFLOW_LEASE=5s", "COMPOSE_PROJECT_NAME=" + project}
	for k, v := range ports {
		env = append(env, fmt.Sprintf("%s=%d", k, v))
	}
	compose := func(args ...string) string {
		t.Helper()
		return run(t, env, "docker-compose", append([]string{"-f", "compose.yaml"}, args...)...)
	}
	t.Cleanup(func() {
		if t.Failed() {
			cmd := exec.Command("docker-compose", "-f", "compose.yaml", "logs", "--no-color", "--tail", "20")
			cmd.Dir, cmd.Env = root, append(os.Environ(), env...)
			logs, _ := cmd.CombinedOutput()
			t.Logf("logs:\n%s", logs)
		}
		cmd := exec.Command("docker-compose", "-f", "compose.yaml", "down", "-v", "--timeout", "20")
		cmd.Dir, cmd.Env = root, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
	})
	start := time.Now()
	compose("up", "-d")

	apis := []api{{t, fmt.Sprintf("http://127.0.0.1:%d", ports["API_PORT_1"])}, {t, fmt.Sprintf("http://127.0.0.1:%d", ports["API_PORT_2"])}}
	for _, a := range apis {
		require.Eventually(t, func() bool { return a.do("GET", "/ready", nil, nil) == http.StatusOK }, 90*time.Second, 250*time.Millisecond,
			"%s ready", a.base)
	}
	t.Logf("stack ready in %s", time.Since(start).Round(time.Millisecond))
	// the dashboard is served by both
	for _, a := range apis {
		require.Equal(t, http.StatusOK, a.do("GET", "/ui/", nil, nil))
	}
	// the workers and the services registered
	require.Eventually(t, func() bool {
		var ws struct{ Workers []any }
		var sv struct {
			Services []struct{ Online bool }
		}
		apis[0].do("GET", "/api/v1/workers", nil, &ws)
		apis[0].do("GET", "/api/v1/services", nil, &sv)
		online := 0
		for _, s := range sv.Services {
			if s.Online {
				online++
			}
		}
		return len(ws.Workers) == 2 && online == 5
	}, 60*time.Second, 250*time.Millisecond, "2 workers and 5 services")

	// tasks through both API processes: in-process sleeps and external reports
	const sleeps, reports = 200, 20
	var ids []string
	for i := 0; i < sleeps+reports; i++ {
		body := map[string]any{"task_type": "sleep", "params": map[string]any{"duration_ms": 500}}
		if i >= sleeps {
			body = map[string]any{"task_type": "report.generate", "params": map[string]any{"quarter": "Q4", "year": 2024,
				"format": "csv", "data": map[string]any{"revenue": []int{1, 2, i}}}}
		}
		var sub struct {
			TaskID string `json:"task_id"`
		}
		code := apis[i%2].do("POST", "/api/v1/tasks", body, &sub)
		require.Equal(t, http.StatusCreated, code, "submit %d", i)
		ids = append(ids, sub.TaskID)
	}
	// a worker dies while it runs tasks: its leases expire, the other
	// worker finishes them
	require.Eventually(t, func() bool {
		var ws struct {
			Workers []struct {
				InFlight int `json:"in_flight"`
			} `json:"workers"`
		}
		apis[0].do("GET", "/api/v1/workers", nil, &ws)
		busy := 0
		for _, w := range ws.Workers {
			if w.InFlight > 0 {
				busy++
			}
		}
		return busy == 2
	}, 20*time.Second, 50*time.Millisecond, "both workers run tasks")
	compose("kill", "-s", "SIGKILL", "worker-1")

	type taskView struct {
		State        string `json:"state"`
		StateHistory []struct {
			To    string `json:"to"`
			Cause string `json:"cause"`
		} `json:"state_history"`
	}
	recovered := 0
	deadline := time.Now().Add(3 * time.Minute)
	for _, id := range ids {
		var tv taskView
		for {
			tv = taskView{}
			apis[1].do("GET", "/api/v1/tasks/"+id, nil, &tv)
			if tv.State == "COMPLETED" || tv.State == "DLQ" || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.Equal(t, "COMPLETED", tv.State, "task %s", id)
		completed := 0
		for _, c := range tv.StateHistory {
			if c.To == "COMPLETED" {
				completed++
			}
			if c.Cause == "lease_expired" {
				recovered++
			}
		}
		require.Equal(t, 1, completed, "task %s completed once: %+v", id, tv.StateHistory)
	}
	require.Positive(t, recovered, "the killed worker's tasks came back when their leases expired")
	t.Logf("%d tasks completed once each, worker-1 SIGKILLed, %d of its tasks recovered, in %s", len(ids), recovered, time.Since(start).Round(time.Millisecond))

	// a report's file is served by either API process (the shared volume)
	var res struct {
		Result struct {
			FileURL string `json:"file_url"`
		} `json:"result"`
	}
	require.Equal(t, http.StatusOK, apis[0].do("GET", "/api/v1/results/"+ids[len(ids)-1], nil, &res))
	require.NotEmpty(t, res.Result.FileURL)
	require.Equal(t, http.StatusOK, apis[1].do("GET", res.Result.FileURL, nil, nil))
}
