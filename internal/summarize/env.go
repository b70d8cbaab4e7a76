package summarize

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/keyspace"
	"github.com/taskflow/taskflow/internal/llm"
	"github.com/taskflow/taskflow/internal/ratelimit"
)

// Environment variables of the fleet-wide rate limit on LLM calls.
const (
	EnvRateLimit    = "OPENROUTER_RATE_LIMIT"
	EnvRateInterval = "OPENROUTER_RATE_INTERVAL"
)

// Defaults of the rate limit: 60 calls per minute across the fleet.
const (
	DefaultRateLimit    = 60
	DefaultRateInterval = time.Minute
)

// FromEnv builds the handler every worker process registers: the LLM path
// when OPENROUTER_API_KEY is set (with OPENROUTER_BASE_URL, _MODEL,
// _TIMEOUT, and the rate limit OPENROUTER_RATE_LIMIT calls per
// OPENROUTER_RATE_INTERVAL shared through rdb under namespace), else the
// extractive summarizer, which needs neither the network nor rdb.
func FromEnv(getenv func(string) string, rdb redis.Scripter, namespace keyspace.Namespace) (*Handler, error) {
	lc, err := llm.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	if lc.APIKey == "" {
		return New(Config{})
	}
	client, err := llm.New(lc, nil)
	if err != nil {
		return nil, err
	}
	rc := ratelimit.Config{Limit: DefaultRateLimit, Interval: DefaultRateInterval, Name: Dependency, Namespace: namespace}
	if v := strings.TrimSpace(getenv(EnvRateLimit)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("summarize: %s=%q: want a whole number of calls (0 turns the limit off)", EnvRateLimit, v)
		}
		rc.Limit = n
	}
	if v := strings.TrimSpace(getenv(EnvRateInterval)); v != "" {
		d, err := llm.ParseSeconds(v)
		if err != nil || d < time.Millisecond {
			return nil, fmt.Errorf("summarize: %s=%q: want seconds (e.g. 60) or a duration (e.g. 1m)", EnvRateInterval, v)
		}
		rc.Interval = d
	}
	if rc.Limit > 0 && rdb == nil {
		return nil, fmt.Errorf("summarize: the rate limit needs Redis (or set %s=0)", EnvRateLimit)
	}
	lim, err := ratelimit.New(rdb, rc)
	if err != nil {
		return nil, err
	}
	return New(Config{LLM: client, Limiter: lim})
}
