// Package rungroup runs the long-lived components of one process
// together, in the manner of River's start/stop services: each component
// is started with the group's context; the first to return — because it
// failed, or because it ended early — and the end of the parent context
// both stop every component; Wait waits for all of them and joins their
// errors.
//
// A component is a func(ctx) error that runs until ctx ends and then
// returns nil (or ctx's error): the Run methods of the worker, the
// scheduler, the outcome consumer, the handoff watcher, cron, the
// followers, the HTTP server's serve loop.
package rungroup

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Group is a set of running components. Build it with New.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	errs []error
}

// New returns an empty group whose components run under a context derived
// from ctx: when ctx ends, every component is stopped.
func New(ctx context.Context) *Group {
	ctx, cancel := context.WithCancel(ctx)
	return &Group{ctx: ctx, cancel: cancel}
}

// Start runs run in a goroutine of its own with the group's context. When
// run returns, for whatever reason, the group stops: the context of every
// other component is cancelled. The error run returns is kept for Wait,
// prefixed with name — unless the group was stopping already and the
// error is only that stop (context.Canceled, or the parent's deadline): a
// component stopped by the group did not fail.
//
// A component started after the group stopped gets a context that is
// already done.
func (g *Group) Start(name string, run func(ctx context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := run(g.ctx)
		stopping := g.ctx.Err()
		g.cancel()
		if err == nil || (stopping != nil && errors.Is(err, stopping)) {
			return
		}
		g.mu.Lock()
		g.errs = append(g.errs, fmt.Errorf("%s: %w", name, err))
		g.mu.Unlock()
	}()
}

// Stop stops every component (cancels the group's context) and returns
// at once; Wait waits for them.
func (g *Group) Stop() { g.cancel() }

// Wait waits until every component started has returned, then returns
// their errors joined in the order they came (nil when none failed). The
// group is stopped by then; it cannot be started again.
func (g *Group) Wait() error {
	g.wg.Wait()
	g.cancel() // no component: release the context
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.errs...)
}
