package planapi

import (
	"log/slog"
	"time"

	"github.com/taskflow/taskflow/internal/plan"
)

// Options are what Open builds a Service from (a process's
// config.PlanSettings; docs/plan.md).
type Options struct {
	// RedisURL is the Redis holding the plans' data. Default: the
	// registry's endpoint address.
	RedisURL string
	// KeyPrefix prefixes every key plans read.
	KeyPrefix string
	// PlanDir is a directory of compiled plans. Default: the plans built
	// into the binary.
	PlanDir string
	// DefaultDeadline is a run's deadline when the request sets none.
	// Default 1s; a value above 30s raises the most a request may ask.
	DefaultDeadline time.Duration
	Logger          *slog.Logger
}

// Open builds a Service and its engine. Redis is dialled lazily, on the
// first run.
func Open(o Options) (*Service, error) {
	eng, err := plan.New(plan.Config{RedisURL: o.RedisURL, KeyPrefix: o.KeyPrefix, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	cfg := Config{PlanDir: o.PlanDir, Logger: o.Logger, DefaultDeadline: o.DefaultDeadline}
	if cfg.DefaultDeadline > 30*time.Second {
		cfg.MaxDeadline = cfg.DefaultDeadline
	}
	return New(eng, cfg)
}

// Close releases the engine's Redis connections.
func (s *Service) Close() error { return s.eng.Close() }
