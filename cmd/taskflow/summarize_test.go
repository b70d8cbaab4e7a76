package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/tasktypes/summarize"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// An embedded Redis of a test's `taskflow dev` takes a free port, unless
// the test says otherwise: the documented 127.0.0.1:6380 is left to
// TestFirstHourAsPasted (and a developer's `make run`).
func testMain(env map[string]string, stdout io.Writer) *Main {
	return &Main{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: io.Discard,
		Getenv: func(k string) string {
			if v, ok := env[k]; ok || k != "TASKFLOW_DEV_REDIS_ADDR" {
				return v
			}
			return "127.0.0.1:0"
		}, Logger: NewMain().Logger}
}

// TestSummarizeRegistration: without a key the summarize handler is the
// extractive one and needs no dependency; with a key it needs openrouter,
// and the worker's breaker map says so.
func TestSummarizeRegistration(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)

	mux, err := newTaskMux(testMain(nil, io.Discard), taskDeps{Redis: rdb, Namespace: st.Namespace(), Store: st})
	require.NoError(t, err)
	h, ok := mux.Handler(summarize.TaskType)
	require.True(t, ok)
	require.Equal(t, summarize.SummarizerExtractive, h.(*summarize.Handler).Summarizer())
	require.NotContains(t, taskDependencies(mux), summarize.TaskType)
	raw, err := mux.ProcessTask(context.Background(), &task.Task{Type: summarize.TaskType, Content: "One sentence. Two sentences."})
	require.NoError(t, err)
	require.Contains(t, string(raw), `"summarizer":"extractive"`)

	withKey := map[string]string{"OPENROUTER_API_KEY": "sk-x", "OPENROUTER_BASE_URL": "http://127.0.0.1:1/v1"}
	mux, err = newTaskMux(testMain(withKey, io.Discard), taskDeps{Redis: rdb, Namespace: st.Namespace(), Store: st})
	require.NoError(t, err)
	require.Equal(t, summarize.Dependency, taskDependencies(mux)[summarize.TaskType])
	// OPENROUTER_RATE_LIMIT (default 60 per 60 s) is a limit on the type
	ls, err := st.Limits(context.Background())
	require.NoError(t, err)
	require.Len(t, ls, 1)
	require.Equal(t, store.Limit{Scope: store.ScopeTaskType, Name: summarize.TaskType,
		Rate: &store.RateLimit{Limit: 60, Per: time.Minute}}, ls[0])
	// an operator's change survives a restart
	five := 5
	require.NoError(t, st.SetLimit(context.Background(), store.Limit{Scope: store.ScopeTaskType, Name: summarize.TaskType, Concurrency: &five}))
	_, err = newTaskMux(testMain(withKey, io.Discard), taskDeps{Redis: rdb, Namespace: st.Namespace(), Store: st})
	require.NoError(t, err)
	ls, err = st.Limits(context.Background())
	require.NoError(t, err)
	require.Equal(t, &five, ls[0].Concurrency)
	require.Nil(t, ls[0].Rate)

	// The API lists types without Redis; that must not fail with a key set.
	mux, err = newTaskMux(testMain(withKey, io.Discard))
	require.NoError(t, err)
	require.Contains(t, mux.Types(), summarize.TaskType)

	withKey["OPENROUTER_TIMEOUT"] = "soon"
	_, err = newTaskMux(testMain(withKey, io.Discard), taskDeps{Redis: rdb, Namespace: st.Namespace(), Store: st})
	require.ErrorContains(t, err, "OPENROUTER_TIMEOUT")
}

// TestFakeLLMCommand runs `taskflow fake-llm` and talks to it.
func TestFakeLLMCommand(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	m := testMain(nil, pw)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, []string{"fake-llm", "--addr", "127.0.0.1:0", "--ratio", "503=1"})
		_ = pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	require.True(t, lines.Scan(), "the command prints its URL")
	first := lines.Text()
	_, base, ok := strings.Cut(first, "OPENROUTER_BASE_URL=")
	require.True(t, ok, first)

	body := `{"model":"m","messages":[{"role":"user","content":"Hello. [[llmfake:ok]]"}]}`
	res, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	_ = res.Body.Close()
	require.Equal(t, "Fake summary: Hello.", out.Choices[0].Message.Content, "a marker beats the ratio")

	res, err = http.Post(base+"/chat/completions", "application/json", bytes.NewReader([]byte(`{"messages":[{"role":"user","content":"x"}]}`)))
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "the ratio answers the rest")
	http.DefaultClient.CloseIdleConnections()

	cancel()
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text())
	}
	require.NoError(t, <-done)
	require.Contains(t, rest.String(), "stopped after 2 requests")
}

func TestFakeLLMCommandBadRatio(t *testing.T) {
	t.Parallel()
	err := testMain(nil, io.Discard).Run(context.Background(), []string{"fake-llm", "--ratio", "teapot=1"})
	require.ErrorContains(t, err, "--ratio")
}
