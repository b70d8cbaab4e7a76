package redisconn_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
)

// TestGroup: every call runs once, in a batch of at most Max, and gets its
// own answer; calls made while a batch runs share later batches.
func TestGroup(t *testing.T) {
	t.Parallel()
	type call struct{ in, out int }
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	first := true
	g := &redisconn.Group[*call]{Max: 8, Run: func(cs []*call) {
		mu.Lock()
		sizes = append(sizes, len(cs))
		wait := first
		first = false
		mu.Unlock()
		if wait {
			<-release // the others queue meanwhile
		}
		for _, c := range cs {
			c.out = c.in * 2
		}
	}}
	calls := make([]*call, 20)
	var started atomic.Int32
	var wg sync.WaitGroup
	for i := range calls {
		calls[i] = &call{in: i}
		wg.Add(1)
		go func() { defer wg.Done(); started.Add(1); g.Do(calls[i]) }()
		if i == 0 {
			for { // the first batch is running
				mu.Lock()
				n := len(sizes)
				mu.Unlock()
				if n == 1 {
					break
				}
			}
		}
	}
	for started.Load() < 20 {
		runtime.Gosched()
	}
	for range 1000 { // the last ones from started to queued
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	total := 0
	for _, n := range sizes {
		require.LessOrEqual(t, n, 8)
		total += n
	}
	require.Equal(t, 20, total)
	require.Equal(t, 1, sizes[0])
	require.Less(t, len(sizes), 20, "calls that came together shared batches: %v", sizes)
	for i, c := range calls {
		require.Equal(t, 2*i, c.out)
	}
}
