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

// Handler processes one task. The context carries the task's deadline and
// is cancelled when the task is cancelled or the worker's lease is lost.
// The returned JSON becomes the task's result. Errors are classified by the
// retry rules; wrap with task.Permanent, task.RetryAfter or task.Cancel to
// say how a failure must be treated. A *task.DependencyUnavailableError
// (anywhere in the chain) reschedules the task after its Wait without
// spending a retry; ErrHandedOff says the handler handed the task to
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
