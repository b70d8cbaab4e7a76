package taskflow

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/task"
)

// handsOff is a handler that says it only hands its tasks off, of one
// type.
type handsOff struct{}

func (handsOff) HandsOff(taskType string) bool { return taskType == "ext.job" }
func (handsOff) HandOffRoom() int              { return 7 }
func (handsOff) ProcessTask(context.Context, *task.Task) (json.RawMessage, error) {
	return nil, nil
}

// TestHandOffTypes: the tasks whose type's handler says HandsOff for it
// (the external path's dispatcher, while the type has room) are the ones
// the engine runs outside its handler slots; middleware does not hide it.
func TestHandOffTypes(t *testing.T) {
	m := NewMux()
	m.Handle("ext.job", handsOff{})
	m.Handle("ext.full", handsOff{})
	m.HandleFunc("local.job", func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil })
	m.Use(func(h Handler) Handler { return h })
	for typ, want := range map[string]bool{"ext.job": true, "ext.full": false, "local.job": false, "unknown": false} {
		if got := m.handOff(typ); got != want {
			t.Errorf("handOff(%q) = %v, want %v", typ, got, want)
		}
	}
}

// TestHandOffRoom: the room the hand-off handlers report, each handler
// once however many types it serves; no room func without such a handler.
func TestHandOffRoom(t *testing.T) {
	m := NewMux()
	m.HandleFunc("local.job", func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil })
	if f := m.handOffRoom(); f != nil {
		t.Errorf("handOffRoom() = a func without a hand-off handler (room %d), want nil", f())
	}
	m.Handle("ext.job", handsOff{})
	m.Handle("ext.other", handsOff{})
	f := m.handOffRoom()
	if f == nil {
		t.Fatal("handOffRoom() = nil with a hand-off handler")
	}
	if got := f(); got != 7 {
		t.Errorf("handOffRoom()() = %d, want 7 (one handler)", got)
	}
}

// fetchPlanner is a handler that lets fetches dispatch the types it
// plans (the external path's dispatcher).
type fetchPlanner struct{ types []string }

func (p *fetchPlanner) ProcessTask(context.Context, *task.Task) (json.RawMessage, error) {
	return nil, nil
}

func (p *fetchPlanner) Plan(context.Context, int) *store.FetchDispatch {
	d := &store.FetchDispatch{}
	for _, t := range p.types {
		d.Types = append(d.Types, store.DispatchType{Name: t, Bound: -1})
	}
	return d
}

func (p *fetchPlanner) Dispatched([]store.Dispatched) {}

// TestFetchDispatchPlans: the Mux gives the worker its one dispatcher's
// plans cut to the types it routes to that dispatcher (a type the
// dispatcher saw but another handler serves here is left out); none while
// middleware is in use (it must see every task), nor with two
// dispatchers, nor without one.
func TestFetchDispatchPlans(t *testing.T) {
	ctx := context.Background()
	local := func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil }
	m := NewMux()
	m.HandleFunc("local.job", local)
	if m.fetchDispatch() != nil {
		t.Error("fetchDispatch() without a dispatcher: want nil")
	}
	p := &fetchPlanner{types: []string{"ext.job", "local.job", "gone.job"}}
	m.Handle("ext.job", p)
	m.Handle("ext.other", p)
	fd := m.fetchDispatch()
	if fd == nil {
		t.Fatal("fetchDispatch() = nil with a dispatcher")
	}
	plan := fd.Plan(ctx, 4)
	if plan == nil || len(plan.Types) != 1 || plan.Types[0].Name != "ext.job" {
		t.Errorf("plan %+v, want ext.job alone (local.job is another handler's, gone.job nobody's)", plan)
	}
	m.Use(func(h Handler) Handler { return h })
	if plan := fd.Plan(ctx, 4); plan != nil {
		t.Errorf("with middleware: plan %+v, want none", plan)
	}
	two := NewMux()
	two.Handle("a.job", &fetchPlanner{types: []string{"a.job"}})
	two.Handle("b.job", &fetchPlanner{types: []string{"b.job"}})
	if two.fetchDispatch() != nil {
		t.Error("fetchDispatch() with two dispatchers: want nil")
	}
}
