package llmfake_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/tasktypes/llmfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseMarker(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want llmfake.Marker
		has  bool
		err  string
	}{
		{"None", "plain text", llmfake.Marker{}, false, ""},
		{"Always", "x [[llmfake:503]] y", llmfake.Marker{Outcome: llmfake.Outcome{Kind: llmfake.Unavailable}}, true, ""},
		{"Counted", "[[llmfake:429*2 retry-after=3]]", llmfake.Marker{Outcome: llmfake.Outcome{Kind: llmfake.RateLimited, RetryAfter: 3 * time.Second}, Times: 2}, true, ""},
		{"Delay", "[[llmfake:ok delay=5ms]]", llmfake.Marker{Outcome: llmfake.Outcome{Kind: llmfake.OK, Delay: 5 * time.Millisecond}}, true, ""},
		{"UnknownKind", "[[llmfake:418]]", llmfake.Marker{}, true, "unknown outcome"},
		{"BadCount", "[[llmfake:500*0]]", llmfake.Marker{}, true, "count"},
		{"BadOption", "[[llmfake:500 colour=red]]", llmfake.Marker{}, true, "option"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, has, err := llmfake.ParseMarker(tc.in)
			require.Equal(t, tc.has, has)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, m)
		})
	}
	require.Equal(t, "a  b", llmfake.StripMarkers("a [[llmfake:500]] b"))
}

func TestParseRatio(t *testing.T) {
	t.Parallel()
	r, err := llmfake.ParseRatio("ok=0.8, 429:2=0.1,503=0.1")
	require.NoError(t, err)
	require.Len(t, r, 3)
	require.Equal(t, llmfake.RateLimited, r[1].Kind)
	require.Equal(t, 2*time.Second, r[1].RetryAfter)
	for _, bad := range []string{"ok", "ok=-1", "nope=1", "ok=0", "429:x=1", "ok=NaN"} {
		_, err := llmfake.ParseRatio(bad)
		require.Error(t, err, bad)
	}
}

func TestInvalidOptionsPanic(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() {
		llmfake.New(llmfake.Options{Ratio: []llmfake.Weighted{{Outcome: llmfake.Outcome{Kind: "teapot"}, Weight: 1}}})
	})
	fake := llmfake.New(llmfake.Options{})
	require.Panics(t, func() {
		fake.SetRatio([]llmfake.Weighted{{Outcome: llmfake.Outcome{Kind: llmfake.OK}, Weight: -1}})
	})
}

func TestServerRejectsBadRequests(t *testing.T) {
	t.Parallel()
	fake := llmfake.New(llmfake.Options{})
	base, err := fake.Start("127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, fake.Close()) }()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	for _, tc := range []struct {
		path, body string
		want       int
	}{
		{"/chat/completions", `{}`, 400},
		{"/chat/completions", `nope`, 400},
		{"/chat/completions", `{"messages":[{"role":"user","content":"[[llmfake:bogus]]"}]}`, 400},
		{"/embeddings", `{}`, 404},
		{"/chat/completions", `{"messages":[{"role":"user","content":"Fine."}]}`, 200},
	} {
		resp, err := hc.Post(base+tc.path, "application/json", strings.NewReader(tc.body))
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, tc.want, resp.StatusCode, tc.path+" "+tc.body)
	}
}

func TestCloseReleasesHang(t *testing.T) {
	t.Parallel()
	fake := llmfake.New(llmfake.Options{})
	base, err := fake.Start("127.0.0.1:0")
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	done := make(chan error, 1)
	go func() {
		resp, err := hc.Post(base+"/chat/completions", "application/json",
			strings.NewReader(`{"messages":[{"role":"user","content":"[[llmfake:hang]]"}]}`))
		if err == nil {
			_ = resp.Body.Close()
		}
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fake.WaitRequests(ctx, 1))
	require.NoError(t, fake.Close())
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Close did not release the hanging request")
	}
}

func FuzzParseMarker(f *testing.F) {
	for _, s := range []string{"", "[[llmfake:ok]]", "[[llmfake:429*3 retry-after=2 delay=1ms]]", "[[llmfake:]]", "[[llmfake:*]]", "[[llmfake:hang*99999999999]]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, has, err := llmfake.ParseMarker(s)
		if !has && err != nil {
			t.Fatalf("error without a marker: %v", err)
		}
		if err == nil && has && (m.Times < 0 || m.Delay < 0 || m.RetryAfter < 0) {
			t.Fatalf("negative fields: %+v", m)
		}
		_ = llmfake.StripMarkers(s)
	})
}

func FuzzParseRatio(f *testing.F) {
	for _, s := range []string{"", "ok=1", "ok=0.5,429:1=0.5", "=,", "ok=1e309"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := llmfake.ParseRatio(s)
		if err != nil {
			return
		}
		for _, w := range r {
			if w.Weight < 0 {
				t.Fatalf("negative weight in %q", s)
			}
		}
	})
}
