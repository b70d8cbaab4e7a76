package plan

import (
	"context"
	"sync"
)

// weighted is a counting semaphore whose holders take n units at once, in
// FIFO order (a large request is not starved by small ones). It bounds the
// Redis commands an engine keeps in flight on one endpoint.
type weighted struct {
	size    int64
	mu      sync.Mutex
	cur     int64
	waiters []*waiter
}

type waiter struct {
	n     int64
	ready chan struct{}
}

func newWeighted(n int64) *weighted { return &weighted{size: n} }

// acquire takes n units (n is clamped to the size), waiting until they are
// free or ctx is done.
func (w *weighted) acquire(ctx context.Context, n int64) error {
	if n > w.size {
		n = w.size
	}
	w.mu.Lock()
	if w.cur+n <= w.size && len(w.waiters) == 0 {
		w.cur += n
		w.mu.Unlock()
		return nil
	}
	wt := &waiter{n: n, ready: make(chan struct{})}
	w.waiters = append(w.waiters, wt)
	w.mu.Unlock()
	select {
	case <-wt.ready:
		return nil
	case <-ctx.Done():
		w.mu.Lock()
		select {
		case <-wt.ready:
			// Granted while we gave up: hand the units back.
			w.cur -= n
			w.notify()
		default:
			for i, x := range w.waiters {
				if x == wt {
					w.waiters = append(w.waiters[:i], w.waiters[i+1:]...)
					break
				}
			}
			w.notify()
		}
		w.mu.Unlock()
		return ctx.Err()
	}
}

// release returns n units (clamped as in acquire).
func (w *weighted) release(n int64) {
	if n > w.size {
		n = w.size
	}
	w.mu.Lock()
	w.cur -= n
	w.notify()
	w.mu.Unlock()
}

// notify wakes waiters in order while they fit; w.mu is held.
func (w *weighted) notify() {
	for len(w.waiters) > 0 {
		wt := w.waiters[0]
		if w.cur+wt.n > w.size {
			return
		}
		w.cur += wt.n
		w.waiters = w.waiters[1:]
		close(wt.ready)
	}
}
