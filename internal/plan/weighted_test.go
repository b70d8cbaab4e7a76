package plan

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWeighted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWeighted(10)
	waiters := func() int { w.mu.Lock(); defer w.mu.Unlock(); return len(w.waiters) }
	require.NoError(t, w.acquire(ctx, 6))
	require.NoError(t, w.acquire(ctx, 4))

	// A waiter for 5 blocks; a later request for 1 queues behind it (FIFO)
	// even when 1 unit is free.
	got := make(chan int, 2)
	go func() { _ = w.acquire(ctx, 5); got <- 5 }()
	require.Eventually(t, func() bool { return waiters() == 1 }, 5*time.Second, time.Millisecond, "the request for 5 never waited")
	go func() { _ = w.acquire(ctx, 1); got <- 1 }()
	require.Eventually(t, func() bool { return waiters() == 2 }, 5*time.Second, time.Millisecond, "the request for 1 never queued behind it")
	w.release(1) // 9 held: the 1 would fit, but it is behind the 5
	w.mu.Lock()
	require.Len(t, w.waiters, 2)
	w.mu.Unlock()
	w.release(4) // 5 held: the 5 fits (10), the 1 does not
	require.Equal(t, 5, <-got)
	w.mu.Lock()
	require.Len(t, w.waiters, 1)
	w.mu.Unlock()
	w.release(5) // 5 held: the 1 fits
	require.Equal(t, 1, <-got)

	// Cancellation removes a waiter and frees nothing it did not hold.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.acquire(cctx, 10) }()
	require.Eventually(t, func() bool { return waiters() == 1 }, 5*time.Second, time.Millisecond, "the request for 10 never waited")
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	w.mu.Lock()
	require.EqualValues(t, 6, w.cur, "the cancelled waiter took nothing")
	w.mu.Unlock()
	w.release(6)
	require.NoError(t, w.acquire(ctx, 100), "a request above the size is clamped to it")
	w.mu.Lock()
	require.EqualValues(t, 10, w.cur)
	w.mu.Unlock()
}
