// Package worker runs task handlers: the fetch loop, leases, heartbeats,
// graceful shutdown, and the handler registry in the shape of net/http.
package worker

import (
	"context"
	"encoding/json"
	"fmt"

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

// Mux routes tasks to handlers by task_type. The zero value is ready to use,
// but registration must finish before the mux serves tasks.
type Mux struct {
	handlers map[string]Handler
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{handlers: map[string]Handler{}} }

// Handle registers h for taskType; registering a type twice panics, as
// http.ServeMux does, because it is a programming error.
func (m *Mux) Handle(taskType string, h Handler) {
	if m.handlers == nil {
		m.handlers = map[string]Handler{}
	}
	if _, dup := m.handlers[taskType]; dup {
		panic(fmt.Sprintf("worker: handler for task type %q registered twice", taskType))
	}
	m.handlers[taskType] = h
}

// HandleFunc registers f for taskType.
func (m *Mux) HandleFunc(taskType string, f func(ctx context.Context, t *task.Task) (json.RawMessage, error)) {
	m.Handle(taskType, HandlerFunc(f))
}

// Types lists the registered task types.
func (m *Mux) Types() []string {
	out := make([]string, 0, len(m.handlers))
	for k := range m.handlers {
		out = append(out, k)
	}
	return out
}

// Handler returns the handler of taskType, if any.
func (m *Mux) Handler(taskType string) (Handler, bool) {
	h, ok := m.handlers[taskType]
	return h, ok
}

// ProcessTask dispatches to the handler of t.Type; an unknown type is a
// permanent failure.
func (m *Mux) ProcessTask(ctx context.Context, t *task.Task) (json.RawMessage, error) {
	h, ok := m.handlers[t.Type]
	if !ok {
		return nil, task.Permanent(fmt.Errorf("no handler registered for task type %q", t.Type))
	}
	return h.ProcessTask(ctx, t)
}
