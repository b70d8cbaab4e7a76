package taskflow

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/taskflow/taskflow/task"
)

// running is what a handler's context carries: its task, and how its
// progress is recorded (none outside a Worker, e.g. a Mux called by a test).
type running struct {
	t        *task.Task
	progress progressWriter
}

type runningKey struct{}

func withTask(ctx context.Context, t *task.Task, progress progressWriter) context.Context {
	return context.WithValue(ctx, runningKey{}, &running{t: t, progress: progress})
}

// TaskFrom returns the task a handler's context was made for: its id,
// type, attempt (t.Attempt()), session, params. The attempt's deadline is
// the context's own (ctx.Deadline()).
func TaskFrom(ctx context.Context) (*task.Task, bool) {
	r, ok := ctx.Value(runningKey{}).(*running)
	if !ok {
		return nil, false
	}
	return r.t, true
}

// Progress is a running task's report of how far it is.
type Progress struct {
	// Percent is 0..100.
	Percent float64
	// Message says what it is doing, e.g. "rendering page 3 of 10".
	Message string
	// ETA is how long it expects to take still; 0: unknown.
	ETA float64
}

// ErrNoProgress is returned by ReportProgress outside a handler run by a
// Worker.
var ErrNoProgress = errors.New("taskflow: no running task in this context to report progress for")

// ReportProgress records the progress of the task whose handler got ctx.
// The API's result view, the dashboard and the MCP server show it as they
// show an external service's progress; it is kept 24 h. Reporting is
// best-effort for the task (an error is returned, the task goes on).
func ReportProgress(ctx context.Context, percent float64, message string) error {
	return ReportProgressDetail(ctx, Progress{Percent: percent, Message: message})
}

// ReportProgressDetail is ReportProgress with an ETA in seconds.
func ReportProgressDetail(ctx context.Context, p Progress) error {
	r, ok := ctx.Value(runningKey{}).(*running)
	if !ok {
		return ErrNoProgress
	}
	if math.IsNaN(p.Percent) || p.Percent < 0 || p.Percent > 100 {
		return fmt.Errorf("taskflow: progress %v must be within [0, 100]", p.Percent)
	}
	if math.IsNaN(p.ETA) || p.ETA < 0 {
		return fmt.Errorf("taskflow: ETA %v must not be negative", p.ETA)
	}
	if len(p.Message) > 1024 {
		p.Message = p.Message[:1024]
	}
	return r.progress.write(ctx, r.t.ID, p)
}
