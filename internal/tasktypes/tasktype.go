// Package tasktypes is the registry of the task types a deployment accepts:
// each one's description, params schema, who performs it and the text of
// its completion notification. The in-process types declare themselves in
// their packages (builtin, summarize, planapi); external services publish
// theirs in Redis when they register (protocol.TypeSpec). Every front end
// (the HTTP API, the MCP server) reads this one registry through the
// service layer, so a type's params are declared once and checked alike.
package tasktypes

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/internal/external/protocol"
)

// Type is one task type.
type Type struct {
	// Name is the task_type, e.g. "report.generate".
	Name string
	// Description says what the type does, for people and agents choosing
	// one.
	Description string
	// Params are the declared params; a submit that breaks them is refused
	// (a *param.Error naming the field). Zero: any object.
	Params param.Schema
	// JSONSchema, when set, is served instead of Params.JSONSchema() (a
	// type whose params take keywords param.Schema cannot say).
	JSONSchema map[string]any
	// Check, when set, runs after Params at submit (e.g. the plan type's
	// "does this plan exist"); its error is the submit's.
	Check func(params json.RawMessage) error
	// External is true for a type external services perform over the
	// streams (the worker only dispatches it).
	External bool
	// Service names the service that published the type's spec, for an
	// external type whose service registered.
	Service string
	// Notify is the completion notification's text with {field} replaced
	// by the task's params (Render). Empty: the default text.
	Notify string
}

// Schema is the type's params as a JSON Schema object.
func (t Type) Schema() map[string]any {
	if t.JSONSchema != nil {
		return t.JSONSchema
	}
	if !t.declared() {
		return map[string]any{"type": "object"}
	}
	return t.Params.JSONSchema()
}

// declared reports whether the type declares its params (a zero
// param.Schema refuses every field; an undeclared type takes any object).
func (t Type) declared() bool { return t.Params.Fields != nil || t.Params.AllowUnknown }

// CheckParams checks params against the type's declared params and Check.
func (t Type) CheckParams(params json.RawMessage) error {
	if t.declared() {
		if err := t.Params.Validate(params); err != nil {
			return err
		}
	}
	if t.Check != nil {
		return t.Check(params)
	}
	return nil
}

// Config configures a Registry.
type Config struct {
	// Local are the in-process types (the workers' handlers).
	Local []Type
	// External names the types external services perform
	// (TASKFLOW_EXTERNAL_TYPES); a published spec fills in each one's
	// description, params and notification text. A published type not
	// named here is not accepted (the workers would not dispatch it).
	External []string
	// Redis and Keys locate the published specs. Default nil: external
	// types have no declared params.
	Redis redis.UniversalClient
	Keys  protocol.Keys
	// WorkerTypes is the hash where workers publish the task types they
	// serve in process (store.WorkerTypesKeyOf; a type → a TypeSpec
	// as JSON): each is accepted as an in-process type — or as an
	// external one when a service published a spec for it (a worker
	// dispatches it). Default empty: only Local and External.
	WorkerTypes string
	// Refresh is how long a read of the published specs is reused.
	// Default 2s: a service that registers is seen within it.
	Refresh time.Duration
	// Logger receives a failed read of the published specs (the last ones
	// read stay in use). Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Registry lists and looks up task types. Safe for concurrent use.
type Registry struct {
	cfg   Config
	local map[string]Type

	mu        sync.Mutex
	published map[string]Type // the accepted external types with a spec
	workers   map[string]Type // the types workers published, not local
	readAt    time.Time
	// unreadable: the specs whose params_schema could not be read, as
	// last read (warned about once each)
	unreadable map[string]string
}

// New returns the registry of cfg's types. A name both local and external
// is an error, as is an empty or duplicate name.
func New(cfg Config) (*Registry, error) {
	if cfg.Refresh <= 0 {
		cfg.Refresh = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Registry{cfg: cfg, local: map[string]Type{}, unreadable: map[string]string{}}
	for _, t := range cfg.Local {
		if t.Name == "" {
			return nil, fmt.Errorf("tasktype: a local type has no name")
		}
		if _, dup := r.local[t.Name]; dup {
			return nil, fmt.Errorf("tasktype: %q is declared twice", t.Name)
		}
		t.External = false
		r.local[t.Name] = t
	}
	ext := map[string]bool{}
	for _, n := range cfg.External {
		if _, taken := r.local[n]; taken {
			return nil, fmt.Errorf("tasktype: %q is already an in-process task type", n)
		}
		if n == "" || ext[n] {
			return nil, fmt.Errorf("tasktype: external type %q is empty or listed twice", n)
		}
		ext[n] = true
	}
	r.cfg.External = slices.Sorted(maps.Keys(ext))
	return r, nil
}

// Names are the accepted types' names, sorted.
func (r *Registry) Names() []string {
	out := slices.Collect(maps.Keys(r.local))
	out = append(out, r.cfg.External...)
	sort.Strings(out)
	return out
}

// IsExternal reports whether name is an external type.
func (r *Registry) IsExternal(name string) bool {
	_, ok := slices.BinarySearch(r.cfg.External, name)
	return ok
}

// Lookup returns the type called name, with its published spec for an
// external type; ok is false for a type the deployment does not accept.
func (r *Registry) Lookup(ctx context.Context, name string) (Type, bool) {
	if t, ok := r.local[name]; ok {
		return t, true
	}
	ext, workers := r.read(ctx)
	if !r.IsExternal(name) {
		t, ok := workers[name]
		return t, ok
	}
	if t, ok := ext[name]; ok {
		return t, true
	}
	return Type{Name: name, External: true}, true
}

// List returns every accepted type, sorted by name.
func (r *Registry) List(ctx context.Context) []Type {
	ext, workers := r.read(ctx)
	out := make([]Type, 0, len(r.local)+len(r.cfg.External)+len(workers))
	for _, t := range r.local {
		out = append(out, t)
	}
	for _, t := range workers {
		if !r.IsExternal(t.Name) {
			out = append(out, t)
		}
	}
	for _, n := range r.cfg.External {
		t, ok := ext[n]
		if !ok {
			t = Type{Name: n, External: true}
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Known reports whether the deployment accepts name: a local or external
// type, or one a worker published.
func (r *Registry) Known(ctx context.Context, name string) bool {
	_, ok := r.Lookup(ctx, name)
	return ok
}

// read returns the accepted external types that have a published spec and
// the types workers published (not local, not named external), built once
// per read of the specs (read again once Refresh has passed): a submit
// does not parse a schema.
func (r *Registry) read(ctx context.Context) (ext, workers map[string]Type) {
	if r.cfg.Redis == nil {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	if r.published != nil && now.Sub(r.readAt) < r.cfg.Refresh {
		return r.published, r.workers
	}
	pipe := r.cfg.Redis.Pipeline() // both hashes are under {namespace}
	svcCmd := pipe.HGetAll(ctx, r.cfg.Keys.TaskTypes())
	var wrkCmd *redis.MapStringStringCmd
	if r.cfg.WorkerTypes != "" {
		wrkCmd = pipe.HGetAll(ctx, r.cfg.WorkerTypes)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Warn("reading the published task types", "err", err)
		}
		return r.published, r.workers
	}
	all := svcCmd.Val()
	out := make(map[string]Type, len(r.cfg.External))
	for _, name := range r.cfg.External {
		if t, ok := r.fromSpec(name, all[name], true); ok {
			out[name] = t
		}
	}
	wrk := map[string]Type{}
	if wrkCmd != nil {
		for name, raw := range wrkCmd.Val() {
			if _, local := r.local[name]; local || r.IsExternal(name) || !protocol.ValidTaskType(name) {
				continue
			}
			// a type a worker dispatches to a service: the service's spec
			if svc, ok := all[name]; ok {
				if t, ok := r.fromSpec(name, svc, true); ok {
					wrk[name] = t
					continue
				}
			}
			if t, ok := r.fromSpec(name, raw, false); ok {
				wrk[name] = t
			}
		}
	}
	r.published, r.workers, r.readAt = out, wrk, now
	return out, wrk
}

// fromSpec builds the type name from its published spec raw (a service's,
// or a worker's when not external); ok is false when there is none.
func (r *Registry) fromSpec(name, raw string, external bool) (Type, bool) {
	if raw == "" {
		return Type{}, false
	}
	var spec protocol.TypeSpec
	if json.Unmarshal([]byte(raw), &spec) != nil {
		return Type{}, false
	}
	t := Type{Name: name, External: external, Service: spec.Service, Description: spec.Description, Notify: spec.Notify}
	if len(spec.Params) > 0 {
		var schema map[string]any
		sch, err := param.FromJSONSchema(spec.Params)
		if err == nil && json.Unmarshal(spec.Params, &schema) == nil {
			t.Params, t.JSONSchema = sch, schema
		} else if r.unreadable[name] != raw {
			// said once per published spec, not on every read
			r.cfg.Logger.Warn("a published spec has params this registry cannot read: not checked at submit",
				"task_type", name, "service", spec.Service, "err", err)
		}
		if err != nil {
			r.unreadable[name] = raw
		}
	}
	return t, true
}

// ReadyMessage is the text a session is told when its task of type typ
// completes: the type's Notify template filled from the task's params
// (Render), else "Your <type> task is ready!". Both announcers use it (the
// outcome consumer for external tasks, the in-process notifier for the
// others); a nil registry gives the generic text.
func (r *Registry) ReadyMessage(ctx context.Context, typ string, params json.RawMessage) string {
	if r != nil {
		if t, ok := r.Lookup(ctx, typ); ok && t.Notify != "" {
			return Render(t.Notify, params)
		}
	}
	return "Your " + typ + " task is ready!"
}

var placeholder = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)

// Render fills tmpl's {field} placeholders with params' top-level values
// (strings as they are, other values as JSON); a placeholder whose field
// is absent is left as written.
func Render(tmpl string, params json.RawMessage) string {
	if !strings.Contains(tmpl, "{") {
		return tmpl
	}
	var p map[string]json.RawMessage
	_ = json.Unmarshal(params, &p)
	return placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		v, ok := p[m[1:len(m)-1]]
		if !ok {
			return m
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		return string(v)
	})
}

// Declared builds an in-process type from what its handler declares
// (package taskflow's TypeInfo): params as a param.Schema, or as a JSON
// Schema served whole (jsonSchema, read into params by the caller).
func Declared(name, description string, params param.Schema, jsonSchema json.RawMessage, check func(json.RawMessage) error, notify string) Type {
	t := Type{Name: name, Description: description, Params: params, Check: check, Notify: notify}
	if len(jsonSchema) > 0 {
		var m map[string]any
		if json.Unmarshal(jsonSchema, &m) == nil {
			t.JSONSchema = m
		}
	}
	return t
}
