package outcome_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// The test binary doubles as the processes these tests kill: with
// TASKFLOW_HELPER set it runs a service or an outcome consumer instead of
// tests.
func init() {
	switch os.Getenv("TASKFLOW_HELPER") {
	case "service":
		helperService()
	case "orchestrator":
		helperOrchestrator()
	}
}

func helperClient() (redis.UniversalClient, string) {
	c, err := testredis.Open()
	if err != nil {
		panic(err)
	}
	return c, os.Getenv("TASKFLOW_HELPER_NS")
}

// helperService runs a service whose handler says "started <id>" and then
// works for TASKFLOW_HELPER_WORK (a Go duration).
func helperService() {
	rdb, ns := helperClient()
	work, _ := time.ParseDuration(os.Getenv("TASKFLOW_HELPER_WORK"))
	svc, err := extsvc.New(rdb, extsvc.Config{Name: "proc-svc", Namespace: ns, Consumer: os.Getenv("TASKFLOW_HELPER_CONSUMER"),
		Block: 50 * time.Millisecond, HeartbeatInterval: 50 * time.Millisecond, ClaimIdle: 400 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	svc.HandleFunc("proc.run", func(ctx context.Context, t *extsvc.Task) (json.RawMessage, error) {
		fmt.Printf("started %s\n", t.ID)
		select {
		case <-time.After(work):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.RawMessage(fmt.Sprintf(`{"by":%q}`, os.Getenv("TASKFLOW_HELPER_CONSUMER"))), nil
	})
	fmt.Println("ready")
	_ = svc.Run(context.Background())
	os.Exit(0)
}

// helperOrchestrator applies one event, says "applied", and hangs before
// acknowledging it, waiting to be killed.
func helperOrchestrator() {
	rdb, ns := helperClient()
	st, err := store.New(rdb, store.Config{Namespace: ns})
	if err != nil {
		panic(err)
	}
	note, err := notify.New(rdb, notify.Config{Namespace: keyspace.MustParse(ns)})
	if err != nil {
		panic(err)
	}
	o, err := outcome.New(st, note, nil, outcome.Config{Consumer: "agent-doomed", Block: 50 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	outcome.CrashAfterApply(o, func(protocol.Message) bool {
		fmt.Println("applied")
		select {} // killed here
	})
	fmt.Println("ready")
	_ = o.Run(context.Background())
	os.Exit(0)
}

type helper struct {
	cmd   *exec.Cmd
	lines chan string
}

func startHelper(t *testing.T, kind, ns string, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"TASKFLOW_HELPER=" + kind, "TASKFLOW_HELPER_NS=" + ns}, env...)...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	h := &helper{cmd: cmd, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	h.expect(t, "ready")
	return h
}

func (h *helper) expect(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				t.Fatalf("helper exited before %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("helper never said %q", prefix)
		}
	}
}

func (h *helper) kill(t *testing.T) {
	require.NoError(t, h.cmd.Process.Kill()) // SIGKILL: no cleanup at all
	_ = h.cmd.Wait()
}

// TestServiceProcessKilledMidTask: SIGKILL of the service process running a
// task; a second service process claims the task's entry and completes it.
func TestServiceProcessKilledMidTask(t *testing.T) {
	t.Parallel()
	b := externaltest.Setup(t, externaltest.Options{NoService: true, ExtraTypes: []string{"proc.run"}})
	first := startHelper(t, "service", b.NS, "TASKFLOW_HELPER_CONSUMER=proc-1", "TASKFLOW_HELPER_WORK=1h")
	tk := b.Enqueue(t, "proc.run", "s1", `{}`, 5*time.Minute)
	require.Equal(t, "started "+tk.ID, first.expect(t, "started"))
	first.kill(t)

	startHelper(t, "service", b.NS, "TASKFLOW_HELPER_CONSUMER=proc-2", "TASKFLOW_HELPER_WORK=1ms")
	done := b.WaitState(t, tk.ID, task.StateCompleted)
	require.JSONEq(t, `{"by":"proc-2"}`, string(done.Result))
	ns := b.WaitNotes(t, "s1", 1)
	require.Len(t, ns, 1)
}

// TestOrchestratorProcessKilledMidEvent: SIGKILL of an orchestrator process
// between applying a completion and acknowledging it; another orchestrator
// claims the event, finishes its effects once.
func TestOrchestratorProcessKilledMidEvent(t *testing.T) {
	t.Parallel()
	b := externaltest.Setup(t, externaltest.Options{NoOrchestrator: true, Handlers: map[string]extsvc.HandlerFunc{"echo.run": externaltest.Echo}})
	doomed := startHelper(t, "orchestrator", b.NS)
	tk := b.Enqueue(t, "echo.run", "s1", `{"word":"w"}`, time.Minute)
	doomed.expect(t, "applied")
	doomed.kill(t)
	b.WaitState(t, tk.ID, task.StateCompleted)

	b.StartConsumer(t, outcome.Config{Consumer: "agent-survivor", ClaimIdle: 200 * time.Millisecond})
	ns := b.WaitNotes(t, "s1", 1)
	require.Equal(t, notify.KindCompleted, ns[0].Type)
	require.Eventually(t, func() bool {
		_, pending, err := protocol.Lag(context.Background(), b.Redis, b.Streams.Completed(), protocol.AgentGroup)
		return err == nil && pending == 0
	}, 10*time.Second, 10*time.Millisecond)
	ns, err := b.Notifier.List(context.Background(), "s1", "", 10)
	require.NoError(t, err)
	require.Len(t, ns, 1, "notified once")
}
