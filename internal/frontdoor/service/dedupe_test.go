package service

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

func TestDedupeByIDKeepsLatestRead(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	mk := func(id string, st task.State, at time.Duration) *task.Task {
		return &task.Task{ID: id, State: st, UpdatedAt: t0.Add(at)}
	}
	ts := []*task.Task{
		mk("a", task.StatePending, 0), mk("b", task.StatePending, 1), mk("a", task.StateActive, 2),
		mk("c", task.StateCompleted, 3), mk("a", task.StateCompleted, 4), mk("b", task.StateActive, 1),
	}
	dups := dedupeByID(ts)
	require.Equal(t, 3, dups)
	kept := map[string]task.State{}
	for _, x := range ts[:len(ts)-dups] {
		_, seen := kept[x.ID]
		require.False(t, seen, "%s twice", x.ID)
		kept[x.ID] = x.State
	}
	require.Equal(t, map[string]task.State{"a": task.StateCompleted, "b": task.StateActive, "c": task.StateCompleted}, kept,
		"the copy read last (latest updated_at; on a tie the later one) wins")
	require.Zero(t, dedupeByID([]*task.Task{mk("x", task.StatePending, 0), mk("y", task.StatePending, 0)}))
}
