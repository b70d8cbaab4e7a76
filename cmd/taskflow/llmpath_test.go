package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/tasktypes/llmfake"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestDevSummarizesWithTheLLM: the assembled program's LLM path. `taskflow
// dev` on a real Redis with OPENROUTER_API_KEY and OPENROUTER_BASE_URL
// pointing at the fake chat-completions server: a summarize task submitted
// over HTTP is summarized by the LLM (the result says openrouter, with the
// model), the key reaches the server, and a 429 with Retry-After is retried
// after it and then completes.
func TestDevSummarizesWithTheLLM(t *testing.T) {
	t.Parallel()
	const key = "sk-test-llm-path-0123456789"
	fake := llmfake.New(llmfake.Options{APIKey: key})
	llmBase, err := fake.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { fake.Close() })
	_, ns := testredis.Client(t)
	base, printed := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns,
		"OPENROUTER_API_KEY": key, "OPENROUTER_BASE_URL": llmBase, "OPENROUTER_MODEL": "test/model-1"})

	submit := func(text string) string {
		b, err := json.Marshal(map[string]string{"content": text})
		require.NoError(t, err)
		res, err := http.Post(base+"/api/v1/tasks/summarize", "application/json", strings.NewReader(string(b)))
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusCreated, res.StatusCode)
		var out struct {
			ID string `json:"task_id"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
		return out.ID
	}
	type view struct {
		State        string `json:"state"`
		RetryCount   int    `json:"retry_count"`
		ErrorHistory []struct {
			ErrorType string `json:"error_type"`
		} `json:"error_history"`
		Result struct {
			Summary    string `json:"summary"`
			Summarizer string `json:"summarizer"`
			Model      string `json:"model"`
		} `json:"result"`
	}
	done := func(id string) view {
		var v view
		require.Eventually(t, func() bool {
			res, err := http.Get(base + "/api/v1/tasks/" + id)
			require.NoError(t, err)
			defer res.Body.Close()
			v = view{}
			require.NoError(t, json.NewDecoder(res.Body).Decode(&v))
			return v.State == "COMPLETED" || v.State == "DLQ"
		}, 30*time.Second, 20*time.Millisecond, printed.String())
		return v
	}

	v := done(submit("Otters hold hands while they sleep. It keeps them from drifting apart."))
	require.Equal(t, "COMPLETED", v.State)
	require.Equal(t, "openrouter", v.Result.Summarizer)
	require.Equal(t, "test/model-1", v.Result.Model)
	require.Equal(t, "Fake summary: Otters hold hands while they sleep.", v.Result.Summary)
	require.Zero(t, v.RetryCount)

	// Rate-limited once (Retry-After: 1 s), then answered.
	t0 := time.Now()
	v = done(submit("Bees dance to show where flowers are. [[llmfake:429*1 retry-after=1]]"))
	require.Equal(t, "COMPLETED", v.State)
	require.Equal(t, "openrouter", v.Result.Summarizer)
	require.Equal(t, 1, v.RetryCount)
	require.Len(t, v.ErrorHistory, 1)
	require.Equal(t, "RateLimitError", v.ErrorHistory[0].ErrorType)
	require.GreaterOrEqual(t, time.Since(t0), time.Second, "the retry waited for Retry-After")
	st := fake.Stats()
	require.Equal(t, 3, st.Requests, "one call per attempt")
	require.Equal(t, 1, st.ByKind[llmfake.Kind("429")])
}
