// Package llmfake is a local stand-in for an OpenAI-compatible
// chat-completions API (OpenRouter's), for tests and demos. It can succeed,
// answer 429 with Retry-After, 500, 502, 503, 504, 400, 401, 403, 404, a
// malformed body, or hang until the client gives up. Each request's answer
// comes from, in order: a marker in the prompt (see ParseMarker), the
// scripted sequence (Push), the ratio (Options.Ratio), else success.
package llmfake

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options configures a Server.
type Options struct {
	// APIKey, when set, must arrive as "Authorization: Bearer <key>", else
	// the answer is 401. Default empty: any key (or none) is accepted.
	APIKey string
	// Ratio picks the outcome of requests with no marker and no scripted
	// outcome left. Default empty: they succeed.
	Ratio []Weighted
	// Seed seeds the ratio's random choice. Default 0 (still deterministic).
	Seed uint64
	// MaxHang bounds a Hang outcome, so a forgotten client never pins a
	// goroutine forever. Default 10 minutes.
	MaxHang time.Duration
}

// Stats counts the requests answered so far.
type Stats struct {
	Requests int
	ByKind   map[Kind]int
}

// Server is an http.Handler serving POST .../chat/completions.
type Server struct {
	opts Options

	mu       sync.Mutex
	rng      *rand.Rand
	script   []Outcome
	seen     map[[32]byte]int // requests per prompt, for counted markers
	stats    Stats
	lastAuth string
	changed  chan struct{} // closed and replaced on every counted request

	release   chan struct{}
	closeOnce sync.Once
	srv       *http.Server
	done      chan struct{}
}

// WithDefaults returns o with every unset field at its default.
func (o Options) WithDefaults() Options {
	if o.MaxHang <= 0 {
		o.MaxHang = 10 * time.Minute
	}
	return o
}

// Validate says what is wrong with o.
func (o Options) Validate() error {
	for _, w := range o.Ratio {
		if w.Weight < 0 || w.Weight != w.Weight {
			return fmt.Errorf("llmfake: ratio weight %v of %s must be a number ≥ 0", w.Weight, w.Kind)
		}
		if _, err := ParseKind(string(w.Kind)); err != nil {
			return err
		}
	}
	return nil
}

// New returns a Server for opts (with their defaults). Invalid options are
// a programming error in a test or demo: New panics, as regexp.MustCompile
// does (ParseRatio checks a ratio typed by a user).
func New(opts Options) *Server {
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	return &Server{
		opts:    opts,
		rng:     rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		seen:    map[[32]byte]int{},
		stats:   Stats{ByKind: map[Kind]int{}},
		release: make(chan struct{}),
		changed: make(chan struct{}),
	}
}

// Push appends outcomes to the scripted sequence: the next requests without
// a marker get them, in order, one each.
func (s *Server) Push(outcomes ...Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, outcomes...)
}

// SetRatio replaces the ratio used once the script is empty. An invalid
// ratio panics, as in New.
func (s *Server) SetRatio(r []Weighted) {
	if err := (Options{Ratio: r}).Validate(); err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Ratio = r
}

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Stats{Requests: s.stats.Requests, ByKind: make(map[Kind]int, len(s.stats.ByKind))}
	for k, v := range s.stats.ByKind {
		out.ByKind[k] = v
	}
	return out
}

// LastAuthorization is the Authorization header of the last request, for
// tests that check what the client sends.
func (s *Server) LastAuthorization() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAuth
}

// Start listens on addr ("127.0.0.1:0" for a free port) and serves in the
// background. It returns the base URL to give a client
// (http://host:port/api/v1).
func (s *Server) Start(addr string) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("llmfake: listen %s: %w", addr, err)
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(l)
	}()
	return "http://" + l.Addr().String() + "/api/v1", nil
}

// Close releases hanging requests and, when started with Start, stops the
// listener and waits for the handlers. Safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.release) })
	if s.srv == nil {
		return nil
	}
	// Graceful for a moment, then forced: a client's cancelled dial can leave
	// a connection that never sends a request, and Shutdown would wait for
	// it until it is five seconds old. A fake has nothing to drain.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	<-s.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// ServeHTTP answers one chat-completions request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(strings.TrimRight(r.URL.Path, "/"), "/chat/completions") {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path, 0)
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "use POST", 0)
		return
	}
	auth := r.Header.Get("Authorization")
	s.mu.Lock()
	s.lastAuth = auth
	s.mu.Unlock()
	if s.opts.APIKey != "" && subtle.ConstantTimeCompare([]byte(auth), []byte("Bearer "+s.opts.APIKey)) != 1 {
		s.count(Unauthorized)
		writeError(w, http.StatusUnauthorized, "invalid API key", 0)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	var req chatRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || len(req.Messages) == 0 {
		s.count(BadRequest)
		writeError(w, http.StatusBadRequest, "request body must be JSON with messages", 0)
		return
	}
	var prompt strings.Builder
	for _, m := range req.Messages {
		prompt.WriteString(m.Content)
		prompt.WriteByte('\n')
	}
	out, err := s.choose(prompt.String())
	if err != nil {
		s.count(BadRequest)
		writeError(w, http.StatusBadRequest, err.Error(), 0)
		return
	}
	s.count(out.Kind)
	if out.Delay > 0 && !s.wait(r.Context(), out.Delay) {
		return
	}
	switch out.Kind {
	case OK:
		user := StripMarkers(req.Messages[len(req.Messages)-1].Content)
		writeOK(w, req.Model, user)
	case Hang:
		s.wait(r.Context(), s.opts.MaxHang)
	case Malformed:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices": [ {"message": `)
	default:
		writeError(w, out.Kind.Status(), "fake "+string(out.Kind), out.RetryAfter)
	}
}

// choose picks the outcome of one request.
func (s *Server) choose(prompt string) (Outcome, error) {
	m, has, err := ParseMarker(prompt)
	if err != nil {
		return Outcome{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if has {
		if m.Times == 0 {
			return m.Outcome, nil
		}
		key := sha256.Sum256([]byte(prompt))
		n := s.seen[key]
		s.seen[key] = n + 1
		if n < m.Times {
			return m.Outcome, nil
		}
		return Outcome{Kind: OK}, nil
	}
	if len(s.script) > 0 {
		o := s.script[0]
		s.script = s.script[1:]
		return o, nil
	}
	if len(s.opts.Ratio) > 0 {
		var sum float64
		for _, o := range s.opts.Ratio {
			sum += o.Weight
		}
		x := s.rng.Float64() * sum
		for _, o := range s.opts.Ratio {
			if x < o.Weight {
				return o.Outcome, nil
			}
			x -= o.Weight
		}
		return s.opts.Ratio[len(s.opts.Ratio)-1].Outcome, nil
	}
	return Outcome{Kind: OK}, nil
}

func (s *Server) count(k Kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Requests++
	s.stats.ByKind[k]++
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitRequests blocks until at least n requests have been received (their
// outcome chosen), or ctx ends.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, ch := s.stats.Requests, s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("llmfake: %d of %d requests: %w", got, n, ctx.Err())
		}
	}
}

// wait blocks for d, or until the request ends or the fake is closed. It
// reports whether d elapsed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.release:
	}
	return false
}

// writeOK answers like chat completions, with a "summary" made of the
// prompt's first sentence (at most 40 words), so callers can see their text
// went through.
func writeOK(w http.ResponseWriter, model, user string) {
	words := strings.Fields(user)
	if len(words) > 40 {
		words = words[:40]
	}
	text := strings.Join(words, " ")
	if i := strings.IndexAny(text, ".!?"); i >= 0 {
		text = text[:i+1]
	}
	if text == "" {
		text = "(empty)"
	}
	content := "Fake summary: " + text
	body := map[string]any{
		"id":      fmt.Sprintf("fake-%d", time.Now().UnixNano()),
		"object":  "chat.completion",
		"model":   model,
		"created": time.Now().Unix(),
		"choices": []map[string]any{{
			"index":         0,
			"message":       map[string]string{"role": "assistant", "content": content},
			"finish_reason": "stop",
		}},
		"usage": map[string]int{
			"prompt_tokens":     len(strings.Fields(user)),
			"completion_tokens": len(strings.Fields(content)),
			"total_tokens":      len(strings.Fields(user)) + len(strings.Fields(content)),
		},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func writeError(w http.ResponseWriter, status int, msg string, retryAfter time.Duration) {
	if retryAfter > 0 {
		secs := int64((retryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", fmt.Sprint(secs))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "code": status},
	})
}
