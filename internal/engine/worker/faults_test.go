package worker

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

// runCounter counts handler runs per task outside Redis, so that a run a
// fault hid from the task's history still counts.
type runCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *runCounter) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[id]++
}

func (r *runCounter) get(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[id]
}

// faultFigures is what a fault test reads back from the tasks' histories.
type faultFigures struct {
	reaps, reapedTasks, ranAgain int
}

// completedOnce checks that each task's history shows exactly one
// COMPLETED, and counts the lease reaps and the tasks whose handler ran
// more than once.
func completedOnce(t *testing.T, tasks []*task.Task, runs *runCounter) faultFigures {
	t.Helper()
	var f faultFigures
	for _, tk := range tasks {
		done, reaps := 0, 0
		for _, c := range tk.StateHistory {
			if c.To == task.StateCompleted {
				done++
			}
			if c.Cause == "lease_expired" {
				reaps++
			}
		}
		require.Equal(t, 1, done, "task %s completed %d times", tk.ID, done)
		f.reaps += reaps
		if reaps > 0 {
			f.reapedTasks++
		}
		if runs.get(tk.ID) > 1 {
			f.ranAgain++
		}
	}
	return f
}
