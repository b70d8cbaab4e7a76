package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/testredis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testMain(env map[string]string, stdout io.Writer) *Main {
	return &Main{Stdout: stdout, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}
}

func TestBenchNeedsRedis(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := testMain(map[string]string{}, &out).Run(context.Background(), []string{"bench"})
	require.ErrorContains(t, err, "REDIS_URL")
}

func TestBenchCommand(t *testing.T) {
	t.Parallel()
	testredis.Client(t) // fails loudly without a Redis
	var out bytes.Buffer
	m := testMain(map[string]string{"REDIS_URL": testredis.URL()}, &out)
	err := m.Run(context.Background(), []string{"bench", "--tasks", "300", "--concurrency", "4", "--rate", "200", "--latency-duration", "500ms", "--json"})
	require.NoError(t, err)
	// one JSON object on one line, with the key names the issue and
	// docs/benchmarks.md promise (decoded without benchResult, so renaming
	// a struct tag fails here)
	require.Equal(t, 1, bytes.Count(out.Bytes(), []byte("\n")), "one line: %s", out.String())
	require.True(t, bytes.HasSuffix(out.Bytes(), []byte("\n")))
	var raw map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &raw))
	for _, k := range []string{"enqueue_per_sec", "processed_per_sec", "start_p50_ms", "start_p99_ms"} {
		v, ok := raw[k].(float64)
		require.True(t, ok, "key %q missing or not a number in %s", k, out.String())
		require.Positive(t, v, k)
	}
	var res benchResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	require.Equal(t, raw["start_p99_ms"], res.StartP99Ms)
	require.Equal(t, 300, res.Tasks)
	require.Positive(t, res.EnqueueSinglePerSec)
	require.Positive(t, res.EnqueuePerSec)
	require.Positive(t, res.ProcessedPerSec)
	require.Positive(t, res.ProcessedWithProducerPerSec)
	require.Equal(t, 100, res.LatencyN)
	require.Positive(t, res.StartP99Ms)
	require.GreaterOrEqual(t, res.StartP99Ms, res.StartP50Ms)
}

// TestLoadgen runs both modes of the load generator, briefly, against a
// real `taskflow dev` (built from this checkout and run as a process).
func TestLoadgen(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "taskflow")
	build := exec.Command("go", "build", "-o", bin, "../taskflow")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	dev := exec.Command(bin, "dev", "--addr", "127.0.0.1:0")
	dev.Env = append(dev.Environ(), "REDIS_URL=", "TASKFLOW_ADMIN_KEY=")
	stderr, err := dev.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, dev.Start())
	t.Cleanup(func() { _ = dev.Process.Kill(); _ = dev.Wait() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "taskflow dev: open "); ok {
				urls <- strings.TrimSuffix(strings.Fields(u)[0], "/docs")
			}
		}
	}()
	var base string
	select {
	case base = <-urls:
	case <-time.After(60 * time.Second):
		t.Fatal("taskflow dev printed no URL")
	}
	for _, mode := range [][]string{{"--rate", "100"}, {}} {
		var out bytes.Buffer
		args := append([]string{"loadgen", "--duration", "300ms", "--concurrency", "4", "--type", "noop", "--json"}, mode...)
		require.NoError(t, testMain(map[string]string{"TASKFLOW_URL": base}, &out).Run(context.Background(), args))
		var res loadResult
		require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
		require.Positive(t, res.OK, out.String())
		require.Equal(t, res.Sent, res.OK, out.String())
		require.Zero(t, res.Errors, out.String())
		require.LessOrEqual(t, res.P50ms, res.P99ms)
		if len(mode) > 0 {
			require.Equal(t, "rate", res.Mode)
			require.InDelta(t, 30, res.Sent, 3, "100/s for 300 ms")
		}
	}
	// the MCP load: tool calls from MCP sessions, open loop
	var mout bytes.Buffer
	require.NoError(t, testMain(map[string]string{"TASKFLOW_URL": base}, &mout).Run(context.Background(),
		[]string{"mcp", "--duration", "300ms", "--concurrency", "3", "--sessions", "2", "--rate", "100", "--json"}))
	var mres loadResult
	require.NoError(t, json.Unmarshal(mout.Bytes(), &mres), mout.String())
	require.Equal(t, "mcp-rate", mres.Mode)
	require.InDelta(t, 30, mres.OK, 3, "100 calls/s for 300 ms: %s", mout.String())
	require.Zero(t, mres.Errors, mout.String())
	// a tool error counts as an error, with what the server said
	mout.Reset()
	require.NoError(t, testMain(map[string]string{"TASKFLOW_URL": base}, &mout).Run(context.Background(),
		[]string{"mcp", "--duration", "100ms", "--concurrency", "1", "--sessions", "1", "--tool", "sleep_task_tool", "--args", `{"duration_ms":-1}`, "--json"}))
	require.NoError(t, json.Unmarshal(mout.Bytes(), &mres), mout.String())
	require.Zero(t, mres.OK)
	require.Contains(t, mres.FirstError, "params.duration_ms")
	// no API there: one clear error
	err = testMain(map[string]string{"TASKFLOW_URL": "http://127.0.0.1:1"}, io.Discard).Run(context.Background(), []string{"loadgen", "--duration", "100ms"})
	require.ErrorContains(t, err, "cannot reach the taskflow API at http://127.0.0.1:1")
}
