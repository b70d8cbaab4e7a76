package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

// newMCPCommand is `taskflow-bench mcp`: tool calls over streamable HTTP
// from MCP sessions of the official Go SDK's client, as agents make them,
// each call's latency measured from its slot.
func newMCPCommand(m *Main) *cobra.Command {
	var (
		rate        float64
		duration    time.Duration
		concurrency int
		asJSON      bool
		tool        string
		args        string
		nsessions   int
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Load-test the MCP server (/mcp): tool calls from --concurrency MCP sessions at --rate calls/s (open loop), or as fast as they go",
		Long: `Opens --concurrency MCP sessions on the API's /mcp (as --sessions taskflow
sessions, made with POST /api/v1/sessions, as agents are), then
calls --tool with --args from them for --duration. At --rate calls/s (open
loop) a call's latency counts from its slot, so a slow server cannot hide
behind busy senders. The default, noop_task_tool, is a submit tool: the
call answers once the task is queued.`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.Float64Var(&rate, "rate", 200, "tool calls per second (open loop); 0 = as fast as --concurrency allows")
	f.DurationVar(&duration, "duration", 10*time.Second, "how long to call")
	f.IntVar(&concurrency, "concurrency", 16, "MCP sessions calling at once")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&tool, "tool", "noop_task_tool", "the tool to call")
	f.StringVar(&args, "args", "{}", "the tool's arguments (a JSON object)")
	f.IntVar(&nsessions, "sessions", 4, "taskflow sessions to open (POST /api/v1/sessions, rate-limited per address); the MCP sessions take them in turn")
	return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, _ []string) error {
		if concurrency < 1 || duration <= 0 || rate < 0 || nsessions < 1 {
			return &ExitError{Code: 2, Err: errors.New("--concurrency and --sessions must be ≥ 1, --duration > 0, --rate ≥ 0")}
		}
		tokens := make([]string, min(nsessions, concurrency))
		for i := range tokens {
			t, err := newSessionToken(ctx, c)
			if err != nil {
				return err
			}
			tokens[i] = t
		}
		var arguments map[string]any
		if err := json.Unmarshal([]byte(args), &arguments); err != nil {
			return &ExitError{Code: 2, Err: fmt.Errorf("--args: not a JSON object: %w", err)}
		}
		sessions := make([]*mcp.ClientSession, concurrency)
		defer func() {
			for _, cs := range sessions {
				if cs != nil {
					_ = cs.Close()
				}
			}
		}()
		tr := &http.Transport{MaxIdleConnsPerHost: concurrency * 4}
		defer tr.CloseIdleConnections()
		for i := range sessions {
			tok := tokens[i%len(tokens)]
			client := mcp.NewClient(&mcp.Implementation{Name: "taskflow-bench", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.base + "/mcp",
				HTTPClient: &http.Client{Transport: bearerTransport{tok, tr}}}, nil)
			if err != nil {
				return fmt.Errorf("MCP session %d: %w", i, err)
			}
			sessions[i] = cs
		}
		res := drive(ctx, rate, duration, concurrency, func(ctx context.Context) error {
			r, err := sessions[senderIndex(ctx)].CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
			if err != nil {
				return err
			}
			if r.IsError {
				b, _ := json.Marshal(r.StructuredContent)
				return fmt.Errorf("tool error: %s", b)
			}
			return nil
		})
		res.Mode = "mcp-" + res.Mode
		if asJSON {
			b, _ := json.Marshal(res)
			_, err := fmt.Fprintln(m.Stdout, string(b))
			return err
		}
		_, err := fmt.Fprintf(m.Stdout, "%s %s: %d sent, %d ok, %d errors in %.1fs = %.0f calls/s; latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms\n",
			res.Mode, tool, res.Sent, res.OK, res.Errors, res.Duration, res.Rate, res.P50ms, res.P90ms, res.P99ms, res.P999ms, res.Maxms)
		if res.FirstError != "" {
			fmt.Fprintln(m.Stderr, "first error:", res.FirstError)
		}
		return err
	})
}

// bearerTransport adds the token to every request.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// newSessionToken opens a session (POST /api/v1/sessions) and returns its
// token.
func newSessionToken(ctx context.Context, c *apiClient) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", c.base+"/api/v1/sessions", nil)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var s struct {
		Token string `json:"token"`
	}
	if res.StatusCode != http.StatusCreated || json.NewDecoder(res.Body).Decode(&s) != nil || s.Token == "" {
		return "", fmt.Errorf("POST /api/v1/sessions: HTTP %d", res.StatusCode)
	}
	return s.Token, nil
}
