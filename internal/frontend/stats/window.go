// Package stats keeps a rolling window of the engine's throughput for the
// dashboard: tasks enqueued, completed and failed per step, start latency
// percentiles per step, and sampled queue depths. The window lives in the
// memory of the process that follows the lifecycle event stream (the API);
// it is rebuilt from the stream when the process starts, so a page opened
// right after a restart still has history, as far back as the capped stream
// reaches. Depth samples are taken by the process itself and start empty.
package stats

import (
	"math"
	"sync"
	"time"

	"github.com/taskflow/taskflow/task"
)

// Config sizes a Window.
type Config struct {
	// Step is the width of one point. Default 5s.
	Step time.Duration
	// Span is how far back the window reaches. Default 15m.
	Span time.Duration
	// MaxTracked bounds the tasks remembered between becoming PENDING and
	// starting (for start latency). Default 200,000; past it the memory is
	// cleared and the starts of the forgotten tasks are not measured.
	MaxTracked int
}

func (c Config) withDefaults() Config {
	if c.Step <= 0 {
		c.Step = 5 * time.Second
	}
	if c.Span < c.Step {
		c.Span = 15 * time.Minute
	}
	if c.MaxTracked <= 0 {
		c.MaxTracked = 200000
	}
	return c
}

// Latency histogram: bin i holds latencies in [base·g^(i-1), base·g^i),
// bin 0 everything below base; the last bin is open-ended. 1.2 keeps a
// reported percentile within 10 % of the true one.
const (
	latBase   = 0.05 // ms
	latGrowth = 1.2
	latBins   = 96 // up to about 50 ms · 1.2^95 ≈ 1.6 hours
)

type bucket struct {
	start      int64 // unix ms of the step's start; 0 = never used
	enqueued   int64
	completed  int64
	failed     int64
	dead       int64
	lat        [latBins]uint32
	latN       uint32
	depth      map[string]int64
	depthTaken bool
}

func (b *bucket) reset(start int64) {
	*b = bucket{start: start}
}

// Window is the rolling window. Safe for concurrent use.
type Window struct {
	cfg  Config
	step int64 // ms
	mu   sync.Mutex
	ring []bucket
	// pendingSince: task id → unix ms it last became PENDING.
	pendingSince map[string]int64
}

// New returns an empty Window.
func New(cfg Config) *Window {
	cfg = cfg.withDefaults()
	n := int(cfg.Span / cfg.Step)
	return &Window{cfg: cfg, step: cfg.Step.Milliseconds(), ring: make([]bucket, n), pendingSince: map[string]int64{}}
}

// bucketFor returns the bucket of time ms, recycling a stale slot; nil when
// ms is older than the window reaches relative to what the slot holds.
func (w *Window) bucketFor(ms int64) *bucket {
	start := ms - ms%w.step
	b := &w.ring[(start/w.step)%int64(len(w.ring))]
	switch {
	case b.start == start:
		return b
	case b.start < start:
		b.reset(start)
		return b
	default: // the slot already holds a newer step: ms is out of the window
		return nil
	}
}

// Event is what the window reads of a lifecycle event (a task's state
// change, eventlog.Event): the follower of the event stream copies these
// fields, so that the window holds no Redis client nor the reader that has
// one.
type Event struct {
	TaskID string
	From   task.State // empty when the task was created
	To     task.State
	At     time.Time
}

// Observe counts one lifecycle event.
func (w *Window) Observe(e Event) {
	ms := e.At.UnixMilli()
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.bucketFor(ms)
	switch e.To {
	case task.StatePending:
		if len(w.pendingSince) >= w.cfg.MaxTracked {
			clear(w.pendingSince)
		}
		w.pendingSince[e.TaskID] = ms
		if b != nil && e.From == "" {
			b.enqueued++
		}
		return
	case task.StateActive:
		t0, ok := w.pendingSince[e.TaskID]
		delete(w.pendingSince, e.TaskID)
		if ok && b != nil && ms >= t0 {
			b.lat[latBin(float64(ms-t0))]++
			b.latN++
		}
		return
	}
	delete(w.pendingSince, e.TaskID) // any other state: it is not waiting to start
	if b == nil {
		return
	}
	switch e.To {
	case task.StateCompleted:
		b.completed++
	case task.StateFailed, task.StateTimeout:
		b.failed++
	case task.StateDLQ:
		b.dead++
	}
}

// ObserveDepth records a sample of queue depths taken at at; the last
// sample of a step is the step's.
func (w *Window) ObserveDepth(at time.Time, depth map[string]int64) {
	cp := make(map[string]int64, len(depth))
	for k, v := range depth {
		cp[k] = v
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if b := w.bucketFor(at.UnixMilli()); b != nil {
		b.depth = cp
		b.depthTaken = true
	}
}

func latBin(ms float64) int {
	if ms < latBase {
		return 0
	}
	i := 1 + int(math.Log(ms/latBase)/math.Log(latGrowth))
	return min(i, latBins-1)
}

// binValue is the value reported for bin i: its upper bound (a percentile
// is never understated).
func binValue(i int) float64 {
	return latBase * math.Pow(latGrowth, float64(i))
}

func percentile(h *[latBins]uint32, n uint32, q float64) float64 {
	rank := uint32(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint32
	for i, c := range h {
		seen += c
		if seen >= rank {
			return math.Round(binValue(i)*100) / 100
		}
	}
	return math.Round(binValue(latBins-1)*100) / 100
}

// Series is the window as columns, oldest step first, one entry per step
// of the span (a step without events has zero counts). The JSON is the
// API's /api/v1/stats/series.
type Series struct {
	StepSeconds float64 `json:"step_seconds" jsonschema:"width of one step"`
	// At is each step's start, unix seconds.
	At           []int64 `json:"at" jsonschema:"each step's start, unix seconds"`
	Enqueued     []int64 `json:"enqueued" jsonschema:"tasks created in the step"`
	Completed    []int64 `json:"completed"`
	Failed       []int64 `json:"failed" jsonschema:"attempts that ended FAILED or TIMEOUT"`
	DeadLettered []int64 `json:"dead_lettered"`
	// StartP50Ms / StartP99Ms: time from becoming PENDING to ACTIVE of the
	// tasks that started in the step; null when none did.
	StartP50Ms []*float64 `json:"start_p50_ms" jsonschema:"from PENDING to ACTIVE, of the tasks started in the step; null: none started"`
	StartP99Ms []*float64 `json:"start_p99_ms"`
	// Depth per queue, the step's last sample; null where none was taken.
	Depth map[string][]*int64 `json:"depth" jsonschema:"per queue, the step's last sample; null: no sample in the step"`
	// Window is the whole span at once.
	Window Totals `json:"window"`
}

// Totals sums the window. Its start percentiles are those of every start
// in the window (the steps' histograms merged), not a mean of the steps'
// own: the one window figure a reader is shown (the dashboard's tiles,
// chart caption and table all show these).
type Totals struct {
	Enqueued     int64    `json:"enqueued"`
	Completed    int64    `json:"completed"`
	Failed       int64    `json:"failed"`
	DeadLettered int64    `json:"dead_lettered"`
	Starts       int64    `json:"starts" jsonschema:"tasks started"`
	StartP50Ms   *float64 `json:"start_p50_ms" jsonschema:"of every start in the window (the steps' histograms merged); null: none started"`
	StartP99Ms   *float64 `json:"start_p99_ms" jsonschema:"of every start in the window (the steps' histograms merged); null: none started"`
}

// Series returns the window ending with the step that holds now.
func (w *Window) Series(now time.Time) Series {
	n := len(w.ring)
	nowMS := now.UnixMilli()
	last := nowMS - nowMS%w.step
	first := last - int64(n-1)*w.step
	s := Series{
		StepSeconds: w.cfg.Step.Seconds(),
		At:          make([]int64, n), Enqueued: make([]int64, n), Completed: make([]int64, n),
		Failed: make([]int64, n), DeadLettered: make([]int64, n),
		StartP50Ms: make([]*float64, n), StartP99Ms: make([]*float64, n),
		Depth: map[string][]*int64{},
	}
	var all [latBins]uint32
	var allN uint32
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := 0; i < n; i++ {
		start := first + int64(i)*w.step
		s.At[i] = start / 1000
		b := &w.ring[(start/w.step)%int64(n)]
		if b.start != start {
			continue
		}
		s.Enqueued[i], s.Completed[i], s.Failed[i], s.DeadLettered[i] = b.enqueued, b.completed, b.failed, b.dead
		s.Window.Enqueued += b.enqueued
		s.Window.Completed += b.completed
		s.Window.Failed += b.failed
		s.Window.DeadLettered += b.dead
		if b.latN > 0 {
			p50, p99 := percentile(&b.lat, b.latN, 0.5), percentile(&b.lat, b.latN, 0.99)
			s.StartP50Ms[i], s.StartP99Ms[i] = &p50, &p99
			for j, c := range b.lat {
				all[j] += c
			}
			allN += b.latN
		}
		if b.depthTaken {
			for q, v := range b.depth {
				col, ok := s.Depth[q]
				if !ok {
					col = make([]*int64, n)
					s.Depth[q] = col
				}
				v := v
				col[i] = &v
			}
		}
	}
	s.Window.Starts = int64(allN)
	if allN > 0 {
		p50, p99 := percentile(&all, allN, 0.5), percentile(&all, allN, 0.99)
		s.Window.StartP50Ms, s.Window.StartP99Ms = &p50, &p99
	}
	return s
}

// Span is how far back the window reaches.
func (w *Window) Span() time.Duration { return w.cfg.Span }

// Step is the width of one point.
func (w *Window) Step() time.Duration { return w.cfg.Step }
