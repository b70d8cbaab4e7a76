package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/platform/config"
	"github.com/taskflow/taskflow/internal/platform/tracing"
)

// apiClient is the HTTP client the client commands share.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

// APIError is an error answer of the API.
type APIError struct {
	Status  int
	Code    string
	Message string
	Field   string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s (HTTP %d %s)", e.Message, e.Status, e.Code)
	if e.Field != "" {
		s += " [field " + e.Field + "]"
	}
	switch e.Status {
	case http.StatusUnauthorized:
		s += "; set TASKFLOW_TOKEN (or --token) to a session token or the admin key"
	case http.StatusForbidden:
		s += "; the token in use (TASKFLOW_TOKEN, --token) does not allow this"
	}
	return s
}

// clientCommand builds a client subcommand: it takes the client settings
// (TASKFLOW_URL, TASKFLOW_TOKEN / TASKFLOW_ADMIN_KEY, --url, --token) and
// hands run a ready client. Only those settings concern it: a wrong
// server setting in the environment does not stop a client command.
func clientCommand(m *Main, cmd *cobra.Command, run func(ctx context.Context, c *apiClient, args []string) error) *cobra.Command {
	cfg, _ := m.config()
	cfg.BindFlags(cmd.Flags(), config.ClientFlags...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := &apiClient{base: strings.TrimRight(cfg.APIURL, "/"), token: cfg.ClientToken(), http: &http.Client{Timeout: 30 * time.Second}}
		return run(cmd.Context(), c, args)
	}
	return cmd
}

// do sends a request and decodes a JSON answer into out (when not nil).
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	raw, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("unexpected answer from %s %s: %w", method, path, err)
		}
	}
	return nil
}

// get fetches path and returns the answer's body as it is (a file).
func (c *apiClient) get(ctx context.Context, path string) ([]byte, error) {
	return c.send(ctx, "GET", path, nil)
}

// send sends a request and returns the answer's body; an answer from 400
// up is an *APIError.
func (c *apiClient) send(ctx context.Context, method, path string, body any) ([]byte, error) {
	raw, _, err := c.sendWith(ctx, method, path, body, nil)
	return raw, err
}

// sendWith is send with extra request headers; it returns the answer's
// headers too.
func (c *apiClient) sendWith(ctx context.Context, method, path string, body any, hdr http.Header) ([]byte, http.Header, error) {
	raw, res, err := c.roundTrip(ctx, method, path, body, hdr)
	if res == nil {
		return raw, nil, err
	}
	return raw, res.Header, err
}

func (c *apiClient) roundTrip(ctx context.Context, method, path string, body any, hdr http.Header) ([]byte, *http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if tp := tracing.Traceparent(ctx); tp != "" { // the API's spans (and a submitted task) join the caller's trace
		req.Header.Set("traceparent", tp)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot reach the taskflow API at %s (is `taskflow dev` or `taskflow api` running? set TASKFLOW_URL): %w", c.base, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, res, err
	}
	if res.StatusCode >= 400 {
		var env struct {
			Error struct{ Code, Message, Field string } `json:"error"`
		}
		if json.Unmarshal(raw, &env) == nil && env.Error.Code != "" {
			return nil, res, &APIError{Status: res.StatusCode, Code: env.Error.Code, Message: env.Error.Message, Field: env.Error.Field}
		}
		return nil, res, &APIError{Status: res.StatusCode, Code: "http_error", Message: strings.TrimSpace(string(raw))}
	}
	return raw, res, nil
}

// taskDoc is the part of a task the client commands show.
type taskDoc struct {
	ID          string          `json:"task_id"`
	Type        string          `json:"task_type"`
	State       string          `json:"state"`
	RetryCount  int             `json:"retry_count"`
	MaxRetries  int             `json:"max_retries"`
	LastError   string          `json:"last_error"`
	ErrorType   string          `json:"error_type"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	CompletedAt *time.Time      `json:"completed_at"`
	Result      json.RawMessage `json:"result"`
	WaitingFor  *struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"waiting_for"`
	SessionID string `json:"session_id"`
	// Notifications are the session's, delivered on this response.
	Notifications []struct {
		TaskID  string `json:"task_id"`
		Message string `json:"message"`
	} `json:"notifications"`
}

// shownState is the task's state as a person reads it: an external task
// no live service takes is "WAITING FOR SERVICE" (its state is PENDING or
// ACTIVE, which would read as queued or running).
func (t taskDoc) shownState() string {
	if t.WaitingFor != nil && t.WaitingFor.Reason == "no_service" {
		return "WAITING FOR SERVICE (" + t.State + ")"
	}
	return t.State
}

func short(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
