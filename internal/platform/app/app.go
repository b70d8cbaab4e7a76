// Package app is taskflow's composition root. A process reads its whole
// configuration once (Load: the environment, then its command's flags),
// then Open builds from it one Redis client and one task store; every
// component of the process (API, workers, scheduler, orchestrator) is built
// from those, so two parts of one process cannot disagree on a setting, a
// namespace or a connection.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/platform/config"
)

// Config is everything a process reads: the one configuration of
// internal/platform/config (server, client, engine, external path, plans,
// summarize).
type Config = config.Config

// Load reads the configuration from the environment through getenv, once
// per process: every setting of internal/platform/config's table. The values are
// the defaults of the command's flags (config.Config.BindFlags), which
// may override them before Open. An error names every variable that is
// wrong.
func Load(getenv func(string) string) (Config, error) { return config.Load(getenv) }

// App is what one process builds once from its Config: the Redis client
// and the task store every component shares.
type App struct {
	Config Config
	Logger *slog.Logger
	// Redis is the one client of the process (a Redis Cluster client when
	// REDIS_URL names one).
	Redis redis.UniversalClient
	// Store is the one task store of the process, configured from the
	// engine's settings (max retries, max task age, retry ratios, the
	// session index TTL): whoever creates or moves tasks uses it.
	Store *store.Store
	// Stores counts the stores built: one per process (a test checks it).
	Stores int
}

// Open validates cfg, connects to its Redis and builds the store. The
// flags have been applied to cfg by now: the namespace and the session TTL
// are taken from cfg.Config here, so the engine follows them.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.RedisURL == "" {
		return nil, errors.New("REDIS_URL is not set: this command needs a Redis")
	}
	if logger == nil {
		logger = slog.Default()
	}
	rdb, err := redisconn.Open(ctx, cfg.RedisURL, redisconn.Options{})
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	a := &App{Config: cfg, Logger: logger, Redis: rdb}
	sc := cfg.Engine.Store
	sc.Namespace = cfg.Namespace
	sc.SessionIndexTTL = cfg.SessionTTL // a session's task index lives as long as the session
	if a.Store, err = store.New(rdb, sc); err != nil {
		_ = rdb.Close()
		return nil, err
	}
	// the deployment keeps the partition count it was created with
	if err := a.Store.CheckLayout(ctx); err != nil {
		_ = rdb.Close()
		return nil, err
	}
	a.Stores++
	return a, nil
}

// Close releases the Redis client.
func (a *App) Close() error { return a.Redis.Close() }
