package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/taskflow/taskflow/internal/plan/batch"
	"github.com/taskflow/taskflow/internal/plan/ir"
)

// The run errors whose messages rankd prints as the reference does.
var (
	// ErrDeadlineExceeded: the request's deadline passed before the plan finished.
	ErrDeadlineExceeded = errors.New("Request deadline exceeded")
	// ErrNodeTimeout: one node ran longer than the node timeout.
	ErrNodeTimeout = errors.New("Node execution timeout")
)

// NodeError is a node's own failure (not a deadline or cancellation).
type NodeError struct {
	NodeID string
	Op     string
	Err    error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("Node '%s' (%s) failed: %v", e.NodeID, e.Op, e.Err)
}
func (e *NodeError) Unwrap() error { return e.Err }

// Request is one plan request: who it is for and its param values.
type Request struct {
	RequestID string
	UserID    int64
	Params    ir.Params
}

// RunOptions bound one run.
type RunOptions struct {
	// Deadline bounds the whole run (0: none).
	Deadline time.Duration
	// NodeTimeout bounds each node (0: none).
	NodeTimeout time.Duration
	// Trace records a per-node timeline in Result.Trace.
	Trace bool
}

// Place says where a node ran.
type Place string

// Places of NodeTrace.
const (
	PlaceIO     Place = "io"     // its own goroutine (IO nodes)
	PlacePool   Place = "pool"   // handed to the CPU pool
	PlaceInline Place = "inline" // on the goroutine that readied it
	PlaceFused  Place = "fused"  // kept on the pool slot of the CPU node before it
)

// NodeTrace is one node's line of the timeline.
type NodeTrace struct {
	NodeID     string        `json:"node_id"`
	Op         string        `json:"op"`
	Kind       string        `json:"kind"`
	Place      Place         `json:"place"`
	Start      time.Duration `json:"start_us"`
	End        time.Duration `json:"end_us"`
	RowsIn     int           `json:"rows_in"`
	RowsOut    int           `json:"rows_out"`
	RoundTrips int           `json:"redis_round_trips"`
	Err        string        `json:"error,omitempty"`
	ran        bool
}

// Result is a finished run.
type Result struct {
	// Outputs are the plan's output row sets, in the plan's order.
	Outputs []batch.RowSet
	// Trace is the per-node timeline (RunOptions.Trace), in plan order;
	// nodes that never started are absent.
	Trace []NodeTrace
	// CriticalRoundTrips is the most dependent Redis round trips on any
	// path of the DAG: the lower bound of the run's latency in RTTs.
	CriticalRoundTrips int
	// Elapsed is the run's wall time.
	Elapsed time.Duration
}

// Rows is the number of output rows.
func (r *Result) Rows() int {
	n := 0
	for _, o := range r.Outputs {
		n += o.Len()
	}
	return n
}

type run struct {
	e    *Engine
	c    *Compiled
	req  *Request
	opts RunOptions

	ctx    context.Context
	cancel context.CancelCauseFunc
	start  time.Time

	// nodes holds each node's state; ins backs every node's input slice
	// (one allocation each per run, whatever the plan's size).
	nodes []nodeState
	ins   []batch.RowSet
	left  atomic.Int32

	done chan struct{}
	once sync.Once
	err  error

	// cpuBusy counts the goroutines running CPU nodes or waiting for a
	// pool slot to run one: a deadline that passes while any does is
	// reported as the node's timeout (fail).
	cpuBusy atomic.Int32

	traceMu sync.Mutex
	traces  []NodeTrace
}

type nodeRun struct {
	r          *run
	n          *Node
	roundTrips int
}

// nodeState is one node's part of a run.
type nodeState struct {
	result  batch.RowSet
	pending atomic.Int32 // inputs not finished yet
	nr      nodeRun
	t0      time.Time   // when it started (traces)
	timer   *time.Timer // node timeout armed at submission (pool nodes)
}

// Run executes c for req. It returns at the first failure, cancelling
// every node still in flight (their goroutines end on their own, soon).
func (e *Engine) Run(ctx context.Context, c *Compiled, req *Request, opts RunOptions) (*Result, error) {
	if req == nil {
		req = &Request{}
	}
	if opts.Deadline > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeoutCause(ctx, opts.Deadline, ErrDeadlineExceeded)
		defer cancelT()
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &run{
		e: e, c: c, req: req, opts: opts, ctx: rctx, cancel: cancel, start: e.cfg.Now(),
		nodes: make([]nodeState, len(c.Nodes)), ins: make([]batch.RowSet, c.deps), done: make(chan struct{}),
	}
	if opts.Trace {
		r.traces = make([]NodeTrace, len(c.Nodes))
	}
	for i, n := range c.Nodes {
		r.nodes[i].pending.Store(int32(len(n.Deps)))
	}
	r.left.Store(int32(len(c.Nodes)))
	if err := rctx.Err(); err != nil {
		return nil, causeOf(rctx)
	}
	if len(c.Nodes) == 0 {
		r.finish()
	}
	for _, s := range c.Sources {
		r.dispatch(s)
	}
	select {
	case <-r.done:
	case <-rctx.Done():
		r.fail(causeOf(rctx))
	}
	res := &Result{Elapsed: e.cfg.Now().Sub(r.start)}
	if opts.Trace {
		r.traceMu.Lock()
		for _, t := range r.traces {
			if t.ran {
				res.Trace = append(res.Trace, t)
			}
		}
		r.traceMu.Unlock()
	}
	if r.err != nil {
		return res, r.err
	}
	res.Outputs = make([]batch.RowSet, len(c.Outputs))
	for k, o := range c.Outputs {
		res.Outputs[k] = r.nodes[o].result
	}
	res.CriticalRoundTrips = r.criticalPath()
	return res, nil
}

func causeOf(ctx context.Context) error {
	if c := context.Cause(ctx); c != nil {
		return c
	}
	return ctx.Err()
}

// fail ends the run with err (the first failure wins). The request
// deadline passing while a CPU node runs or waits for the pool is that
// node's timeout, "Node execution timeout", as in example 6
// and the reference, whose CPU offload waits min(deadline, node timeout);
// during IO or between nodes it is "Request deadline exceeded".
func (r *run) fail(err error) {
	r.once.Do(func() {
		if err == ErrDeadlineExceeded && r.cpuBusy.Load() > 0 {
			err = ErrNodeTimeout
		}
		r.err = err
		r.cancel(err)
		close(r.done)
	})
}

func (r *run) finish() { r.once.Do(func() { close(r.done) }) }

// dispatch starts node i on a goroutine of its own: IO nodes directly, CPU
// nodes once they hold a slot of the engine's CPU pool.
func (r *run) dispatch(i int) {
	n := r.c.Nodes[i]
	r.e.wg.Add(1)
	if n.Op.Kind == KindIO || r.e.cfg.CPUPolicy == PolicyInline {
		go func() {
			defer r.e.wg.Done()
			r.drive(i, false)
		}()
		return
	}
	go func() {
		defer r.e.wg.Done()
		// Everything this goroutine runs is CPU work (a pool goroutine
		// dispatches IO successors), its wait for a slot included.
		r.cpuBusy.Add(1)
		defer r.cpuBusy.Add(-1)
		// The node timeout counts the wait for a pool slot, as the
		// reference's timer starts when the work is submitted: a node
		// stuck behind busy workers times out like a slow one.
		if r.opts.NodeTimeout > 0 {
			r.nodes[i].timer = time.AfterFunc(r.opts.NodeTimeout, func() { r.fail(ErrNodeTimeout) })
		}
		select {
		case r.e.pool <- struct{}{}:
		case <-r.ctx.Done():
			if t := r.nodes[i].timer; t != nil {
				t.Stop()
			}
			return
		}
		r.drive(i, true)
	}()
}

// drive runs node i, then keeps running on this goroutine the successors
// that do not pay for a hand-off; the others are dispatched.
func (r *run) drive(i int, inPool bool) {
	first := PlaceIO
	if inPool {
		first = PlacePool
	} else if r.c.Nodes[i].Op.Kind == KindCPU {
		first = PlaceInline
	}
	r.driveFrom(item{i: i, place: first}, inPool)
}

// item is a unit of drive's work: a node, or a group of IO nodes.
type item struct {
	i     int
	place Place
	group *ioGroup
}

// dispatchGroup runs the rest of an IO group on a goroutine of its own.
func (r *run) dispatchGroup(g *ioGroup) {
	r.e.wg.Add(1)
	go func() {
		defer r.e.wg.Done()
		r.driveFrom(item{place: PlaceIO, group: g}, false)
	}()
}

func (r *run) driveFrom(first item, inPool bool) {
	if inPool {
		defer func() { <-r.e.pool }()
	}
	// Small fixed buffers keep a plain chain of nodes allocation-free.
	var queueBuf [8]item
	var readyBuf [8]int
	queue := append(queueBuf[:0], first)
	for len(queue) > 0 {
		it := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if r.ctx.Err() != nil {
			return
		}
		var ready []int
		if it.group != nil {
			var rest *ioGroup
			if ready, rest = r.runGroup(it.group, readyBuf[:0]); rest != nil {
				r.dispatchGroup(rest)
			}
		} else {
			ready = r.runNode(it.i, it.place, readyBuf[:0])
		}
		keptCPU, keptIO := false, false
		// IO nodes with steps that became ready together share their
		// pipelines (an IO goroutine keeps the group).
		var group []int
		if !inPool {
			for _, s := range ready {
				if r.c.Nodes[s].step != nil {
					group = append(group, s)
				}
			}
			if len(group) > 1 {
				keptIO = true
				queue = slices.Insert(queue, 0, item{place: PlaceIO, group: &ioGroup{ids: group}})
			} else {
				group = nil
			}
		}
		for _, s := range ready {
			n := r.c.Nodes[s]
			if n.Op.Kind == KindIO {
				if group != nil && n.step != nil {
					continue // in the group
				}
				if !inPool && !keptIO {
					// An IO goroutine carries on with the next IO node, after
					// the CPU nodes it keeps (the queue pops from the end), so
					// that a Redis wait never delays ready CPU work.
					keptIO = true
					queue = slices.Insert(queue, 0, item{i: s, place: PlaceIO})
					continue
				}
				r.dispatch(s)
				continue
			}
			if p, ok := r.runHere(n, inPool, &keptCPU); ok {
				queue = append(queue, item{i: s, place: p})
				continue
			}
			r.dispatch(s)
		}
	}
}

// runHere decides whether CPU node n runs on the current goroutine.
func (r *run) runHere(n *Node, inPool bool, kept *bool) (Place, bool) {
	switch r.e.cfg.CPUPolicy {
	case PolicyInline:
		return PlaceInline, true
	case PolicyPool:
		return "", false
	}
	if n.Op.Inline { // option A
		return PlaceInline, true
	}
	if !n.Op.Expensive && r.e.cfg.InlineMaxRows >= 0 && r.inputRows(n) <= r.e.cfg.InlineMaxRows { // option B
		return PlaceInline, true
	}
	if inPool && !*kept { // option C: the chain stays on this pool slot
		*kept = true
		return PlaceFused, true
	}
	return "", false
}

func (r *run) inputRows(n *Node) int {
	rows := 0
	for _, d := range n.Deps {
		rows += r.nodes[d].result.Len()
	}
	return rows
}

// runNode runs node i and returns the successors it made ready, appended
// to ready.
func (r *run) runNode(i int, place Place, ready []int) []int {
	n := r.c.Nodes[i]
	in := r.inputs(n)
	ns := &r.nodes[i]
	if n.Op.Kind == KindCPU && place != PlacePool && place != PlaceFused {
		// A CPU node run inline (pool and fused nodes are counted by
		// their pool goroutine).
		r.cpuBusy.Add(1)
		defer r.cpuBusy.Add(-1)
	}
	timer := ns.timer
	if timer == nil && r.opts.NodeTimeout > 0 {
		timer = time.AfterFunc(r.opts.NodeTimeout, func() { r.fail(ErrNodeTimeout) })
	}
	ns.nr = nodeRun{r: r, n: n}
	if r.traces != nil {
		ns.t0 = r.e.cfg.Now()
	}
	out, err := r.safeExec(&ns.nr, in)
	if timer != nil {
		timer.Stop()
	}
	return r.finishNode(i, place, out, err, ready)
}

// inputs are node n's input row sets, in its run's input slots.
func (r *run) inputs(n *Node) []batch.RowSet {
	in := r.ins[n.inOff : n.inOff+len(n.Deps) : n.inOff+len(n.Deps)]
	for k, d := range n.Deps {
		in[k] = r.nodes[d].result
	}
	return in
}

// finishNode records node i's outcome: its trace line, then either the
// run's failure or its result, appending the successors it made ready.
func (r *run) finishNode(i int, place Place, out batch.RowSet, err error, ready []int) []int {
	n, ns := r.c.Nodes[i], &r.nodes[i]
	if err != nil {
		if r.ctx.Err() == nil {
			if dl, ok := r.ctx.Deadline(); ok && !time.Now().Before(dl) {
				// A Redis read carries the run's deadline on its socket,
				// which can fail the read a moment before the context's
				// own timer fires: the deadline, not a node failure.
				<-r.ctx.Done()
			}
		}
		if r.ctx.Err() != nil {
			err = causeOf(r.ctx)
		} else {
			err = &NodeError{NodeID: n.ID, Op: n.Op.Name, Err: err}
		}
	}
	if r.traces != nil {
		rowsIn := 0
		for _, d := range n.Deps {
			rowsIn += r.nodes[d].result.Len()
		}
		t := NodeTrace{NodeID: n.ID, Op: n.Op.Name, Kind: n.Op.Kind.String(), Place: place,
			Start: ns.t0.Sub(r.start), End: r.e.cfg.Now().Sub(r.start), RowsIn: rowsIn, RoundTrips: ns.nr.roundTrips, ran: true}
		if err != nil {
			t.Err = err.Error()
		} else {
			t.RowsOut = out.Len()
		}
		r.traceMu.Lock()
		r.traces[i] = t
		r.traceMu.Unlock()
	}
	if err != nil {
		r.fail(err)
		return nil
	}
	ns.result = out
	for _, s := range n.Succ {
		if r.nodes[s].pending.Add(-1) == 0 {
			ready = append(ready, s)
		}
	}
	if r.left.Add(-1) == 0 {
		r.finish()
	}
	return ready
}

// ioGroup is a set of IO nodes with steps (Node.step) that became ready
// together: each round sends the commands of all their current steps in
// one pipeline per endpoint, so that, e.g., follow and recommendation
// after a viewer, then their two media reads, cost one write and one read
// each instead of two — the largest CPU cost of a plan here (see
// docs/benchmarks.md). Round trips stay what they would be alone.
type ioGroup struct {
	ids      []int
	steps    []*ioStep // each node's next step; nil before the start
	outs     []batch.RowSet
	deadline time.Time // of the node timeout
}

// runGroup runs g's rounds until a node finishes. It returns the
// successors made ready and, when some of g's nodes have steps left, the
// rest of g (for another goroutine, so that the finished nodes'
// successors do not wait for it).
func (r *run) runGroup(g *ioGroup, ready []int) ([]int, *ioGroup) {
	if g.steps == nil {
		g.steps, g.outs = make([]*ioStep, len(g.ids)), make([]batch.RowSet, len(g.ids))
		if r.opts.NodeTimeout > 0 {
			g.deadline = time.Now().Add(r.opts.NodeTimeout)
		}
		var t0 time.Time
		if r.traces != nil {
			t0 = r.e.cfg.Now()
		}
		for k, i := range g.ids {
			n, ns := r.c.Nodes[i], &r.nodes[i]
			ns.nr, ns.t0 = nodeRun{r: r, n: n}, t0
			in := r.inputs(n)
			st, out, err := protect(n, func() (*ioStep, batch.RowSet, error) { return n.step(&ns.nr, in) })
			if err != nil {
				return r.finishNode(i, PlaceIO, batch.RowSet{}, err, ready), nil
			}
			g.steps[k], g.outs[k] = st, out
		}
	}
	if r.opts.NodeTimeout > 0 {
		timer := time.AfterFunc(time.Until(g.deadline), func() { r.fail(ErrNodeTimeout) })
		defer timer.Stop()
	}
	for !slices.Contains(g.steps, nil) {
		cur := slices.Clone(g.steps)
		for k, st := range cur {
			if slices.ContainsFunc(cur[:k], func(o *ioStep) bool { return o.ep == st.ep }) {
				continue // sent with an earlier node's step
			}
			var cmds rueidis.Commands
			var nrs []*nodeRun
			for j := k; j < len(cur); j++ {
				if cur[j].ep == st.ep {
					cmds = append(cmds, cur[j].cmds...)
					nrs = append(nrs, &r.nodes[g.ids[j]].nr)
				}
			}
			res := make([]rueidis.RedisResult, len(cmds))
			if err := r.send(r.ctx, st.ep, cmds, res, nrs...); err != nil {
				return r.finishNode(g.ids[k], PlaceIO, batch.RowSet{}, err, ready), nil
			}
			for j := k; j < len(cur); j++ {
				o := cur[j]
				if o.ep != st.ep {
					continue
				}
				part := res[:len(o.cmds):len(o.cmds)]
				res = res[len(o.cmds):]
				next, out, err := protect(r.c.Nodes[g.ids[j]], func() (*ioStep, batch.RowSet, error) { return o.next(part) })
				if err != nil {
					return r.finishNode(g.ids[j], PlaceIO, batch.RowSet{}, err, ready), nil
				}
				g.steps[j], g.outs[j] = next, out
			}
		}
	}
	var rest *ioGroup
	for k, i := range g.ids {
		if g.steps[k] != nil {
			if rest == nil {
				rest = &ioGroup{deadline: g.deadline}
			}
			rest.ids, rest.steps, rest.outs = append(rest.ids, i), append(rest.steps, g.steps[k]), append(rest.outs, g.outs[k])
			continue
		}
		if ready = r.finishNode(i, PlaceIO, g.outs[k], nil, ready); r.ctx.Err() != nil {
			return nil, nil
		}
	}
	return ready, rest
}

// protect runs a step of node n, turning a panic into an error.
func protect(n *Node, f func() (*ioStep, batch.RowSet, error)) (st *ioStep, out batch.RowSet, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in op %s: %v", n.Op.Name, p)
		}
	}()
	return f()
}

// safeExec runs a node's exec, turning a panic into an error.
func (r *run) safeExec(nr *nodeRun, in []batch.RowSet) (out batch.RowSet, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in op %s: %v", nr.n.Op.Name, p)
		}
	}()
	return nr.n.exec(r.ctx, nr, in)
}

// criticalPath is the largest sum of round trips along a dependency path.
func (r *run) criticalPath() int {
	best := make([]int, len(r.c.Nodes))
	out := 0
	for _, i := range r.c.order {
		b := 0
		for _, d := range r.c.Nodes[i].Deps {
			b = max(b, best[d])
		}
		best[i] = b + r.nodes[i].nr.roundTrips
		out = max(out, best[i])
	}
	return out
}
