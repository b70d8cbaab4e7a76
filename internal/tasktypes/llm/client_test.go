package llm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/tasktypes/llm"
	"github.com/taskflow/taskflow/internal/tasktypes/llmfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "sk-test-SECRET-0123456789"

type testBundle struct {
	fake   *llmfake.Server
	client *llm.Client
	http   *http.Client
}

func setup(t *testing.T, cfg llm.Config) *testBundle {
	t.Helper()
	fake := llmfake.New(llmfake.Options{APIKey: testKey})
	base, err := fake.Start("127.0.0.1:0")
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		require.NoError(t, fake.Close())
		hc.CloseIdleConnections()
	})
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	cfg.BaseURL = base
	c, err := llm.New(cfg, hc)
	require.NoError(t, err)
	return &testBundle{fake: fake, client: c, http: hc}
}

func ask(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: "system", Content: "Summarize."}, {Role: "user", Content: text}}}
}

func TestCompleteSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t, llm.Config{Model: "test/model"})
	resp, err := b.client.Complete(context.Background(), ask("The cat sat on the mat. It was warm."))
	require.NoError(t, err)
	require.Equal(t, "Fake summary: The cat sat on the mat.", resp.Content)
	require.Equal(t, "test/model", resp.Model)
	require.Equal(t, "stop", resp.FinishReason)
	require.Positive(t, resp.Usage.TotalTokens)
	require.Equal(t, "Bearer "+testKey, b.fake.LastAuthorization())
}

func TestCompleteStatuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		outcome    llmfake.Outcome
		status     int
		retryAfter time.Duration
	}{
		{"RateLimitedWithRetryAfter", llmfake.Outcome{Kind: llmfake.RateLimited, RetryAfter: 7 * time.Second}, 429, 7 * time.Second},
		{"RateLimitedWithout", llmfake.Outcome{Kind: llmfake.RateLimited}, 429, 0},
		{"ServerError", llmfake.Outcome{Kind: llmfake.ServerError}, 500, 0},
		{"BadGateway", llmfake.Outcome{Kind: llmfake.BadGateway}, 502, 0},
		{"Unavailable", llmfake.Outcome{Kind: llmfake.Unavailable, RetryAfter: 3 * time.Second}, 503, 3 * time.Second},
		{"GatewayTimeout", llmfake.Outcome{Kind: llmfake.GatewayTimeout}, 504, 0},
		{"BadRequest", llmfake.Outcome{Kind: llmfake.BadRequest}, 400, 0},
		{"Unauthorized", llmfake.Outcome{Kind: llmfake.Unauthorized}, 401, 0},
		{"Forbidden", llmfake.Outcome{Kind: llmfake.Forbidden}, 403, 0},
		{"NotFound", llmfake.Outcome{Kind: llmfake.NotFound}, 404, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, llm.Config{})
			b.fake.Push(tc.outcome)
			_, err := b.client.Complete(context.Background(), ask("Some text."))
			var ae *llm.APIError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, tc.status, ae.StatusCode)
			require.Equal(t, tc.retryAfter, ae.RetryAfter)
			require.Contains(t, ae.Message, "fake "+string(tc.outcome.Kind))
			require.NotContains(t, err.Error(), testKey)
			// The script is used up: the next call succeeds.
			_, err = b.client.Complete(context.Background(), ask("Some text."))
			require.NoError(t, err)
		})
	}
}

func TestCompleteWrongKey(t *testing.T) {
	t.Parallel()
	b := setup(t, llm.Config{APIKey: "sk-wrong-key-777"})
	_, err := b.client.Complete(context.Background(), ask("Hello."))
	var ae *llm.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 401, ae.StatusCode)
	require.NotContains(t, err.Error(), "sk-wrong-key-777")
}

// TestShortKeyDoesNotGarbleMessages: a one-letter demo key is not
// "redacted" out of every word of an error message.
func TestShortKeyDoesNotGarbleMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, llm.Config{APIKey: "k"})
	_, err := b.client.Complete(context.Background(), ask("Hello."))
	var ae *llm.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 401, ae.StatusCode)
	require.NotContains(t, err.Error(), "[redacted]")
	require.Contains(t, err.Error(), "key", "the message keeps its words")
}

func TestCompleteTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, llm.Config{Timeout: 150 * time.Millisecond})
	b.fake.Push(llmfake.Outcome{Kind: llmfake.Hang})
	start := time.Now()
	_, err := b.client.Complete(context.Background(), ask("Hang please."))
	var te *llm.TransportError
	require.ErrorAs(t, err, &te)
	require.True(t, te.Timeout, "a hang past the timeout is a timeout: %v", err)
	require.Less(t, time.Since(start), 10*time.Second, "the client gave up near its timeout")
	require.NotContains(t, err.Error(), testKey)
}

func TestCompleteDelayWithinTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, llm.Config{Timeout: 10 * time.Second})
	_, err := b.client.Complete(context.Background(), ask("Slow. [[llmfake:ok delay=20ms]]"))
	require.NoError(t, err)
}

func TestCompleteCallerCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, llm.Config{Timeout: time.Minute})
	b.fake.Push(llmfake.Outcome{Kind: llmfake.Hang})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the fake has the request.
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		_ = b.fake.WaitRequests(wctx, 1)
		cancel()
	}()
	_, err := b.client.Complete(ctx, ask("Cancel me."))
	require.ErrorIs(t, err, context.Canceled)
	var te *llm.TransportError
	require.False(t, errors.As(err, &te), "the caller's own cancel is not a transport failure")
}

func TestCompleteConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	c, err := llm.New(llm.Config{APIKey: testKey, BaseURL: "http://" + addr + "/v1"}, nil)
	require.NoError(t, err)
	_, err = c.Complete(context.Background(), ask("Anyone?"))
	var te *llm.TransportError
	require.ErrorAs(t, err, &te)
	require.False(t, te.Timeout)
	require.NotContains(t, err.Error(), testKey)
}

func TestCompleteMalformed(t *testing.T) {
	t.Parallel()
	b := setup(t, llm.Config{})
	b.fake.Push(llmfake.Outcome{Kind: llmfake.Malformed})
	_, err := b.client.Complete(context.Background(), ask("Text."))
	require.ErrorIs(t, err, llm.ErrMalformedResponse)
}

func TestRatioAndMarkers(t *testing.T) {
	t.Parallel()
	b := setup(t, llm.Config{})
	// A counted marker fails the first two requests with this prompt.
	for i := range 3 {
		_, err := b.client.Complete(context.Background(), ask("Twice. [[llmfake:503*2]]"))
		if i < 2 {
			var ae *llm.APIError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, 503, ae.StatusCode)
		} else {
			require.NoError(t, err)
		}
	}
	ratio, err := llmfake.ParseRatio("ok=1,500=1")
	require.NoError(t, err)
	b.fake.SetRatio(ratio)
	var ok, failed int
	for range 200 {
		if _, err := b.client.Complete(context.Background(), ask("Ratio.")); err != nil {
			failed++
		} else {
			ok++
		}
	}
	require.InDelta(t, 100, ok, 30, "about half succeed")
	require.Equal(t, 200, ok+failed)
	st := b.fake.Stats()
	require.Equal(t, failed, st.ByKind[llmfake.ServerError])
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		in   string
		want time.Duration
	}{
		{"Empty", "", 0},
		{"Seconds", "12", 12 * time.Second},
		{"Decimal", "1.5", 1500 * time.Millisecond},
		{"HTTPDate", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"PastDate", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"Garbage", "soon", 0},
		{"Negative", "-5", 0},
		{"Capped", "999999", time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, llm.ParseRetryAfter(tc.in, now))
		})
	}
}

func TestParseResponse(t *testing.T) {
	t.Parallel()
	_, err := llm.ParseResponse([]byte(`{"choices":[]}`))
	require.ErrorIs(t, err, llm.ErrMalformedResponse)
	_, err = llm.ParseResponse([]byte(`not json`))
	require.ErrorIs(t, err, llm.ErrMalformedResponse)
	_, err = llm.ParseResponse([]byte(`{"error":{"message":"upstream overloaded","code":503}}`))
	var ae *llm.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 503, ae.StatusCode)
	r, err := llm.ParseResponse([]byte(`{"id":"x","model":"m","choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
	require.NoError(t, err)
	require.Equal(t, "hi", r.Content)
}

func TestConfig(t *testing.T) {
	t.Parallel()
	cfg := llm.Config{APIKey: testKey, Timeout: 2500 * time.Millisecond}.WithDefaults()
	require.Equal(t, 2500*time.Millisecond, cfg.Timeout)
	require.Equal(t, llm.DefaultBaseURL, cfg.BaseURL)
	require.Equal(t, llm.DefaultModel, cfg.Model)
	require.NoError(t, cfg.Validate())
	require.NotContains(t, cfg.String(), testKey)

	require.ErrorIs(t, llm.Config{}.WithDefaults().Validate(), llm.ErrNoAPIKey)
	bad := llm.Config{APIKey: "k", BaseURL: "ftp://x"}.WithDefaults()
	require.ErrorContains(t, bad.Validate(), llm.EnvBaseURL)
	creds := llm.Config{APIKey: "k", BaseURL: "https://u:p@x/v1"}.WithDefaults()
	err := creds.Validate()
	require.Error(t, err)
	require.False(t, strings.Contains(err.Error(), "u:p"))
}

func TestKeyNeverPrinted(t *testing.T) {
	t.Parallel()
	cfg := llm.Config{APIKey: testKey, BaseURL: "http://127.0.0.1:1/v1"}
	c, err := llm.New(cfg, nil)
	require.NoError(t, err)
	var logs strings.Builder
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	log.Info("config", "cfg", cfg, "client", c)
	log.Info("text", "cfg", fmt.Sprint(cfg), "client", fmt.Sprint(c))
	for _, s := range []string{
		logs.String(),
		fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg),
		fmt.Sprintf("%v %+v %#v %s", c, c, c, c),
		fmt.Sprintf("%v", []any{cfg, c}),
	} {
		require.NotContains(t, s, testKey)
		require.Contains(t, s, "APIKey:set")
	}
}

func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(`{"choices":[{"message":{"content":"hi"}}]}`))
	f.Add([]byte(`{"error":{"message":"x","code":"429"}}`))
	f.Add([]byte(`{"error":{"message":"x","code":429}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := llm.ParseResponse(raw)
		if err == nil && r == nil {
			t.Fatal("nil response without error")
		}
		var ae *llm.APIError
		if errors.As(err, &ae) && (ae.StatusCode < 400 || ae.StatusCode > 599) {
			t.Fatalf("API error with status %d", ae.StatusCode)
		}
	})
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "1", "1.5", "Wed, 21 Oct 2015 07:28:00 GMT", "-1", "1e400", "+.", "99999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d := llm.ParseRetryAfter(s, now)
		if d < 0 || d > time.Hour {
			t.Fatalf("ParseRetryAfter(%q) = %s, outside [0, 1h]", s, d)
		}
	})
}

// BenchmarkComplete is one call to the local fake over loopback: the
// client's own overhead (encode, HTTP, decode), not an LLM's latency.
func BenchmarkComplete(b *testing.B) {
	fake := llmfake.New(llmfake.Options{})
	base, err := fake.Start("127.0.0.1:0")
	require.NoError(b, err)
	defer func() { require.NoError(b, fake.Close()) }()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer hc.CloseIdleConnections()
	c, err := llm.New(llm.Config{APIKey: testKey, BaseURL: base}, hc)
	require.NoError(b, err)
	req := ask(strings.Repeat("A sentence of the text to summarize. ", 50))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
