// Package llm is a small client for one endpoint of an OpenAI-compatible API
// (OpenRouter's): POST {base}/chat/completions. It reports failures as typed
// errors (APIError with the HTTP status and Retry-After, TransportError with
// a timeout flag, ErrMalformedResponse) and leaves their meaning for the task
// engine to the caller. The API key never appears in an error string.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/taskflow/taskflow/internal/platform/seconds"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one chat-completions call. Model overrides the client's model
// when set; zero MaxTokens/Temperature are left to the server.
type Request struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
}

// Usage is the token accounting the server reports.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Response is what a successful call returns: the first choice's text.
type Response struct {
	ID           string
	Model        string
	Content      string
	FinishReason string
	Usage        Usage
}

// Client calls the chat-completions endpoint. It is safe for concurrent use.
type Client struct {
	cfg  Config
	http *http.Client
}

// New returns a client for cfg (defaults applied, then validated). httpClient
// may be nil (a client with its own transport is made); its Timeout is not
// used: each call is bounded by cfg.Timeout through its context.
func New(cfg Config, httpClient *http.Client) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if httpClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		httpClient = &http.Client{Transport: tr}
	}
	return &Client{cfg: cfg, http: httpClient}, nil
}

// String describes the client without its API key (also for %+v, %#v
// and log/slog: the key must never reach a log).
func (c *Client) String() string { return "llm.Client{" + c.cfg.String() + "}" }

// GoString is String.
func (c *Client) GoString() string { return c.String() }

// LogValue is String, for log/slog.
func (c *Client) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Model is the model the client asks for by default.
func (c *Client) Model() string { return c.cfg.Model }

// Complete makes one chat-completions call. A cancelled ctx returns an error
// wrapping ctx.Err(); the client's own timeout returns a TransportError with
// Timeout set.
func (c *Client) Complete(ctx context.Context, req Request) (*Response, error) {
	if req.Model == "" {
		req.Model = c.cfg.Model
	}
	if len(req.Messages) == 0 {
		return nil, errors.New("llm: request has no messages")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("llm: encode request: %w", err)
	}
	callCtx := ctx
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeoutCause(ctx, c.cfg.Timeout, errClientTimeout)
		defer cancel()
	}
	hreq, err := http.NewRequestWithContext(callCtx, http.MethodPost, c.cfg.BaseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("llm: build request: %w", err)
	}
	hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.cfg.Referer != "" {
		hreq.Header.Set("HTTP-Referer", c.cfg.Referer)
	}
	if c.cfg.Title != "" {
		hreq.Header.Set("X-Title", c.cfg.Title)
	}

	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, c.transportError(ctx, callCtx, "send", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, c.transportError(ctx, callCtx, "read response", err)
	}
	if int64(len(raw)) > c.cfg.MaxResponseBytes {
		return nil, fmt.Errorf("%w: body larger than %d bytes", ErrMalformedResponse, c.cfg.MaxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &APIError{
			StatusCode: resp.StatusCode,
			Message:    c.redact(errorMessage(raw, resp.Status)),
			RetryAfter: ParseRetryAfter(resp.Header.Get("Retry-After"), c.cfg.Now()),
		}
	}
	out, err := ParseResponse(raw)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) {
			ae.Message = c.redact(ae.Message)
			return nil, ae
		}
		return nil, err
	}
	return out, nil
}

var errClientTimeout = errors.New("llm: client timeout")

// transportError turns a failed send/read into the caller's own
// cancellation (ctx done) or a TransportError.
func (c *Client) transportError(parent, call context.Context, op string, err error) error {
	if parent.Err() != nil {
		return fmt.Errorf("llm: %s: %w", op, parent.Err())
	}
	timeout := errors.Is(context.Cause(call), errClientTimeout)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		timeout = true
	}
	msg := err.Error()
	if timeout {
		msg = fmt.Sprintf("no answer within %s", c.cfg.Timeout)
	}
	return &TransportError{Op: op, Timeout: timeout, Message: c.redact(msg)}
}

// minRedactLen is the shortest key redact looks for: a shorter "key" (a
// demo's "x" for the fake server) is no secret, and replacing it would
// garble every message ("fa[redacted]e 429" for the key "k").
const minRedactLen = 8

// redact removes the API key from s, should a server or a transport echo it.
func (c *Client) redact(s string) string {
	if len(c.cfg.APIKey) < minRedactLen {
		return s
	}
	return strings.ReplaceAll(s, c.cfg.APIKey, "[redacted]")
}

// wire is the response body of chat completions (and of an error).
type wire struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage Usage      `json:"usage"`
	Error *wireError `json:"error"`
}

type wireError struct {
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code"`
}

// ParseResponse decodes a 2xx chat-completions body. A body that is not the
// expected JSON, or has no choice with content, is ErrMalformedResponse; a 2xx
// body carrying an error object with a numeric code (OpenRouter does this for
// upstream failures) is an APIError with that code.
func ParseResponse(raw []byte) (*Response, error) {
	var w wire
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrMalformedResponse, shorten(err.Error(), 200))
	}
	if w.Error != nil && len(w.Choices) == 0 {
		code := 0
		_ = json.Unmarshal(w.Error.Code, &code)
		if code < 400 || code > 599 {
			code = http.StatusBadGateway
		}
		return nil, &APIError{StatusCode: code, Message: shorten(w.Error.Message, 500)}
	}
	if len(w.Choices) == 0 || w.Choices[0].Message.Content == nil {
		return nil, fmt.Errorf("%w: no choice with message content", ErrMalformedResponse)
	}
	return &Response{
		ID:           w.ID,
		Model:        w.Model,
		Content:      *w.Choices[0].Message.Content,
		FinishReason: w.Choices[0].FinishReason,
		Usage:        w.Usage,
	}, nil
}

// errorMessage extracts error.message from an error body, or falls back to
// the status line.
func errorMessage(raw []byte, status string) string {
	var w wire
	if json.Unmarshal(raw, &w) == nil && w.Error != nil && w.Error.Message != "" {
		return shorten(w.Error.Message, 500)
	}
	return status
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// ParseRetryAfter reads a Retry-After header: delay seconds (integer or
// decimal) or an HTTP-date relative to now. Missing, malformed or past
// values give 0; values are capped at one hour.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := ParseSeconds(v); err == nil {
		d = secs
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	if d < 0 {
		return 0
	}
	return min(d, time.Hour)
}

// ParseSeconds reads "30", "2.5" (seconds) or a Go duration ("1m30s"),
// checked for overflow (seconds.Parse).
func ParseSeconds(v string) (time.Duration, error) { return seconds.Parse(v) }
