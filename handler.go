package taskflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/task"
)

// Handler runs one task. The context carries the task (TaskFrom), its
// attempt's deadline (the task's timeout, else the worker's default), and
// is cancelled when the task is cancelled (context.Cause:
// task.ErrCancelRequested), when the worker's lease on it is lost
// (task.ErrLeaseLost: another worker owns it now), or when the worker stops
// and its shutdown grace is over (task.ErrShutdown: the task goes back to
// its queue without spending a retry).
//
// The returned JSON is the task's result (nil: JSON null). A returned
// error fails the attempt; how it is treated follows from the error:
// task.Permanent (no retry: the dead-letter queue), task.RetryAfter (retry
// after exactly that wait), task.Transient (retry on the schedule of that
// error class), task.Cancel (ends CANCELLED), a
// *task.DependencyUnavailableError (wait without spending a retry); any
// other error is classified by what it wraps (a timeout or a refused
// connection is transient, the rest class Default). A panic is a transient
// failure of class Panic, its stack recorded.
type Handler interface {
	ProcessTask(ctx context.Context, t *task.Task) (json.RawMessage, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t *task.Task) (json.RawMessage, error)

// ProcessTask calls f.
func (f HandlerFunc) ProcessTask(ctx context.Context, t *task.Task) (json.RawMessage, error) {
	return f(ctx, t)
}

// Middleware wraps a Handler: logging, metrics, recovery, tenancy checks.
// A middleware sees every task the mux routes, after the task is put in
// the context.
type Middleware func(Handler) Handler

// JSONHandler adapts a typed function to Handler: the task's params are
// decoded into P (unknown fields refused, as a permanent failure naming
// the problem) and the function's R is encoded as the result.
func JSONHandler[P, R any](fn func(ctx context.Context, params P) (R, error)) Handler {
	return HandlerFunc(func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		var p P
		if len(t.Params) > 0 {
			if err := decodeStrict(t.Params, &p); err != nil {
				return nil, task.Permanent(fmt.Errorf("params: %w", err))
			}
		}
		r, err := fn(ctx, p)
		if err != nil {
			return nil, err
		}
		return json.Marshal(r)
	})
}

// TypeInfo is what a handler declares about its task type. The worker
// publishes it when it starts, so the API, the dashboard and the MCP server
// know the type as they know a published external service's.
type TypeInfo struct {
	// Name is the task type, e.g. "email.send".
	Name string
	// Description says what the type does, for people and agents.
	Description string
	// Params are the declared params (Params option); checked at submit.
	Params param.Schema
	// JSONSchema is the params as a JSON Schema (JSONSchema option), served
	// whole and checked at submit by the keywords param.FromJSONSchema
	// reads; when set it is used instead of Params.
	JSONSchema json.RawMessage
	// Check runs after the params' schema at submit, in the process that
	// submits (Check option; not published).
	Check func(params json.RawMessage) error
	// Notify is the completion notification's text, {field} replaced by
	// the task's params.field. Empty: "Your <type> task is ready!".
	Notify string
	// Dependency is the outside dependency the handler calls (Dependency
	// option): while its circuit breaker is open, tasks of the type wait
	// without spending a retry.
	Dependency string
}

// Schema returns the params as a JSON Schema: JSONSchema when set, else
// the declared Params, else any object.
func (ti TypeInfo) Schema() json.RawMessage {
	if len(ti.JSONSchema) > 0 {
		return ti.JSONSchema
	}
	if ti.Params.Fields == nil && !ti.Params.AllowUnknown {
		return json.RawMessage(`{"type":"object"}`)
	}
	b, _ := json.Marshal(ti.Params.JSONSchema()) // plain values only
	return b
}

// TypeOption declares something about a task type when its handler is
// registered.
type TypeOption func(*TypeInfo)

// Describe says what the type does.
func Describe(text string) TypeOption { return func(ti *TypeInfo) { ti.Description = text } }

// Params declares the type's params: a submit that breaks them is refused
// with the field's name before a task is created.
func Params(s param.Schema) TypeOption { return func(ti *TypeInfo) { ti.Params = s } }

// JSONSchema declares the type's params as a JSON Schema object. Submits
// are checked by the keywords package param reads (type, properties,
// required, enum, minimum/maximum, maxLength/maxItems, items,
// additionalProperties); the schema is served as given. It panics at
// registration when the schema is not such an object.
func JSONSchema(schema json.RawMessage) TypeOption {
	return func(ti *TypeInfo) {
		s, err := param.FromJSONSchema(schema)
		if err != nil {
			panic(fmt.Sprintf("taskflow: %s: params schema: %v", ti.Name, err))
		}
		ti.JSONSchema, ti.Params = schema, s
	}
}

// Check adds a check of the params at submit, run after the schema's (e.g.
// "does this plan exist"); its error is the submit's. It runs in the
// process that submits, so it is not published: only processes that
// register the handler apply it.
func Check(fn func(params json.RawMessage) error) TypeOption {
	return func(ti *TypeInfo) { ti.Check = fn }
}

// Notify sets the text a session is told when a task of the type it owns
// completes; {field} is replaced by the task's params.field, e.g. "Your
// {quarter} report is ready".
func Notify(text string) TypeOption { return func(ti *TypeInfo) { ti.Notify = text } }

// Dependency declares the outside dependency the handler calls (an API, a
// database): the worker keeps a circuit breaker per dependency, and while
// it is open tasks of the type wait without spending a retry.
func Dependency(name string) TypeOption { return func(ti *TypeInfo) { ti.Dependency = name } }

// Registrar is where handlers are registered: a *Mux or a *Worker.
type Registrar interface {
	Handle(taskType string, h Handler, opts ...TypeOption)
}

// NoHandlerWait is how long a task waits, without spending a retry, when
// the worker that fetched it has no handler for its type (another worker
// of the deployment may have one).
const NoHandlerWait = 5 * time.Second

// Mux routes tasks to handlers by task type. Register every handler and
// middleware before the mux serves its first task.
type Mux struct {
	types    map[string]TypeInfo
	handlers map[string]Handler
	mws      []Middleware

	once    sync.Once
	chained map[string]Handler // handlers wrapped in the middleware, built at the first task
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{types: map[string]TypeInfo{}, handlers: map[string]Handler{}} }

// Handle registers h for taskType with what opts declare. A task type
// is 1-64 of a-z, 0-9, '.', '_' and '-', starting with a letter (the one
// rule of every part of taskflow, external services' types included);
// registering an
// invalid or already registered name panics, as http.ServeMux does,
// because it is a programming error.
func (m *Mux) Handle(taskType string, h Handler, opts ...TypeOption) {
	if !protocol.ValidTaskType(taskType) {
		panic(fmt.Sprintf("taskflow: %q is not a task type name (1-64 of a-z, 0-9, '.', '_', '-', starting with a letter)", taskType))
	}
	if h == nil {
		panic(fmt.Sprintf("taskflow: nil handler for task type %q", taskType))
	}
	if _, dup := m.handlers[taskType]; dup {
		panic(fmt.Sprintf("taskflow: handler for task type %q registered twice", taskType))
	}
	ti := TypeInfo{Name: taskType}
	for _, o := range opts {
		o(&ti)
	}
	m.types[taskType], m.handlers[taskType] = ti, h
}

// HandleFunc registers f for taskType.
func (m *Mux) HandleFunc(taskType string, f func(ctx context.Context, t *task.Task) (json.RawMessage, error), opts ...TypeOption) {
	m.Handle(taskType, HandlerFunc(f), opts...)
}

// Use adds middleware; the first added is the outermost.
func (m *Mux) Use(mw ...Middleware) { m.mws = append(m.mws, mw...) }

// Types lists the registered task types, sorted.
func (m *Mux) Types() []string { return slices.Sorted(maps.Keys(m.handlers)) }

// Handler returns the handler registered for taskType (without the
// middleware), if any.
func (m *Mux) Handler(taskType string) (Handler, bool) {
	h, ok := m.handlers[taskType]
	return h, ok
}

// TypeInfos returns what each registered type declares, sorted by name.
func (m *Mux) TypeInfos() []TypeInfo {
	out := make([]TypeInfo, 0, len(m.types))
	for _, n := range m.Types() {
		out = append(out, m.types[n])
	}
	return out
}

// ProcessTask runs the handler of t's type, through the middleware, with t
// in the context. A type without a handler here waits NoHandlerWait
// without spending a retry (a *task.DependencyUnavailableError): another
// worker of the deployment may serve it, and a type no worker serves stays
// queued until the task's maximum age.
func (m *Mux) ProcessTask(ctx context.Context, t *task.Task) (json.RawMessage, error) {
	m.once.Do(m.chain)
	h, ok := m.chained[t.Type]
	if !ok {
		return nil, &task.DependencyUnavailableError{Dependency: "handler:" + t.Type, Wait: NoHandlerWait,
			Reason: fmt.Sprintf("no handler for task type %q in this worker", t.Type)}
	}
	if _, has := TaskFrom(ctx); !has {
		ctx = withTask(ctx, t, progressWriter{})
	}
	return h.ProcessTask(ctx, t)
}

// chain wraps every handler in the middleware once.
func (m *Mux) chain() {
	m.chained = make(map[string]Handler, len(m.handlers))
	for typ, h := range m.handlers {
		for i := len(m.mws) - 1; i >= 0; i-- {
			h = m.mws[i](h)
		}
		m.chained[typ] = h
	}
}

// dependencies maps each type that declared one to its dependency.
func (m *Mux) dependencies() map[string]string {
	out := map[string]string{}
	for n, ti := range m.types {
		if ti.Dependency != "" {
			out[n] = ti.Dependency
		}
	}
	return out
}

// handOff says whether a task of taskType is to run outside the engine's
// handler slots now (worker.Config.HandOff): its handler only hands tasks
// to another holder (the external path's dispatcher) and says, with its
// HandsOff method, that it can take this one without waiting.
func (m *Mux) handOff(taskType string) bool {
	ho, ok := m.handlers[taskType].(interface{ HandsOff(taskType string) bool })
	return ok && ho.HandsOff(taskType)
}

// handOffRoom returns worker.Config.HandOffRoom for the handlers
// registered now: how many more tasks the hand-off handlers would take,
// the sum of their HandOffRoom, each handler counted once; nil when none
// says (a worker then fetches only as many as it has free slots).
func (m *Mux) handOffRoom() func() int {
	seen := map[any]bool{}
	var rs []interface{ HandOffRoom() int }
	for _, h := range m.handlers {
		r, ok := h.(interface{ HandOffRoom() int })
		if !ok {
			continue
		}
		if reflect.TypeOf(h).Comparable() { // one handler of several types: once
			if seen[h] {
				continue
			}
			seen[h] = true
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil
	}
	return func() int {
		room := 0
		for _, r := range rs {
			room += max(0, r.HandOffRoom())
		}
		return room
	}
}

// fetchDispatch returns worker.Config.FetchDispatch for the handlers
// registered now: the one handler that lets a fetch dispatch its tasks
// (the external path's dispatcher), its plans cut to the types the Mux
// routes to it; nil when no handler or several do, or while middleware is
// in use (it sees every task, which a fetch's dispatch would pass by).
func (m *Mux) fetchDispatch() worker.FetchDispatcher {
	var fd worker.FetchDispatcher
	for _, h := range m.handlers {
		d, ok := h.(worker.FetchDispatcher)
		if !ok {
			continue
		}
		if !reflect.TypeOf(h).Comparable() || (fd != nil && any(fd) != any(d)) {
			return nil
		}
		fd = d
	}
	if fd == nil {
		return nil
	}
	return muxDispatch{m: m, d: fd}
}

// muxDispatch is a FetchDispatcher's plans cut to the types its Mux routes
// to it.
type muxDispatch struct {
	m *Mux
	d worker.FetchDispatcher
}

func (p muxDispatch) Plan(ctx context.Context, n int) *store.FetchDispatch {
	if len(p.m.mws) > 0 {
		return nil
	}
	pl := p.d.Plan(ctx, n)
	if pl == nil {
		return nil
	}
	pl.Types = slices.DeleteFunc(pl.Types, func(t store.DispatchType) bool {
		h, ok := p.m.handlers[t.Name]
		return !ok || any(h) != any(p.d)
	})
	if len(pl.Types) == 0 {
		return nil
	}
	return pl
}

func (p muxDispatch) Dispatched(ds []store.Dispatched) { p.d.Dispatched(ds) }

// decodeStrict decodes one JSON value into v, refusing unknown fields and
// trailing data.
func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
