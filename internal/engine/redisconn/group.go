package redisconn

import "sync"

// Group runs calls in batches, a group commit: a call made while no batch
// is running runs at once, in a batch of its own; calls made while one
// runs wait and go together in the next batch. So a lone call costs one
// round trip as before, and calls that come together while Redis is
// answering share the next one. Run is given each batch (at most Max
// items, 0: no limit) in the order the calls came, and must answer each
// item in the item itself (its result fields). No goroutine outlives the
// batches: the caller whose batch ran goes on with the next while calls
// wait, in a goroutine that ends when none do.
type Group[T any] struct {
	Run func(items []T)
	Max int

	mu    sync.Mutex
	queue []groupCall[T]
	busy  bool
}

type groupCall[T any] struct {
	v    T
	done chan struct{}
}

// Do runs v in a batch and returns when that batch has run.
func (g *Group[T]) Do(v T) {
	done := make(chan struct{})
	g.mu.Lock()
	g.queue = append(g.queue, groupCall[T]{v: v, done: done})
	if g.busy {
		g.mu.Unlock()
		<-done
		return
	}
	g.busy = true
	g.runOne() // ours is in it: the queue had nothing else running
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.busy = false
		g.mu.Unlock()
	} else {
		g.mu.Unlock()
		go g.drain() // the calls that came meanwhile
	}
	<-done
}

// runOne runs the next batch of the queue; g.mu is held on entry and
// released on return.
func (g *Group[T]) runOne() {
	n := len(g.queue)
	if g.Max > 0 && n > g.Max {
		n = g.Max
	}
	batch := g.queue[:n:n]
	g.queue = append([]groupCall[T](nil), g.queue[n:]...)
	g.mu.Unlock()
	vs := make([]T, len(batch))
	for i, c := range batch {
		vs[i] = c.v
	}
	g.Run(vs)
	for _, c := range batch {
		close(c.done)
	}
}

// drain runs batches until no call waits.
func (g *Group[T]) drain() {
	g.mu.Lock()
	for len(g.queue) > 0 {
		g.runOne()
		g.mu.Lock()
	}
	g.busy = false
	g.mu.Unlock()
}
