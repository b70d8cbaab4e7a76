package worker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/taskflow/taskflow/task"
)

// The engine's tests route by type with this small mux; production code
// registers its handlers through the public taskflow.Mux, which the engine
// cannot import (it imports the engine).

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
