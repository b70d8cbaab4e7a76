package stats

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func ev(id string, from, to task.State, at time.Time) Event {
	return Event{TaskID: id, From: from, To: to, At: at}
}

func TestCountsPerStep(t *testing.T) {
	w := New(Config{Step: 5 * time.Second, Span: time.Minute})
	// step 0: two created, one started after 20 ms and completed
	w.Observe(ev("a", "", task.StatePending, t0))
	w.Observe(ev("b", "", task.StatePending, t0.Add(time.Second)))
	w.Observe(ev("a", task.StatePending, task.StateActive, t0.Add(20*time.Millisecond)))
	w.Observe(ev("a", task.StateActive, task.StateCompleted, t0.Add(30*time.Millisecond)))
	// step 2: b starts (10 s after it was created), fails, is retried and dead-lettered
	w.Observe(ev("b", task.StatePending, task.StateActive, t0.Add(11*time.Second)))
	w.Observe(ev("b", task.StateActive, task.StateFailed, t0.Add(11*time.Second)))
	w.Observe(ev("b", task.StateFailed, task.StatePending, t0.Add(12*time.Second)))
	w.Observe(ev("b", task.StatePending, task.StateActive, t0.Add(12*time.Second+100*time.Millisecond)))
	w.Observe(ev("b", task.StateActive, task.StateTimeout, t0.Add(13*time.Second)))
	w.Observe(ev("b", task.StateTimeout, task.StateFailed, t0.Add(13*time.Second)))
	w.Observe(ev("b", task.StateFailed, task.StateDLQ, t0.Add(13*time.Second)))

	s := w.Series(t0.Add(14 * time.Second))
	require.Len(t, s.At, 12)
	require.Equal(t, 5.0, s.StepSeconds)
	last := len(s.At) - 1 // step 2 (10–15 s) is the newest
	require.Equal(t, t0.Add(10*time.Second).Unix(), s.At[last])
	require.Equal(t, t0.Unix(), s.At[last-2])
	require.Equal(t, int64(2), s.Enqueued[last-2])
	require.Equal(t, int64(1), s.Completed[last-2])
	require.Equal(t, int64(0), s.Enqueued[last], "a retry is not a new task")
	require.Equal(t, int64(3), s.Failed[last], "FAILED, TIMEOUT, FAILED again")
	require.Equal(t, int64(1), s.DeadLettered[last])
	require.Nil(t, s.StartP50Ms[last-1], "no task started in step 1")

	// a started after 20 ms: the reported value is its bin's upper bound,
	// never below the truth and within 20 % above it
	p := *s.StartP50Ms[last-2]
	require.GreaterOrEqual(t, p, 20.0)
	require.Less(t, p, 24.0)
	// step 2 had two starts: 10 s (first try) and 100 ms (the retry)
	require.InDelta(t, 100, *s.StartP50Ms[last], 20)
	require.InDelta(t, 10000, *s.StartP99Ms[last], 2000)

	require.Equal(t, int64(2), s.Window.Enqueued)
	require.Equal(t, int64(3), s.Window.Starts)
	require.Equal(t, int64(1), s.Window.DeadLettered)
}

func TestWindowForgetsOldSteps(t *testing.T) {
	w := New(Config{Step: time.Second, Span: 10 * time.Second})
	w.Observe(ev("a", "", task.StatePending, t0))
	s := w.Series(t0.Add(9 * time.Second))
	require.Equal(t, int64(1), s.Window.Enqueued)
	s = w.Series(t0.Add(10 * time.Second))
	require.Equal(t, int64(0), s.Window.Enqueued, "the step of t0 left the window")

	// the slot is reused by a newer step; an event older than what the slot
	// holds is dropped, not added to the newer step
	w.Observe(ev("b", "", task.StatePending, t0.Add(10*time.Second)))
	w.Observe(ev("c", "", task.StatePending, t0))
	s = w.Series(t0.Add(10 * time.Second))
	require.Equal(t, int64(1), s.Window.Enqueued)
	require.Equal(t, int64(1), s.Enqueued[len(s.Enqueued)-1])
}

func TestDepthSamples(t *testing.T) {
	w := New(Config{Step: 5 * time.Second, Span: 20 * time.Second})
	w.ObserveDepth(t0.Add(time.Second), map[string]int64{"primary": 3, "dlq": 1})
	w.ObserveDepth(t0.Add(4*time.Second), map[string]int64{"primary": 5, "dlq": 1})
	w.ObserveDepth(t0.Add(11*time.Second), map[string]int64{"primary": 0, "dlq": 2})
	s := w.Series(t0.Add(12 * time.Second))
	require.Len(t, s.At, 4)
	col := s.Depth["primary"]
	require.Nil(t, col[0], "before the first sample")
	require.Equal(t, int64(5), *col[1], "the step's last sample")
	require.Nil(t, col[2], "a step without a sample stays empty")
	require.Equal(t, int64(0), *col[3])
	require.Equal(t, int64(2), *s.Depth["dlq"][3])
}

func TestPendingMemoryIsBounded(t *testing.T) {
	w := New(Config{MaxTracked: 10})
	for i := 0; i < 25; i++ {
		w.Observe(ev(fmt.Sprint(i), "", task.StatePending, t0))
	}
	require.LessOrEqual(t, len(w.pendingSince), 10)
	// a task that ends any other way is forgotten too
	w.Observe(ev("24", task.StatePending, task.StateCancelled, t0))
	_, ok := w.pendingSince["24"]
	require.False(t, ok)
}

func TestLatencyBins(t *testing.T) {
	require.Equal(t, 0, latBin(0))
	require.Equal(t, latBins-1, latBin(1e12))
	for _, ms := range []float64{0.06, 0.7, 1, 13, 250, 9000, 600000} {
		i := latBin(ms)
		require.GreaterOrEqual(t, binValue(i), ms, "bin %d of %v", i, ms)
		require.Less(t, binValue(i), ms*latGrowth*1.0001, "bin %d of %v", i, ms)
	}
}

// TestWindowPercentilesMergeTheSteps: the window's p50/p99 — the figures
// the overview shows in its tiles, its chart caption and its table — are
// one computation over every start of the window (the steps' histograms
// merged), never a mean of the steps' own percentiles, and they cover
// exactly the steps the chart plots: a step that left the window leaves
// both.
func TestWindowPercentilesMergeTheSteps(t *testing.T) {
	w := New(Config{Step: 5 * time.Second, Span: 30 * time.Second})
	start := func(id string, at time.Time, wait time.Duration) {
		w.Observe(ev(id, "", task.StatePending, at.Add(-wait)))
		w.Observe(ev(id, task.StatePending, task.StateActive, at))
	}
	// step 0: 98 quick starts (10 ms) and two slow ones (2 s)
	for i := 0; i < 98; i++ {
		start(fmt.Sprint("q", i), t0.Add(time.Second), 10*time.Millisecond)
	}
	start("slow1", t0.Add(time.Second), 2*time.Second)
	start("slow2", t0.Add(2*time.Second), 2*time.Second)
	// step 1: a single start of 1 s
	start("one", t0.Add(6*time.Second), time.Second)

	now := t0.Add(7 * time.Second) // the injected clock
	s := w.Series(now)
	last := len(s.At) - 1
	// the steps' own figures, as the chart plots them
	require.InDelta(t, 10, *s.StartP50Ms[last-1], 2)
	require.InDelta(t, 2000, *s.StartP99Ms[last-1], 400)
	require.InDelta(t, 1000, *s.StartP50Ms[last], 200)
	// the window: the 101 starts together. A mean of the steps would say
	// p50 ≈ 505 ms and p99 ≈ 1,500 ms; the merged samples say ≈ 10 ms and
	// ≈ 2,000 ms (the 100th of 101 starts, ranked).
	require.EqualValues(t, 101, s.Window.Starts)
	require.InDelta(t, 10, *s.Window.StartP50Ms, 2)
	require.InDelta(t, 2000, *s.Window.StartP99Ms, 400)
	require.Equal(t, w.Series(now), s, "the same clock reads the same window")

	// 30 s later step 0 has left the window: the tiles and the chart lose it together
	s = w.Series(t0.Add(31 * time.Second))
	require.EqualValues(t, 1, s.Window.Starts)
	require.InDelta(t, 1000, *s.Window.StartP50Ms, 200)
	for i, v := range s.StartP50Ms {
		if v != nil {
			require.Equal(t, t0.Add(5*time.Second).Unix(), s.At[i], "only step 1 still plotted")
		}
	}
}
