package taskflow

import (
	"context"
	"encoding/json"
	"testing"

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
