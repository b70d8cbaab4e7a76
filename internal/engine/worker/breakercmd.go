package worker

import (
	"context"
	"sort"

	"github.com/taskflow/taskflow/internal/engine/breaker"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
)

// breakerListener follows the operator's breaker commands
// (breaker.CommandChannel of the store's namespace) and applies them to
// this worker's breakers, then republishes the worker's info so the
// workers view and /health show the new states at once. ready is closed
// once subscribed (or when subscribing failed).
func (w *Worker) breakerListener(ctx context.Context, ready chan<- struct{}) {
	ns := w.st.Namespace()
	err := redisconn.Listen(ctx, w.st.Client(), breaker.CommandChannel(ns), 0, func(ok bool) {
		// Commands given before this worker started, read once subscribed:
		// a later one arrives on the channel and is applied after these.
		if ok {
			w.replayBreakerCommands(ctx, ns)
		}
		close(ready)
	}, func(payload string) { w.applyBreakerCommand(ctx, []byte(payload)) })
	if err != nil {
		w.log.Warn("breaker listener stopped", "err", err)
	}
}

func (w *Worker) applyBreakerCommand(ctx context.Context, payload []byte) {
	cmd, err := breaker.ParseCommand(payload)
	if err != nil {
		w.log.Warn("breaker command ignored", "err", err)
		return
	}
	deps := w.breakers.Apply(cmd, w.dependencyNames())
	w.log.Info("breaker command applied", "op", cmd.Op, "dependencies", deps, "until_ms", cmd.Until)
	if err := w.publish(ctx); err != nil && ctx.Err() == nil {
		w.log.Warn("publish worker info after breaker command", "err", err)
	}
}

func (w *Worker) replayBreakerCommands(ctx context.Context, ns keyspace.Namespace) {
	fields, err := w.st.Client().HGetAll(ctx, breaker.ForcedKey(ns)).Result()
	if err != nil {
		w.log.Warn("breaker commands in force: read", "err", err)
		return
	}
	if n := w.breakers.Replay(fields, w.dependencyNames(), w.cfg.Clock.Now()); n > 0 {
		w.log.Info("breaker commands in force applied", "count", n)
		if err := w.publish(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("publish worker info after breaker commands", "err", err)
		}
	}
}

// dependencyNames lists the dependencies this worker's task types need.
func (w *Worker) dependencyNames() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range w.cfg.Dependencies {
		if d != "" && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}
