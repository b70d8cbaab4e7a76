package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/plan/planapi"
	"github.com/taskflow/taskflow/internal/platform/config"
	"github.com/taskflow/taskflow/internal/tasktypes/builtin"
	"github.com/taskflow/taskflow/internal/tasktypes/summarize"
)

// taskDeps is what handlers need from the process that runs them.
type taskDeps struct {
	// Redis holds fleet-wide state handlers share (the LLM rate limit).
	Redis redis.UniversalClient
	// Namespace is the deployment's namespace (the LLM rate limit's keys).
	Namespace keyspace.Namespace
	// Store is the process's task store (the dispatcher of external types
	// hands tasks off through it); nil in a process that only lists types.
	Store *store.Store
	// DefaultTimeout is the attempt timeout of a task that sets none
	// (TASKFLOW_TASK_TIMEOUT): the dispatcher sends it to the services.
	DefaultTimeout time.Duration
	// Plans are the plan engine's settings; nil: read from the
	// environment (a process that only lists the types, tests).
	Plans *config.PlanSettings
	// RedisURL is the process's Redis, the plans' default.
	RedisURL string
}

// newTaskMux builds the handler registry that `taskflow worker` and
// `taskflow dev` serve (registerTasks), for a process that runs no plan
// task (the API lists the types; tests run other handlers): it releases
// the plan engine at once — it dials Redis lazily, so it never held a
// connection.
func newTaskMux(m *Main, deps ...taskDeps) (*taskflow.Mux, error) {
	mux := taskflow.NewMux()
	closeHandlers, err := registerTasks(m, mux, deps...)
	if err != nil {
		return nil, err
	}
	if err := closeHandlers(); err != nil {
		return nil, err
	}
	return mux, nil
}

// registerTasks registers every task type of taskflow on r — a
// taskflow.Worker or Mux, the public API a user's own program registers
// its types on — so every process of a deployment offers the same types:
// builtin (noop, sleep), summarize, plan, and the dispatcher of each
// external type. Each is declared as its package says (builtin.Options).
//
// Processes that run handlers pass their taskDeps; a process that only
// lists the types (the API) passes none, and its handlers are built
// without the Redis-backed parts (they never run there). The returned func
// releases what the handlers hold (the plan engine's Redis clients, once
// its runs' stragglers end); call it after the worker has stopped.
func registerTasks(m *Main, r taskflow.Registrar, deps ...taskDeps) (func() error, error) {
	var d taskDeps
	if len(deps) > 0 {
		d = deps[0]
	}
	builtin.Register(r)
	sum, err := newSummarize(m, d)
	if err != nil {
		return nil, err
	}
	opts := builtin.Options(summarize.Type)
	if dep := sum.Dependencies(); len(dep) > 0 {
		opts = append(opts, taskflow.Dependency(dep[0]))
	}
	r.Handle(summarize.TaskType, sum, opts...)
	pc := config.Config{RedisURL: d.RedisURL}
	if d.Plans != nil {
		pc.Plans = *d.Plans
	} else {
		c, err := m.config()
		if err != nil {
			return nil, err
		}
		pc = c
	}
	pl, err := planapi.Open(planOptions(pc, m.Logger))
	if err != nil {
		return nil, err
	}
	r.Handle(planapi.TaskType, pl.TaskHandler(), builtin.Options(planapi.Type(pl))...)
	if err := registerExternal(m, r, d); err != nil { // external services (orchestrator.go)
		_ = pl.Close()
		return nil, err
	}
	return pl.Close, nil
}

// newSummarize builds the summarize handler from the configuration's
// OPENROUTER_* settings (extractive when no key is set).
func newSummarize(m *Main, d taskDeps) (*summarize.Handler, error) {
	cfg, err := m.config()
	if err != nil {
		return nil, err
	}
	if d.Redis == nil {
		s := cfg.Summarize
		s.RateLimit = new(0) // listing only: no calls are made here
		// nothing is written in a listing: any namespace will do
		return summarize.Open(s, nil, keyspace.Default)
	}
	h, err := summarize.Open(cfg.Summarize, d.Redis, d.Namespace)
	if err != nil {
		return nil, err
	}
	if err := seedLLMLimit(cfg, d.Store); err != nil {
		return nil, err
	}
	return h, nil
}

// seedLLMLimit makes OPENROUTER_RATE_LIMIT one instance of the fleet-wide
// limits: with the LLM configured, a rate limit on the summarize task type
// of that many starts per OPENROUTER_RATE_INTERVAL, unless one is set
// already (an operator's change at runtime survives restarts). Summarize
// tasks over it wait in order instead of starting and being handed back
// by the handler's own limiter, which stays for the plans' LLM calls.
func seedLLMLimit(cfg config.Config, st *store.Store) error {
	s := cfg.Summarize
	if st == nil || s.LLM.APIKey == "" {
		return nil
	}
	n, per := summarize.DefaultRateLimit, summarize.DefaultRateInterval
	if s.RateLimit != nil {
		n = *s.RateLimit
	}
	if s.RateInterval != 0 {
		per = s.RateInterval
	}
	if n <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := st.SeedLimit(ctx, store.Limit{Scope: store.ScopeTaskType, Name: summarize.TaskType,
		Rate: &store.RateLimit{Limit: n, Per: per}})
	return err
}

// taskDependencies maps each task type whose handler declared an outside
// dependency (summarize with an API key: openrouter) to it: while that
// dependency's circuit breaker is open, the worker leaves such tasks
// waiting.
func taskDependencies(mux *taskflow.Mux) map[string]string {
	out := map[string]string{}
	for _, ti := range mux.TypeInfos() {
		if ti.Dependency != "" {
			out[ti.Name] = ti.Dependency
		}
	}
	return out
}

// planOptions are the plan engine's options from a process's configuration.
func planOptions(c config.Config, log *slog.Logger) planapi.Options {
	return planapi.Options{RedisURL: c.PlanRedisURL(), KeyPrefix: c.Plans.KeyPrefix, PlanDir: c.Plans.Dir,
		DefaultDeadline: c.Plans.Deadline, Logger: log}
}
