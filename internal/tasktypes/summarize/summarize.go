// Package summarize is the "summarize" task type. With an LLM
// client (OPENROUTER_API_KEY set) it makes one chat-completions call per
// attempt, under a fleet-wide rate limit, and maps the call's outcome onto
// the engine's error classes; without one it runs the built-in extractive
// summarizer, so the product works offline. The result says which
// summarizer produced it.
package summarize

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskflow/taskflow/internal/engine/ratelimit"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/tasktypes/llm"
	"github.com/taskflow/taskflow/task"
)

// TaskType is the task_type this package handles.
const TaskType = "summarize"

// Dependency names the outside service the LLM path needs: the circuit
// breaker and the rate limit are kept under this name.
const Dependency = "openrouter"

// Names of the summarizers, as written in a result's "summarizer" field.
const (
	SummarizerExtractive = "extractive"
	SummarizerLLM        = "openrouter"
)

// DefaultMaxContentBytes bounds the text of one task.
const DefaultMaxContentBytes = 1 << 20

// DefaultSystemPrompt is the instruction sent with each LLM call.
const DefaultSystemPrompt = "You summarize texts. Write a short, faithful summary of the user's text " +
	"in the text's own language, in at most five sentences. Reply with the summary only."

// Config configures a Handler.
type Config struct {
	// LLM is the chat-completions client. Default nil: the extractive
	// summarizer is used and no outside service is needed.
	LLM *llm.Client
	// Limiter is the fleet-wide rate limit on LLM calls. Default nil: no limit.
	Limiter *ratelimit.Limiter
	// MaxContentBytes rejects (permanently, before any call) longer texts.
	// Default DefaultMaxContentBytes (1 MiB).
	MaxContentBytes int
	// Budget bounds extractive summaries when a task's params do not.
	// Default: Budget's own defaults (≤ 5 sentences, ≤ 800 characters).
	Budget Budget
	// SystemPrompt is the instruction sent with each LLM call. Default
	// DefaultSystemPrompt.
	SystemPrompt string
	// MaxTokens bounds the LLM's answer. Default 512.
	MaxTokens int
	// MaxRateWait is how long a task may wait in its handler for a
	// rate-limit grant; a longer wait returns a
	// task.DependencyUnavailableError so the worker reschedules the task
	// without spending a retry. Default 2 s; negative means never wait.
	MaxRateWait time.Duration
}

// DefaultMaxRateWait is Config.MaxRateWait's default.
const DefaultMaxRateWait = 2 * time.Second

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.MaxContentBytes == 0 {
		c.MaxContentBytes = DefaultMaxContentBytes
	}
	if c.SystemPrompt == "" {
		c.SystemPrompt = DefaultSystemPrompt
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = 512
	}
	if c.MaxRateWait == 0 {
		c.MaxRateWait = DefaultMaxRateWait
	}
	return c
}

// Validate says what is wrong with c (after WithDefaults).
func (c Config) Validate() error {
	switch {
	case c.MaxContentBytes < 1:
		return fmt.Errorf("summarize: MaxContentBytes %d must be positive", c.MaxContentBytes)
	case c.MaxTokens < 1:
		return fmt.Errorf("summarize: MaxTokens %d must be positive", c.MaxTokens)
	case c.Budget.MaxChars < 0 || c.Budget.MaxSentences < 0:
		return errors.New("summarize: budget limits must not be negative")
	}
	return nil
}

// Handler is the worker.Handler of task_type "summarize".
type Handler struct {
	cfg Config
}

// New returns a Handler for cfg.
func New(cfg Config) (*Handler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Handler{cfg: cfg}, nil
}

// Summarizer is the name of the summarizer this handler uses.
func (h *Handler) Summarizer() string {
	if h.cfg.LLM != nil {
		return SummarizerLLM
	}
	return SummarizerExtractive
}

// Dependencies lists the outside services a task of this type needs: the
// LLM's when a client is configured, none for the extractive summarizer.
// While a dependency's circuit breaker is open the worker should not start
// such a task.
func (h *Handler) Dependencies() []string {
	if h.cfg.LLM != nil {
		return []string{Dependency}
	}
	return nil
}

// Params are the optional task params. Content may come here instead of in
// the task's content field (generic task creation).
type Params struct {
	Content      string `json:"content,omitempty"`
	MaxSentences *int   `json:"max_sentences,omitempty"` // 1..100
	MaxChars     *int   `json:"max_chars,omitempty"`     // 1..100000
}

// Result is the task's result JSON.
type Result struct {
	Summary    string     `json:"summary"`
	Summarizer string     `json:"summarizer"`
	Model      string     `json:"model,omitempty"`
	InputChars int        `json:"input_chars"`
	Usage      *llm.Usage `json:"usage,omitempty"`
}

// ProcessTask summarizes t's content.
func (h *Handler) ProcessTask(ctx context.Context, t *task.Task) (json.RawMessage, error) {
	text, budget, err := h.input(t)
	if err != nil {
		return nil, err
	}
	var res Result
	if h.cfg.LLM == nil {
		res = Result{Summary: Extract(text, budget), Summarizer: SummarizerExtractive}
	} else {
		res, err = h.callLLM(ctx, text)
		if err != nil {
			return nil, err
		}
	}
	res.InputChars = utf8.RuneCountInString(text)
	out, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("summarize: encode result: %w", err)
	}
	return out, nil
}

// ErrInvalidInput is wrapped by every input error (all permanent).
var ErrInvalidInput = errors.New("summarize: invalid input")

func invalid(format string, args ...any) error {
	return &task.PermanentError{Type: task.ErrTypeInvalidInput,
		Err: fmt.Errorf("%w: %s", ErrInvalidInput, fmt.Sprintf(format, args...))}
}

// input reads and checks the text and budget of t.
func (h *Handler) input(t *task.Task) (string, Budget, error) {
	var p Params
	if raw := bytes.TrimSpace(t.Params); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return "", Budget{}, invalid("params: %v (allowed: content, max_sentences, max_chars)", err)
		}
	}
	text := t.Content
	if text == "" {
		text = p.Content
	} else if p.Content != "" {
		return "", Budget{}, invalid("content is given both as the task's content and in params")
	}
	if len(text) > h.cfg.MaxContentBytes {
		return "", Budget{}, invalid("content is %d bytes; the limit is %d", len(text), h.cfg.MaxContentBytes)
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	if strings.TrimSpace(text) == "" {
		return "", Budget{}, invalid("content is empty")
	}
	if p.MaxSentences != nil && (*p.MaxSentences < 1 || *p.MaxSentences > 100) {
		return "", Budget{}, invalid("params.max_sentences must be between 1 and 100")
	}
	if p.MaxChars != nil && (*p.MaxChars < 1 || *p.MaxChars > 100_000) {
		return "", Budget{}, invalid("params.max_chars must be between 1 and 100000")
	}
	b := h.cfg.Budget
	if p.MaxSentences != nil {
		b.MaxSentences = *p.MaxSentences
	}
	if p.MaxChars != nil {
		b.MaxChars = *p.MaxChars
	}
	return text, b, nil
}

// callLLM takes a rate-limit grant and makes one chat-completions call.
func (h *Handler) callLLM(ctx context.Context, text string) (Result, error) {
	if err := h.acquire(ctx); err != nil {
		return Result{}, err
	}
	resp, err := h.cfg.LLM.Complete(ctx, llm.Request{
		Messages: []llm.Message{
			{Role: "system", Content: h.cfg.SystemPrompt},
			{Role: "user", Content: text},
		},
		MaxTokens: h.cfg.MaxTokens,
	})
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, err // cancelled or past the task's deadline: the engine decides
		}
		return Result{}, Classify(err)
	}
	summary := strings.TrimSpace(resp.Content)
	if summary == "" {
		return Result{}, task.Transient(task.ErrTypeDefault, fmt.Errorf("%w: empty summary", llm.ErrMalformedResponse))
	}
	model := resp.Model
	if model == "" {
		model = h.cfg.LLM.Model()
	}
	return Result{Summary: summary, Summarizer: SummarizerLLM, Model: model, Usage: &resp.Usage}, nil
}

// acquire takes a rate-limit grant, waiting in the handler while the wait
// is short (≤ MaxRateWait in all, and within ctx's deadline); a longer wait
// becomes a DependencyUnavailableError (see rateLimited): reschedule, no
// retry spent.
func (h *Handler) acquire(ctx context.Context) error {
	if h.cfg.Limiter == nil {
		return nil
	}
	var waited time.Duration
	for {
		err := h.cfg.Limiter.Acquire(ctx)
		var le *ratelimit.LimitedError
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &le):
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Redis unreachable: the engine itself is in trouble; retry.
			return task.Transient(task.ErrTypeServiceUnavailable, err)
		}
		deadline, hasDeadline := ctx.Deadline()
		if waited+le.Wait > h.cfg.MaxRateWait || (hasDeadline && time.Until(deadline) < le.Wait+time.Second) {
			return rateLimited(le.Wait)
		}
		t := time.NewTimer(le.Wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		waited += le.Wait
	}
}

// rateLimited is the error of a task that must wait d for a rate-limit
// grant. It is a task.DependencyUnavailableError (the engine hands the task
// back until d has passed, spending no retry) wrapped in a transient
// RateLimitError with After d, so that an engine which does not know the
// former still retries exactly when the window has room. An engine must look
// for DependencyUnavailableError before it classifies the failure.
func rateLimited(d time.Duration) error {
	return &task.TransientError{Type: task.ErrTypeRateLimit, After: d,
		Err: &task.DependencyUnavailableError{Dependency: Dependency, Wait: d, Reason: "rate limit reached"}}
}

// Classify maps an llm error onto the engine's error classes. HTTP statuses
// follow retry.ClassifyStatus, the engine's one table of rules
// (429 RateLimitError; 500, 502, 503 ServiceUnavailable; 504 NetworkTimeout;
// 400/422 InvalidInput, 401 AuthenticationError, 403 PermissionDenied, 404
// NotFound, other 4xx InvalidInput — all permanent), and a transient
// status keeps the server's Retry-After as the exact delay. A timeout or a
// connection failure is transient NetworkTimeout; a malformed body, or
// anything else, is transient Default.
func Classify(err error) error {
	var ae *llm.APIError
	var te *llm.TransportError
	switch {
	case errors.As(err, &ae):
		d := retry.ClassifyStatus(ae.StatusCode)
		if d.Class == task.ClassPermanent {
			return &task.PermanentError{Type: d.ErrorType, Err: err}
		}
		return &task.TransientError{Type: d.ErrorType, After: ae.RetryAfter, Err: err}
	case errors.As(err, &te):
		return task.Transient(task.ErrTypeNetworkTimeout, err)
	default:
		return task.Transient(task.ErrTypeDefault, err)
	}
}
