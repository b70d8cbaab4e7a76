package summarize_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/ratelimit"
	"github.com/taskflow/taskflow/internal/tasktypes/llm"
	"github.com/taskflow/taskflow/internal/tasktypes/llmfake"
	"github.com/taskflow/taskflow/internal/tasktypes/summarize"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

const key = "sk-or-test-KEY-42"

type testBundle struct {
	fake    *llmfake.Server
	handler *summarize.Handler
}

func setup(t *testing.T, timeout time.Duration, limiter *ratelimit.Limiter) *testBundle {
	t.Helper()
	fake := llmfake.New(llmfake.Options{APIKey: key})
	base, err := fake.Start("127.0.0.1:0")
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		require.NoError(t, fake.Close())
		hc.CloseIdleConnections()
	})
	client, err := llm.New(llm.Config{APIKey: key, BaseURL: base, Model: "fake/model", Timeout: timeout}, hc)
	require.NoError(t, err)
	h, err := summarize.New(summarize.Config{LLM: client, Limiter: limiter})
	require.NoError(t, err)
	return &testBundle{fake: fake, handler: h}
}

func newTask(content string) *task.Task {
	return &task.Task{ID: "t1", Type: summarize.TaskType, Content: content}
}

func TestLLMSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t, 5*time.Second, nil)
	require.Equal(t, []string{summarize.Dependency}, b.handler.Dependencies())
	raw, err := b.handler.ProcessTask(context.Background(), newTask("Otters hold hands while they sleep. They do it to stay together."))
	require.NoError(t, err)
	var res summarize.Result
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Equal(t, "Fake summary: Otters hold hands while they sleep.", res.Summary)
	require.Equal(t, summarize.SummarizerLLM, res.Summarizer)
	require.Equal(t, "fake/model", res.Model)
	require.NotNil(t, res.Usage)
	require.Equal(t, "Bearer "+key, b.fake.LastAuthorization())
}

// TestOutcomeMapping checks every HTTP outcome against classes.
func TestOutcomeMapping(t *testing.T) {
	t.Parallel()
	type want struct {
		permanent bool
		errType   string
		after     time.Duration
	}
	cases := []struct {
		name    string
		outcome llmfake.Outcome
		want    want
	}{
		{"RateLimited", llmfake.Outcome{Kind: llmfake.RateLimited, RetryAfter: 2 * time.Second}, want{false, task.ErrTypeRateLimit, 2 * time.Second}},
		{"RateLimitedNoHeader", llmfake.Outcome{Kind: llmfake.RateLimited}, want{false, task.ErrTypeRateLimit, 0}},
		{"ServerError", llmfake.Outcome{Kind: llmfake.ServerError}, want{false, task.ErrTypeServiceUnavailable, 0}},
		{"BadGateway", llmfake.Outcome{Kind: llmfake.BadGateway}, want{false, task.ErrTypeServiceUnavailable, 0}},
		{"Unavailable", llmfake.Outcome{Kind: llmfake.Unavailable}, want{false, task.ErrTypeServiceUnavailable, 0}},
		{"UnavailableRetryAfter", llmfake.Outcome{Kind: llmfake.Unavailable, RetryAfter: 4 * time.Second}, want{false, task.ErrTypeServiceUnavailable, 4 * time.Second}},
		{"GatewayTimeout", llmfake.Outcome{Kind: llmfake.GatewayTimeout}, want{false, task.ErrTypeNetworkTimeout, 0}},
		{"Malformed", llmfake.Outcome{Kind: llmfake.Malformed}, want{false, task.ErrTypeDefault, 0}},
		{"Hang", llmfake.Outcome{Kind: llmfake.Hang}, want{false, task.ErrTypeNetworkTimeout, 0}},
		{"BadRequest", llmfake.Outcome{Kind: llmfake.BadRequest}, want{true, task.ErrTypeInvalidInput, 0}},
		{"Unauthorized", llmfake.Outcome{Kind: llmfake.Unauthorized}, want{true, task.ErrTypeAuth, 0}},
		{"Forbidden", llmfake.Outcome{Kind: llmfake.Forbidden}, want{true, task.ErrTypeForbidden, 0}},
		{"NotFound", llmfake.Outcome{Kind: llmfake.NotFound}, want{true, task.ErrTypeNotFound, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// a short timeout only where the fake hangs: under load (the
			// whole suite on two cores) an answer can take longer than that
			timeout := 10 * time.Second
			if tc.outcome.Kind == llmfake.Hang {
				timeout = 200 * time.Millisecond
			}
			b := setup(t, timeout, nil)
			b.fake.Push(tc.outcome)
			_, err := b.handler.ProcessTask(context.Background(), newTask("Some text to summarize."))
			require.Error(t, err)
			require.NotContains(t, err.Error(), key)
			var pe *task.PermanentError
			var te *task.TransientError
			if tc.want.permanent {
				require.ErrorAs(t, err, &pe)
				require.Equal(t, tc.want.errType, pe.Type)
				return
			}
			require.ErrorAs(t, err, &te)
			require.Equal(t, tc.want.errType, te.Type)
			require.Equal(t, tc.want.after, te.After)
		})
	}
}

func TestCallerCancelIsNotClassified(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Minute, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.handler.ProcessTask(ctx, newTask("Wait for me. [[llmfake:hang]]"))
		done <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	require.NoError(t, b.fake.WaitRequests(wctx, 1))
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	var te *task.TransientError
	require.False(t, errors.As(err, &te))
}

func TestRateLimitWaitsWithoutRetry(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	lim, err := ratelimit.New(rdb, ratelimit.Config{Limit: 2, Interval: time.Hour, Name: summarize.Dependency, Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	b := setup(t, 5*time.Second, lim)
	for range 2 {
		_, err := b.handler.ProcessTask(context.Background(), newTask("Granted."))
		require.NoError(t, err)
	}
	_, err = b.handler.ProcessTask(context.Background(), newTask("Over the limit."))
	var du *task.DependencyUnavailableError
	require.ErrorAs(t, err, &du)
	require.Equal(t, summarize.Dependency, du.Dependency)
	require.Greater(t, du.Wait, 59*time.Minute)
	require.Contains(t, err.Error(), "rate limit")
	// An engine that does not know DependencyUnavailableError still retries
	// exactly when the window has room.
	var te *task.TransientError
	require.ErrorAs(t, err, &te)
	require.Equal(t, task.ErrTypeRateLimit, te.Type)
	require.Equal(t, du.Wait, te.After)
	require.Equal(t, 2, b.fake.Stats().Requests, "the limited task made no call")
}

func TestShortRateWaitHappensInHandler(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	lim, err := ratelimit.New(rdb, ratelimit.Config{Limit: 1, Interval: 100 * time.Millisecond, Name: summarize.Dependency, Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	b := setup(t, 5*time.Second, lim)
	for i := range 3 {
		_, err := b.handler.ProcessTask(context.Background(), newTask(fmt.Sprintf("Call %d.", i)))
		require.NoError(t, err, "a wait within MaxRateWait is taken in the handler")
	}
	require.Equal(t, 3, b.fake.Stats().Requests)
}

func TestInvalidInputIsPermanentBeforeAnyCall(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Second, nil)
	cases := map[string]*task.Task{
		"Empty":          {Type: summarize.TaskType},
		"Blank":          {Type: summarize.TaskType, Content: " \n\t "},
		"TooLarge":       {Type: summarize.TaskType, Content: strings.Repeat("a", summarize.DefaultMaxContentBytes+1)},
		"UnknownParam":   {Type: summarize.TaskType, Content: "x", Params: json.RawMessage(`{"colour":"red"}`)},
		"BadParamType":   {Type: summarize.TaskType, Content: "x", Params: json.RawMessage(`{"max_chars":"many"}`)},
		"NegativeBudget": {Type: summarize.TaskType, Content: "x", Params: json.RawMessage(`{"max_chars":-1}`)},
		"TwoContents":    {Type: summarize.TaskType, Content: "x", Params: json.RawMessage(`{"content":"y"}`)},
		"ParamsNotJSON":  {Type: summarize.TaskType, Content: "x", Params: json.RawMessage(`[1,2]`)},
	}
	for name, tk := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := b.handler.ProcessTask(context.Background(), tk)
			var pe *task.PermanentError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, task.ErrTypeInvalidInput, pe.Type)
			require.ErrorIs(t, err, summarize.ErrInvalidInput)
		})
	}
	require.Zero(t, b.fake.Stats().Requests)
}

func TestExtractiveHandler(t *testing.T) {
	t.Parallel()
	h, err := summarize.Open(summarize.Settings{}, nil, keyspace.Default)
	require.NoError(t, err)
	require.Empty(t, h.Dependencies(), "the extractive path needs no outside service")
	require.Equal(t, summarize.SummarizerExtractive, h.Summarizer())
	text := "Bees dance to tell other bees where flowers are. The dance shows the direction of the flowers. " +
		"It also shows how far away the flowers are. Some people keep bees in cities."
	tk := &task.Task{Type: summarize.TaskType, Params: json.RawMessage(`{"content":` + mustJSON(t, text) + `,"max_sentences":1}`)}
	raw, err := h.ProcessTask(context.Background(), tk)
	require.NoError(t, err)
	var res summarize.Result
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Equal(t, summarize.SummarizerExtractive, res.Summarizer)
	require.Empty(t, res.Model)
	require.Nil(t, res.Usage)
	require.Equal(t, "Bees dance to tell other bees where flowers are.", res.Summary)
	require.Equal(t, len([]rune(text)), res.InputChars)
}

// TestOpen: a key makes the LLM path, rate-limited through Redis; a
// limit without Redis is refused naming its variable, no limit needs
// none; a bad base URL is refused naming its variable, without the key.
func TestOpen(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	s := summarize.Settings{LLM: llm.Config{APIKey: key, BaseURL: "http://127.0.0.1:1/v1"}, RateLimit: new(5), RateInterval: 2 * time.Second}
	h, err := summarize.Open(s, rdb, keyspace.MustParse(ns))
	require.NoError(t, err)
	require.Equal(t, summarize.SummarizerLLM, h.Summarizer())
	require.Equal(t, []string{summarize.Dependency}, h.Dependencies())

	_, err = summarize.Open(s, nil, keyspace.MustParse(ns))
	require.ErrorContains(t, err, "OPENROUTER_RATE_LIMIT", "a limit needs Redis")
	_, err = summarize.Open(summarize.Settings{LLM: s.LLM}, nil, keyspace.MustParse(ns))
	require.ErrorContains(t, err, "OPENROUTER_RATE_LIMIT", "unset: the default limit, which needs Redis")
	s.RateLimit = new(0)
	_, err = summarize.Open(s, nil, keyspace.MustParse(ns))
	require.NoError(t, err, "no limit, no Redis needed")
	s.LLM.BaseURL = "not a url"
	_, err = summarize.Open(s, rdb, keyspace.MustParse(ns))
	require.ErrorContains(t, err, llm.EnvBaseURL)
	require.NotContains(t, err.Error(), key)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
