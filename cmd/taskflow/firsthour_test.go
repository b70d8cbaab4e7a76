package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestFirstHourAsPasted does what the README tells a newcomer, as it is
// written: `make run` in the repository (its real addresses,
// 127.0.0.1:8080 and the embedded Redis at 127.0.0.1:6380), the command
// its banner prints, the README's first-hour block pasted into bash in
// the same folder, the MCP configuration it documents (stdio, against
// make run's Redis), then Ctrl-C to the whole process group as a terminal
// sends it: make must end by that interrupt, its recipe having ended
// well (no "make: *** ... Error 1"), and nothing logged as an error.
func TestFirstHourAsPasted(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	for _, addr := range []string{"127.0.0.1:8080", "127.0.0.1:6380"} {
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err, "the README's first hour uses %s, which is taken here (a `make run` going?): stop what holds it", addr)
		ln.Close()
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)

	// a clean environment: what a newcomer's shell has, not the tests'
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "TASKFLOW_") || strings.HasPrefix(k, "OPENROUTER_") || strings.HasPrefix(k, "MAKE") ||
			k == "REDIS_URL" || k == "DATABASE_URL" || k == "MFLAGS" {
			continue
		}
		env = append(env, kv)
	}
	out := t.TempDir()
	run := exec.Command("make", "--no-print-directory", "run")
	run.Dir = root
	run.Env = append(env, "TASKFLOW_OUTPUT_DIR="+out)
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's foreground group of its own
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	run.Stdout, run.Stderr = pw, pw
	require.NoError(t, run.Start())
	pw.Close()
	printed := &syncBuffer{}
	eof := make(chan struct{})
	banner := make(chan string, 1)
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			printed.Write([]byte(line + "\n"))
			if cmd, ok := strings.CutPrefix(line, "taskflow dev: or   "); ok {
				banner <- cmd
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { <-eof; exited <- run.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = syscall.Kill(-run.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	var bannerCmd string
	select {
	case bannerCmd = <-banner:
	case err := <-exited:
		t.Fatalf("make run ended: %v\n%s", err, printed.String())
	case <-time.After(5 * time.Minute): // make run builds first
		t.Fatalf("make run printed no banner:\n%s", printed.String())
	}
	require.Contains(t, printed.String(), "embedded in-memory Redis (127.0.0.1:6380)")

	shell := func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
		cmd.Dir = root
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "as pasted:\n%s\nit printed:\n%s\nmake run printed:\n%s", script, b, printed.String())
		return string(b)
	}

	// the banner's command, as printed
	require.Equal(t, "echo 'Some text. More text.' | bin/taskflow submit --wait", bannerCmd)
	got := shell(bannerCmd)
	require.Contains(t, got, "COMPLETED")

	// the README's first hour, as pasted
	block := regexp.MustCompile("(?s)## The first hour, step by step\n.*?```sh\n(.*?)```").FindSubmatch(readme)
	require.Len(t, block, 2, "README.md has a first-hour block")
	got = shell(string(block[1]))
	for _, want := range []string{
		"summary by extractive",                          // 1.
		"notification: Your Q4 2024 report is ready",     // 2. told while waiting
		"task_completed", "Your Q4 2024 report is ready", // the session's notifications
		"report.generate",      // its tasks
		`"candidates":[{"id":`, // 3. the plan over HTTP and rankd, on data
		"hourly-report",        // 4.
	} {
		require.Contains(t, got, want, got)
	}
	require.NotContains(t, got, "rankd: warning", "rankd read make run's demo data")
	saved := regexp.MustCompile(`saved (/tmp/\S+\.md) \(\d+ bytes\)`).FindStringSubmatch(got)
	require.Len(t, saved, 2, got)
	report, err := os.ReadFile(saved[1])
	require.NoError(t, err)
	require.Contains(t, string(report), "revenue")
	_ = os.Remove(saved[1])

	// the MCP configuration as documented, against what make run started
	cfgJSON := regexp.MustCompile("(?s)## Agents \\(MCP\\).*?```json\n(.*?)```").FindSubmatch(readme)
	require.Len(t, cfgJSON, 2, "README.md shows an MCP configuration")
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal(cfgJSON[1], &cfg))
	srv, ok := cfg.MCPServers["taskflow"]
	require.True(t, ok, string(cfgJSON[1]))
	command := strings.Replace(srv.Command, "/path/to/taskflow", root, 1) // where the user cloned it
	mcpCmd := exec.Command(command, srv.Args...)
	mcpCmd.Env = env
	for k, v := range srv.Env {
		mcpCmd.Env = append(mcpCmd.Env, k+"="+v)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "first-hour", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: mcpCmd}, nil)
	require.NoError(t, err)
	res, text, ack := call(t, cs, "generate_report_tool", map[string]any{"quarter": "Q4", "year": 2024, "format": "csv",
		"data": map[string]any{"revenue": []int{120, 135, 150}}})
	require.False(t, res.IsError, text)
	id, _ := ack["task_id"].(string)
	require.NotEmpty(t, id, text)
	res, text, done := call(t, cs, "wait_for_task_tool", map[string]any{"task_id": id, "timeout_seconds": 30})
	require.False(t, res.IsError, text)
	require.Equal(t, "completed", done["status"], "make run's report service made it: %s", text)
	require.NoError(t, cs.Close())

	// Ctrl-C: SIGINT to the foreground process group
	require.NoError(t, syscall.Kill(-run.Process.Pid, syscall.SIGINT))
	select {
	case err := <-exited:
		stopped = true
		// make ends as any command a Ctrl-C stops (killed by the SIGINT it
		// passes on once its recipe ended well), never with "Error 1"
		var ee *exec.ExitError
		if err != nil {
			require.ErrorAs(t, err, &ee, tail(printed.String(), 20))
			ws, _ := ee.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGINT, "make run ends by the interrupt, not %v:\n%s", err, tail(printed.String(), 20))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("make run did not stop within 30 s of Ctrl-C:\n%s", tail(printed.String(), 20))
	}
	require.NotContains(t, printed.String(), "make: ***")
	require.NotContains(t, printed.String(), "level=ERROR")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintln(strings.Join(lines, "\n"))
}
