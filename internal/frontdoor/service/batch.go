package service

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/taskflow/taskflow/internal/engine/store"
)

// batcher gathers concurrent submits into one EnqueueBatch call. A submit
// never waits for company: a batch worker takes the first request, then
// whatever is already queued (up to max), and writes them at once. Under
// load this turns N script calls into N/max; alone, a submit costs one call
// as before.
type batcher struct {
	s    *Service
	max  int
	reqs chan *pending
	wg   sync.WaitGroup
	once sync.Once
}

type pending struct {
	ctx  context.Context
	req  store.EnqueueRequest
	done chan enqueued
}

type enqueued struct {
	r   store.Enqueued
	err error
}

func newBatcher(s *Service, max, workers int) *batcher {
	b := &batcher{s: s, max: max, reqs: make(chan *pending, max*workers)}
	for range workers {
		b.wg.Add(1)
		go b.run()
	}
	return b
}

func (b *batcher) close() {
	b.once.Do(func() {
		close(b.reqs)
		b.wg.Wait()
	})
}

// enqueue submits r and waits for its outcome.
func (b *batcher) enqueue(ctx context.Context, r store.EnqueueRequest) (store.Enqueued, error) {
	if b.max <= 1 {
		return b.s.enqueueOne(ctx, r)
	}
	p := &pending{ctx: ctx, req: r, done: make(chan enqueued, 1)}
	select {
	case b.reqs <- p:
	case <-ctx.Done():
		return store.Enqueued{}, ctx.Err()
	}
	select {
	case res := <-p.done:
		return res.r, res.err
	case <-ctx.Done():
		// The write may still happen; the caller learns nothing of it.
		return store.Enqueued{}, ctx.Err()
	}
}

func (b *batcher) run() {
	defer b.wg.Done()
	batch := make([]*pending, 0, b.max)
	for first := range b.reqs {
		batch = append(batch[:0], first)
	gather:
		for len(batch) < b.max {
			select {
			case p, ok := <-b.reqs:
				if !ok {
					break gather
				}
				batch = append(batch, p)
			default:
				break gather
			}
		}
		b.write(batch)
	}
}

// write enqueues a batch; if the batch call fails as a whole (one request
// did not validate), each request is retried alone so that one bad submit
// cannot fail its neighbours. The store writes each task's session index
// entry in the same script call.
func (b *batcher) write(batch []*pending) {
	if len(batch) == 1 {
		p := batch[0]
		r, err := b.s.enqueueOne(p.ctx, p.req)
		p.done <- enqueued{r, err}
		return
	}
	reqs := make([]store.EnqueueRequest, len(batch))
	for i, p := range batch {
		reqs[i] = p.req
	}
	ctx := context.WithoutCancel(batch[0].ctx)
	rs, err := b.s.st.EnqueueResults(ctx, reqs)
	if err == nil && len(rs) == len(batch) {
		for i, p := range batch {
			p.done <- enqueued{rs[i], nil}
		}
		return
	}
	// Batches are at most one store chunk, so a failed call wrote nothing
	// only when it failed validation; any other error (Redis unreachable)
	// may or may not have written: report it rather than write twice.
	if !errors.Is(err, store.ErrInvalid) {
		if err == nil {
			err = fmt.Errorf("service: enqueue batch returned %d tasks for %d requests", len(rs), len(batch))
		}
		for _, p := range batch {
			p.done <- enqueued{store.Enqueued{}, err}
		}
		return
	}
	for _, p := range batch {
		r, err := b.s.enqueueOne(p.ctx, p.req)
		p.done <- enqueued{r, err}
	}
}

// enqueueOne writes one request alone.
func (s *Service) enqueueOne(ctx context.Context, r store.EnqueueRequest) (store.Enqueued, error) {
	rs, err := s.st.EnqueueResults(ctx, []store.EnqueueRequest{r})
	if err != nil {
		return store.Enqueued{}, err
	}
	return rs[0], nil
}
