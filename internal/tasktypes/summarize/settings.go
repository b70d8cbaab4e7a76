package summarize

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/ratelimit"
	"github.com/taskflow/taskflow/internal/tasktypes/llm"
)

// Defaults of the rate limit: 60 calls per minute across the fleet.
const (
	DefaultRateLimit    = 60
	DefaultRateInterval = time.Minute
)

// Settings are the deployment's choices for the summarize task: which
// LLM, and how often the fleet may call it. The configuration table
// (internal/platform/config: the OPENROUTER_* variables) fills them in.
type Settings struct {
	// LLM is the chat-completions API (OPENROUTER_API_KEY, _BASE_URL,
	// _MODEL, _TIMEOUT). An empty APIKey: the extractive summarizer.
	LLM llm.Config
	// RateLimit is how many LLM calls the fleet makes per RateInterval,
	// shared through Redis (OPENROUTER_RATE_LIMIT). nil: DefaultRateLimit;
	// 0: no limit.
	RateLimit *int
	// RateInterval is that limit's window (OPENROUTER_RATE_INTERVAL).
	// 0: DefaultRateInterval.
	RateInterval time.Duration
}

// Open builds the handler every worker process registers: the LLM path
// when s names an API key (rate-limited through rdb under namespace),
// else the extractive summarizer, which needs neither the network nor
// rdb.
func Open(s Settings, rdb redis.Scripter, namespace keyspace.Namespace) (*Handler, error) {
	if s.LLM.APIKey == "" {
		return New(Config{})
	}
	client, err := llm.New(s.LLM, nil)
	if err != nil {
		return nil, err
	}
	rc := ratelimit.Config{Limit: DefaultRateLimit, Interval: DefaultRateInterval, Name: Dependency, Namespace: namespace}
	if s.RateLimit != nil {
		rc.Limit = *s.RateLimit
	}
	if s.RateInterval != 0 {
		rc.Interval = s.RateInterval
	}
	if rc.Limit > 0 && rdb == nil {
		return nil, fmt.Errorf("summarize: the rate limit needs Redis (or set OPENROUTER_RATE_LIMIT=0)")
	}
	lim, err := ratelimit.New(rdb, rc)
	if err != nil {
		return nil, err
	}
	return New(Config{LLM: client, Limiter: lim})
}
