package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

func TestMain(m *testing.M) {
	if os.Getenv("TASKFLOW_BENCH_TEST_SERVICE") == "1" {
		os.Exit(benchTestService()) // this binary started as TestExternalServiceCommand's service
	}
	goleak.VerifyTestMain(m)
}

// benchTestService is the no-op service TestExternalServiceCommand runs
// as a process of its own, configured as --service-cmd promises.
func benchTestService() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	rdb := redis.NewClient(mustParseURL(os.Getenv("REDIS_URL")))
	defer rdb.Close()
	conc, _ := strconv.Atoi(os.Getenv("BENCH_CONCURRENCY"))
	svc, err := extsvc.New(rdb, extsvc.Config{Name: os.Getenv("BENCH_SERVICE"), Namespace: os.Getenv("TASKFLOW_NAMESPACE"), Concurrency: conc})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	svc.HandleFunc(os.Getenv("BENCH_TASK_TYPE"), func(context.Context, *extsvc.Task) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	})
	if err := svc.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func mustParseURL(u string) *redis.Options {
	o, err := redis.ParseURL(u)
	if err != nil {
		panic(err)
	}
	return o
}

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
	// one JSON object on one line, with the key names docs/benchmarks.md
	// promises (decoded without benchResult, so renaming
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
	// where the Redis time goes: each phase's commands from INFO
	// commandstats, the scripts among them
	require.NotEmpty(t, res.RedisNode)
	for _, phase := range []string{"enqueue_single", "drain"} {
		names := map[string]bool{}
		for _, c := range res.CommandsPerTask[phase] {
			names[c.Command] = true
			require.Positive(t, c.Calls, phase)
		}
		require.True(t, names["evalsha"], "phase %s: %v", phase, res.CommandsPerTask[phase])
	}
	require.Positive(t, res.EnqueuePerSec)
	require.Positive(t, res.ProcessedPerSec)
	require.Positive(t, res.ProcessedWithProducerPerSec)
	// the probe drained the same backlog in the same run; the ratios are
	// the engine's rates over it
	require.Positive(t, res.ProbePerSec)
	require.InDelta(t, res.ProcessedPerSec/res.ProbePerSec, res.DrainVsProbe, 0.001)
	require.InDelta(t, res.ProcessedWithProducerPerSec/res.ProbePerSec, res.ProducerVsProbe, 0.001)
	require.Positive(t, res.RedisUsecPerTask["probe"])
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
	dev.Env = append(dev.Environ(), "REDIS_URL=", "TASKFLOW_ADMIN_KEY=", "TASKFLOW_DEV_REDIS_ADDR=127.0.0.1:0")
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

// TestFill fills a namespace of the test Redis with a small deployment and
// reads it back through the store: the shares, the states, the timeline
// (arrivals spread over --span, each processed task ended --lag after it
// arrived), the task types in turn; a second fill of the same namespace is
// refused, and --delete empties it.
func TestFill(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	env := map[string]string{"REDIS_URL": testredis.URL()}
	var out bytes.Buffer
	err := testMain(env, &out).Run(context.Background(), []string{"fill", "--tasks", "1000"})
	require.ErrorContains(t, err, "--namespace", "no namespace named: refused")

	args := []string{"fill", "--namespace", ns, "--tasks", "1000", "--batch", "30", "--completed-share", "0.6", "--dlq-share", "0.1",
		"--span", "1h", "--lag", "2s", "--types", "noop,sleep,summarize", "--worker-id", "w-test", "--json"}
	start := time.Now()
	require.NoError(t, testMain(env, &out).Run(context.Background(), args))
	var res fillResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	require.Equal(t, 1000, res.Tasks)
	require.Equal(t, 600, res.Completed)
	require.Equal(t, 100, res.DeadLettered)
	require.Equal(t, map[task.State]int64{task.StateCompleted: 600, task.StateDLQ: 100, task.StatePending: 300,
		task.StateActive: 0, task.StateFailed: 0, task.StateTimeout: 0, task.StateCancelled: 0}, res.States)
	require.EqualValues(t, 300, res.Pending)
	require.Positive(t, res.RedisUsedMemoryAfter)
	require.Positive(t, res.EventStreamBytes)

	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	ctx := context.Background()
	// the newest tasks are the backlog; the oldest arrived span+lag ago
	pending, err := st.ListByState(ctx, task.StatePending, store.ListOptions{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, pending.Tasks, 300)
	completed, err := st.ListByState(ctx, task.StateCompleted, store.ListOptions{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, completed.Tasks, 600)
	var first, last time.Time
	types := map[string]int{}
	for _, tk := range append(completed.Tasks, pending.Tasks...) {
		if first.IsZero() || tk.CreatedAt.Before(first) {
			first = tk.CreatedAt
		}
		if tk.CreatedAt.After(last) {
			last = tk.CreatedAt
		}
		types[tk.Type]++
	}
	for _, tk := range completed.Tasks {
		require.Equal(t, "w-test", tk.Worker)
		require.Equal(t, tk.CreatedAt.Add(2*time.Second), *tk.CompletedAt, "ended --lag after it arrived")
		require.Equal(t, tk.CreatedAt.Add(time.Second), *tk.StartedAt, "fetched at half of --lag")
		// FIFO: the processed ones are the oldest (one batch may be split)
		require.LessOrEqual(t, tk.CreatedAt, pending.Tasks[len(pending.Tasks)-1].CreatedAt)
	}
	require.WithinDuration(t, start.Add(-time.Hour-2*time.Second), first, 2*time.Second)
	require.WithinDuration(t, start.Add(-2*time.Second), last, 2*time.Second)
	dead, total, err := st.ListDLQ(ctx, store.ListOptions{Limit: 1000})
	require.NoError(t, err)
	require.EqualValues(t, 100, total)
	require.Equal(t, "InvalidInputError", dead[0].Task.ErrorType)
	for _, d := range dead {
		types[d.Task.Type]++
	}
	require.Equal(t, map[string]int{"noop": 334, "sleep": 333, "summarize": 333}, types, "the types in turn")

	out.Reset()
	err = testMain(env, &out).Run(ctx, args)
	require.ErrorContains(t, err, "already holds 1000 tasks")
	require.NoError(t, testMain(env, &out).Run(ctx, []string{"fill", "--namespace", ns, "--delete"}))
	require.Contains(t, out.String(), "deleted ")
	left, _, err := rdb.Scan(ctx, 0, "{"+ns+"}:*", 100000).Result()
	require.NoError(t, err)
	require.Empty(t, left)
}

// TestFillCluster: on a Redis Cluster the fill works the same, and
// --delete finds the namespace's keys on whichever master holds its hash
// tag (go-redis routes a SCAN by the hash tag of its MATCH pattern; a scan
// of a random node would miss them two times in three).
func TestFillCluster(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	env := map[string]string{"REDIS_URL": cl.URL()}
	var out bytes.Buffer
	require.NoError(t, testMain(env, &out).Run(context.Background(),
		[]string{"fill", "--namespace", "fillc", "--tasks", "300", "--dlq-share", "0.1", "--json"}))
	var res fillResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	require.EqualValues(t, 210, res.States[task.StateCompleted])
	require.EqualValues(t, 30, res.States[task.StateDLQ])
	require.EqualValues(t, 60, res.States[task.StatePending])

	out.Reset()
	require.NoError(t, testMain(env, &out).Run(context.Background(), []string{"fill", "--namespace", "fillc", "--delete"}))
	require.Regexp(t, `^deleted [1-9][0-9]* keys of namespace fillc\n$`, out.String())
	ctx := context.Background()
	require.NoError(t, cl.Client().ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		left, _, err := c.Scan(ctx, 0, "*", 1000).Result()
		require.NoError(t, err)
		require.Empty(t, left, "keys left on %s", c.Options().Addr)
		return nil
	}))
}

// TestBenchCluster: bench takes a cluster URL and measures the master that
// holds its namespace.
func TestBenchCluster(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	var out bytes.Buffer
	m := testMain(map[string]string{"REDIS_URL": cl.URL()}, &out)
	err := m.Run(context.Background(), []string{"bench", "--tasks", "200", "--concurrency", "4", "--only", "drain", "--json"})
	require.NoError(t, err)
	var res benchResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	require.NotNil(t, cl.Node(res.RedisNode), "measured %q, not a node of the cluster", res.RedisNode)
	require.Positive(t, res.ProcessedPerSec)
	require.Positive(t, res.RedisUsecPerTask["drain"])

	// three partitions: on three masters, each measured
	out.Reset()
	err = m.Run(context.Background(), []string{"bench", "--tasks", "300", "--concurrency", "4", "--only", "drain", "--partitions", "3", "--json"})
	require.NoError(t, err)
	res = benchResult{}
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	require.Equal(t, 3, res.Partitions)
	require.Len(t, res.PartitionNodes, 3)
	require.Len(t, res.RedisUsecPerTaskByNode, 3, "the partitions sit on the three masters: %v", res.PartitionNodes)
	var sum float64
	for node, phases := range res.RedisUsecPerTaskByNode {
		require.NotNil(t, cl.Node(node), node)
		require.Positive(t, phases["drain"], node)
		sum += phases["drain"]
	}
	require.InDelta(t, res.RedisUsecPerTask["drain"], sum, 0.05, "the total is the masters' sum")
}

// TestExternalServiceCommand: with --service-cmd the bench runs no service
// of its own but the command's (here this test binary again, as an extsvc
// service in a process of its own), which serves every task.
func TestExternalServiceCommand(t *testing.T) {
	t.Parallel()
	testredis.Client(t)
	self, err := os.Executable()
	require.NoError(t, err)
	var out bytes.Buffer
	m := testMain(map[string]string{"REDIS_URL": testredis.URL()}, &out)
	cmdline := "TASKFLOW_BENCH_TEST_SERVICE=1 exec " + self
	require.NoError(t, m.Run(context.Background(), []string{"external", "--tasks", "200", "--service-concurrency", "20", "--no-drain", "--json", "--service-cmd", cmdline}))
	var res externalResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	require.Positive(t, res.PerSec)
	require.Equal(t, cmdline, res.ServiceCmd)
	require.Zero(t, res.ServiceCommandsPerTask, "the service's commands are its own process's")

	out.Reset()
	err = m.Run(context.Background(), []string{"external", "--tasks", "10", "--no-drain", "--service-cmd", "exit 3"})
	require.ErrorContains(t, err, "exit status 3", "a service command that ends is an error, not a hang")
}

// TestExternalCommand runs the external mode briefly: every task goes
// through dispatcher, service and orchestrator and is notified once; the
// figures the docs quote are in its JSON.
func TestExternalCommand(t *testing.T) {
	t.Parallel()
	testredis.Client(t) // fails loudly without a Redis
	var out bytes.Buffer
	m := testMain(map[string]string{"REDIS_URL": testredis.URL()}, &out)
	require.NoError(t, m.Run(context.Background(), []string{"external", "--tasks", "200", "--service-concurrency", "20", "--json"}))
	var raw map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &raw), out.String())
	for _, k := range []string{"per_sec", "done_p99_ms", "commands_per_task_total", "allocs_per_task", "drain_per_sec", "ratio_to_drain"} {
		v, ok := raw[k].(float64)
		require.True(t, ok, "key %q missing or not a number in %s", k, out.String())
		require.Positive(t, v, k)
	}
}
