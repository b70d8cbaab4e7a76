package planapi

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/taskflow/taskflow/internal/plan"
)

// Environment variables FromEnv reads (docs/plan.md, README).
const (
	// EnvPlanDir is the plan directory (default "plans").
	EnvPlanDir = "TASKFLOW_PLAN_DIR"
	// EnvPlanRedisURL is the Redis holding the plans' data; default
	// REDIS_URL, else the registry's endpoint address.
	EnvPlanRedisURL = "TASKFLOW_PLAN_REDIS_URL"
	// EnvKeyPrefix prefixes every key plans read (default "").
	EnvKeyPrefix = "RANKD_KEY_PREFIX"
	// EnvDeadlineMS is the default deadline of a run in ms (default 1000).
	EnvDeadlineMS = "TASKFLOW_PLAN_DEADLINE_MS"
)

// FromEnv builds a Service and its engine from the environment. Redis is
// dialled lazily, on the first run.
func FromEnv(getenv func(string) string, log *slog.Logger) (*Service, error) {
	redisURL := getenv(EnvPlanRedisURL)
	if redisURL == "" {
		redisURL = getenv("REDIS_URL")
	}
	eng, err := plan.New(plan.Config{RedisURL: redisURL, KeyPrefix: getenv(EnvKeyPrefix), Logger: log})
	if err != nil {
		return nil, err
	}
	cfg := Config{PlanDir: getenv(EnvPlanDir), Logger: log}
	if v := getenv(EnvDeadlineMS); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive number of milliseconds", EnvDeadlineMS, v)
		}
		cfg.DefaultDeadline = time.Duration(ms) * time.Millisecond
		if cfg.DefaultDeadline > 30*time.Second {
			cfg.MaxDeadline = cfg.DefaultDeadline
		}
	}
	return New(eng, cfg)
}

// Close releases the engine's Redis connections.
func (s *Service) Close() error { return s.eng.Close() }
