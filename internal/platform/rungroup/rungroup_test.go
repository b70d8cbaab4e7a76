package rungroup_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/platform/rungroup"
)

// untilDone is a well-behaved component: it runs until its context ends,
// then returns nil; stopped counts the components that did.
func untilDone(stopped *atomic.Int32) func(context.Context) error {
	return func(ctx context.Context) error {
		<-ctx.Done()
		stopped.Add(1)
		return nil
	}
}

// One component failing stops the others; Wait returns once all have
// returned, with the failure named after its component.
func TestOneFailureStopsAll(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	var stopped atomic.Int32
	g := rungroup.New(context.Background())
	g.Start("a", untilDone(&stopped))
	g.Start("b", untilDone(&stopped))
	g.Start("failing", func(context.Context) error {
		time.Sleep(10 * time.Millisecond)
		return boom
	})
	err := g.Wait()
	require.ErrorIs(t, err, boom)
	require.EqualError(t, err, "failing: boom")
	require.Equal(t, int32(2), stopped.Load(), "both others were stopped and waited for")
}

// The end of the parent context stops every component; none failed.
func TestParentContextStopsAll(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var stopped atomic.Int32
	g := rungroup.New(ctx)
	for range 5 {
		g.Start("c", untilDone(&stopped))
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned before anything ended: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, int32(5), stopped.Load())
}

// A component that ends early without an error stops the group too: the
// process's parts run together or not at all.
func TestEarlyReturnStopsAll(t *testing.T) {
	t.Parallel()
	var stopped atomic.Int32
	g := rungroup.New(context.Background())
	g.Start("a", untilDone(&stopped))
	g.Start("done", func(context.Context) error { return nil })
	require.NoError(t, g.Wait())
	require.Equal(t, int32(1), stopped.Load())
}

// Components that answer the stop with their context's error did not
// fail; every real failure is kept, joined.
func TestStopIsNotAFailureButEveryFailureIsKept(t *testing.T) {
	t.Parallel()
	e1, e2 := errors.New("first"), errors.New("second")
	release := make(chan struct{})
	g := rungroup.New(context.Background())
	g.Start("quiet", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	g.Start("wrapped", func(ctx context.Context) error {
		<-ctx.Done()
		return errors.Join(errors.New("read loop"), ctx.Err())
	})
	g.Start("one", func(context.Context) error { <-release; return e1 })
	g.Start("two", func(ctx context.Context) error {
		<-ctx.Done()
		return e2 // a failure while stopping is still a failure
	})
	close(release)
	err := g.Wait()
	require.ErrorIs(t, err, e1)
	require.ErrorIs(t, err, e2)
	require.NotContains(t, err.Error(), "quiet")
	require.NotContains(t, err.Error(), "wrapped")
	require.Contains(t, err.Error(), "one: first")
	require.Contains(t, err.Error(), "two: second")
}

// The parent's deadline ends the group like a cancel: components that
// return it did not fail.
func TestParentDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	g := rungroup.New(ctx)
	g.Start("a", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	g.Start("b", func(ctx context.Context) error { <-ctx.Done(); return context.Cause(ctx) })
	require.NoError(t, g.Wait())
}

// Stop stops the components without waiting; Wait then returns.
func TestStop(t *testing.T) {
	t.Parallel()
	var stopped atomic.Int32
	g := rungroup.New(context.Background())
	g.Start("a", untilDone(&stopped))
	g.Start("b", untilDone(&stopped))
	g.Stop()
	require.NoError(t, g.Wait())
	require.Equal(t, int32(2), stopped.Load())
}

// An empty group waits for nothing; a component started after the stop
// finds its context done.
func TestEmptyAndLateStart(t *testing.T) {
	t.Parallel()
	require.NoError(t, rungroup.New(context.Background()).Wait())

	g := rungroup.New(context.Background())
	g.Stop()
	var sawDone atomic.Bool
	g.Start("late", func(ctx context.Context) error {
		sawDone.Store(ctx.Err() != nil)
		return ctx.Err()
	})
	require.NoError(t, g.Wait())
	require.True(t, sawDone.Load())
}

// A failure at start (a component that cannot begin) stops components
// that were still starting: none is left running.
func TestFailureAtStart(t *testing.T) {
	t.Parallel()
	var stopped atomic.Int32
	g := rungroup.New(context.Background())
	g.Start("broken", func(context.Context) error { return errors.New("cannot connect") })
	for range 3 {
		g.Start("c", untilDone(&stopped))
	}
	require.EqualError(t, g.Wait(), "broken: cannot connect")
	require.Equal(t, int32(3), stopped.Load())
}
