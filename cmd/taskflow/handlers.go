package main

import (
	"github.com/taskflow/taskflow/internal/worker"
)

// newTaskMux builds the handler registry that `taskflow worker` and
// `taskflow dev` serve. Each task type is registered here once, so every
// process of a deployment offers the same types. Packages add one line
// each: builtin (noop, sleep), summarize, plan.
func newTaskMux(m *Main) (*worker.Mux, error) {
	mux := worker.NewMux()
	return mux, nil
}
