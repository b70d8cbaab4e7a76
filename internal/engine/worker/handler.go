// Package worker is the engine's task runner: the fetch loop, leases,
// heartbeats, acknowledgements, circuit breakers and graceful shutdown. It
// runs one Handler; the public package taskflow (its Mux and Worker) is how
// task types are registered on it, for the built-ins as for a user's own.
package worker

import (
	"context"
	"encoding/json"

	"github.com/taskflow/taskflow/task"
)

// Handler is what the engine runs: taskflow.Handler's method set (its
// contract is documented there; the engine cannot import the public
// package, which imports it). Besides the public control errors, a handler
// of the engine's own may return ErrHandedOff: it handed the task to
// another holder (store.Handoff) and the worker writes nothing.
type Handler interface {
	ProcessTask(ctx context.Context, t *task.Task) (json.RawMessage, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t *task.Task) (json.RawMessage, error)

// ProcessTask calls f.
func (f HandlerFunc) ProcessTask(ctx context.Context, t *task.Task) (json.RawMessage, error) {
	return f(ctx, t)
}
