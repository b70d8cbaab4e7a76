package outcome_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/handoff"
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/task"
)

// logBuffer collects JSON log lines from several goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the records whose msg is msg.
func (l *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLifecycleLogs: lifecycle lines (created, processing, completed,
// failed, timeout) and event lines (published, consumed, acknowledged) are
// logged with their fields by the dispatcher, the service, the outcome
// consumer and the watcher — and a parameter's value never is.
func TestLifecycleLogs(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-param-value"
	var logs logBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	release := make(chan struct{})
	handlers := map[string]extsvc.HandlerFunc{
		"ok.run": func(context.Context, *extsvc.Task) (json.RawMessage, error) {
			return json.RawMessage(`{"done":true}`), nil
		},
		"fail.run": func(context.Context, *extsvc.Task) (json.RawMessage, error) {
			return nil, extsvc.Fail("BAD_INPUT", "no", false)
		},
		"slow.run": func(context.Context, *extsvc.Task) (json.RawMessage, error) {
			<-release
			return json.RawMessage(`{}`), nil
		},
	}
	b := externaltest.Setup(t, externaltest.Options{Handlers: handlers, Dispatch: dispatch.Config{Logger: logger}, Outcome: outcome.Config{Logger: logger},
		Handoff: handoff.Config{Logger: logger},
		Service: extsvc.Config{Logger: logger}})
	params := `{"api_key":"` + secret + `"}`
	ok := b.Enqueue(t, "ok.run", "sess-logs", params, time.Minute)
	bad := b.Enqueue(t, "fail.run", "sess-logs", params, time.Minute)
	slow := b.Enqueue(t, "slow.run", "sess-logs", params, time.Second)
	b.WaitState(t, ok.ID, task.StateCompleted)
	b.WaitState(t, bad.ID, task.StateDLQ)
	b.WaitState(t, slow.ID, task.StateTimeout)
	close(release)
	b.WaitState(t, slow.ID, task.StateCompleted)

	byTask := func(msg string) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, r := range logs.lines(t, msg) {
			if id, _ := r["task_id"].(string); id != "" {
				out[id] = r
			}
		}
		return out
	}
	created := byTask("Task created")
	for _, tk := range []*task.Task{ok, bad, slow} {
		require.Contains(t, created, tk.ID, "Task created for %s", tk.Type)
		require.Equal(t, tk.Type, created[tk.ID]["type"])
		require.Equal(t, "sess-logs", created[tk.ID]["session"])
		require.Contains(t, byTask("Task processing")[tk.ID], "service")
	}
	require.Len(t, logs.lines(t, "Task created"), 3, "created once per task, not per dispatch")
	require.Contains(t, byTask("Task completed")[ok.ID], "duration")
	require.Equal(t, "BAD_INPUT", byTask("Task failed")[bad.ID]["error"])
	require.Contains(t, byTask("Task timeout")[slow.ID], "elapsed")
	require.Contains(t, byTask("Task completed"), slow.ID, "the late completion")
	for _, msg := range []string{"Event published", "Event consumed", "Event acknowledged"} {
		rs := logs.lines(t, msg)
		require.NotEmpty(t, rs, msg)
		require.NotEmpty(t, rs[0]["stream"], msg)
		require.NotEmpty(t, rs[0]["event_id"], msg)
	}
	require.NotContains(t, logs.String(), secret, "a parameter's value was logged")
}
