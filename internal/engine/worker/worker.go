package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskflow/taskflow/internal/engine/breaker"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/task"
)

// Causes a handler's context is cancelled with (context.Cause).
var (
	// ErrCancelRequested: the task was cancelled (store.Cancel).
	ErrCancelRequested = task.ErrCancelRequested
	// ErrShutdown: the worker is stopping and the grace period is over.
	ErrShutdown = task.ErrShutdown
	// ErrHandedOff is returned (or wrapped) by a handler that handed its
	// task to another holder with store.Handoff (the external-service
	// dispatcher): the worker frees the slot at once and writes nothing.
	ErrHandedOff = errors.New("worker: task handed off")
	// errCrash simulates a crashed process in tests.
	errCrash = errors.New("worker: crashed")
)

// Stats counts what a worker did since it started.
type Stats struct {
	Started, Completed, Failed, DeadLettered, Cancelled, Released, LeaseLost, HandedOff int64
	// DispatchedByFetch counts the tasks a fetch dispatched itself
	// (Config.FetchDispatch), also counted in Started and HandedOff.
	DispatchedByFetch int64
}

// Worker runs handlers for tasks fetched from a store: Concurrency handler
// goroutines fed by one fetch loop (batch fetch, blocking wait when idle),
// one acknowledgement loop (batched completions), one heartbeat loop
// (leases, cancel requests, worker info) and a cancel-request listener.
type Worker struct {
	st       *store.Store
	h        Handler
	cfg      Config
	log      *slog.Logger
	breakers *breaker.Set

	slots chan struct{} // a token per busy handler slot
	tasks chan job      // fetched tasks to handlers
	// handOffs holds a token per running HandOff task (Config.HandOff),
	// each in a goroutine of its own, counted by handingOff
	handOffs   chan struct{}
	handingOff sync.WaitGroup
	handSeq    atomic.Uint64 // the hand-off order (HandOffOrder)
	acks       chan store.Completion
	// retries are the flushes writing again the completions of a partition
	// whose call failed while another's succeeded (flush); ackLoop waits
	// for them before it ends.
	retries sync.WaitGroup

	mu       sync.Mutex
	inflight map[string]*running

	// qrun counts the tasks of each of cfg.Queues the worker holds
	// (fetched, not yet ended); qfree signals a slot of a queue at its
	// Concurrency freed.
	qrun  []atomic.Int64
	qfree chan struct{}
	names []string // cfg.Queues' names

	tokenSeq  atomic.Uint64
	startedAt int64 // unix ms at Run, published for the workers view
	crashed   atomic.Bool
	stopping  atomic.Bool // Run's context ended: start no more handlers
	idle      atomic.Bool // the fetch loop is waiting for a wake-up (tests)
	stats     struct {
		started, completed, failed, dlq, cancelled, released, lost, handedOff, byFetch atomic.Int64
	}
}

// job is a fetched task with its handler context (made at fetch time, so a
// cancel request that arrives before the handler starts is not lost).
type job struct {
	q      int // the index of its queue in cfg.Queues
	t      *task.Task
	ctx    context.Context
	cancel context.CancelCauseFunc
}

type running struct {
	token  string
	cancel context.CancelCauseFunc
}

// New returns a Worker serving h (usually a *Mux) from st.
func New(st *store.Store, h Handler, cfg Config) (*Worker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st == nil || h == nil {
		return nil, errors.New("worker: nil store or handler")
	}
	bs, err := breaker.NewSet(cfg.Breaker)
	if err != nil {
		return nil, err
	}
	for _, dep := range cfg.Dependencies {
		bs.Declare(dep) // listed (CLOSED) before the first task needs it
	}
	return &Worker{
		st: st, h: h, cfg: cfg, log: cfg.Logger.With("worker", cfg.ID), breakers: bs,
		slots:    make(chan struct{}, cfg.Concurrency+cfg.Prefetch),
		handOffs: make(chan struct{}, cfg.HandOffConcurrency),
		tasks:    make(chan job, cfg.Prefetch),
		acks:     make(chan store.Completion, cfg.Concurrency*2),
		inflight: map[string]*running{},
		qrun:     make([]atomic.Int64, len(cfg.Queues)),
		qfree:    make(chan struct{}, 1),
		names:    queueNames(cfg.Queues),
	}, nil
}

// ID returns the worker's id.
func (w *Worker) ID() string { return w.cfg.ID }

// Breakers returns the worker's circuit breakers.
func (w *Worker) Breakers() *breaker.Set { return w.breakers }

// Stats returns the worker's counters.
func (w *Worker) Stats() Stats {
	return Stats{
		Started: w.stats.started.Load(), Completed: w.stats.completed.Load(), Failed: w.stats.failed.Load(),
		DeadLettered: w.stats.dlq.Load(), Cancelled: w.stats.cancelled.Load(), Released: w.stats.released.Load(),
		LeaseLost: w.stats.lost.Load(), HandedOff: w.stats.handedOff.Load(), DispatchedByFetch: w.stats.byFetch.Load(),
	}
}

// Run serves tasks until ctx ends, then shuts down gracefully: it stops
// fetching, lets running handlers finish within ShutdownGrace, cancels the
// rest and hands them back to their queue, flushes completions, and
// returns. A Worker runs once.
func (w *Worker) Run(ctx context.Context) error {
	bg := context.WithoutCancel(ctx)
	w.startedAt = w.cfg.Clock.Now().UnixMilli()
	if err := w.publish(bg); err != nil {
		return err
	}
	workCtx, stopWork := context.WithCancelCause(bg)
	defer stopWork(nil)

	var handlers, aux sync.WaitGroup
	auxCtx, stopAux := context.WithCancel(bg)
	defer stopAux()

	ackDone := make(chan struct{})
	go func() { defer close(ackDone); w.ackLoop() }()
	aux.Add(3)
	go func() { defer aux.Done(); w.heartbeatLoop(auxCtx) }()
	ready, breakerReady := make(chan struct{}), make(chan struct{})
	go func() { defer aux.Done(); w.cancelListener(auxCtx, ready) }()
	go func() { defer aux.Done(); w.breakerListener(auxCtx, breakerReady) }()
	<-ready
	<-breakerReady

	for i := 0; i < w.cfg.Concurrency; i++ {
		handlers.Add(1)
		go func() { defer handlers.Done(); w.handlerLoop() }()
	}
	fetchDone := make(chan struct{})
	go func() { defer close(fetchDone); w.fetchLoop(ctx, workCtx); close(w.tasks) }()

	<-ctx.Done()
	w.stopping.Store(true)
	if err := w.st.Interrupt(bg, w.cfg.ID); err != nil {
		w.log.Warn("interrupt the idle wait", "err", err)
	}
	<-fetchDone
	if w.crashed.Load() {
		stopWork(errCrash)
	}
	allDone := make(chan struct{})
	go func() { handlers.Wait(); w.handingOff.Wait(); close(allDone) }()
	grace := time.NewTimer(w.cfg.ShutdownGrace)
	select {
	case <-allDone:
	case <-grace.C:
		w.log.Info("shutdown grace over: cancelling running tasks to hand them back")
		stopWork(ErrShutdown)
		<-allDone
	}
	grace.Stop()
	close(w.acks)
	<-ackDone
	stopAux()
	aux.Wait()
	if !w.crashed.Load() {
		if err := w.st.RemoveWorker(bg, w.cfg.ID); err != nil {
			w.log.Warn("remove worker entry", "err", err)
		}
	}
	return nil
}

// fetchLoop takes tasks while there are free handler slots, and blocks on
// the store's wake-up signal when the queues are empty.
func (w *Worker) fetchLoop(ctx, workCtx context.Context) {
	bg := context.WithoutCancel(ctx)
	backoff := 50 * time.Millisecond
	capacity := w.cfg.Concurrency + w.cfg.Prefetch
	deep := false    // the last fetch was full: the queue is deep
	handing := false // the last fetch's tasks were all handed off (Config.HandOff)
	var gather *time.Timer
	for {
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := 1
	more:
		for n < w.cfg.FetchBatch {
			select {
			case w.slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		// on a deep queue, wait up to FetchWait for more free slots so one
		// script call takes a bigger batch (the handlers that are free
		// meanwhile wait at most that long)
		if want := min(w.cfg.FetchBatch, capacity); deep && n < want && w.cfg.FetchWait > 0 {
			if gather == nil {
				gather = time.NewTimer(w.cfg.FetchWait)
			} else {
				gather.Reset(w.cfg.FetchWait)
			}
		wait:
			for n < want {
				select {
				case w.slots <- struct{}{}:
					n++
				case <-gather.C:
					break wait
				case <-ctx.Done():
					break wait
				}
			}
			if !gather.Stop() {
				select {
				case <-gather.C:
				default:
				}
			}
		}
		// while the queue's tasks are handed off (the last fetch's all
		// were), a fetch also takes as many as HandOff has room for (and
		// free places): those tasks need no handler slot, and a few slots
		// would cap each fetch (so the external path) at a few tasks per
		// round trip
		want := n
		if handing && deep && w.cfg.HandOffRoom != nil {
			want = min(w.cfg.FetchBatch, n+min(cap(w.handOffs)-len(w.handOffs), max(0, w.cfg.HandOffRoom())))
		}
		// the fetch itself must not be cut off half way: a lost reply
		// would leave its tasks ACTIVE until their leases expire
		fctx, cancel := context.WithTimeout(bg, 10*time.Second)
		seq := w.tokenSeq.Add(1)
		got, ds, qs, hint, capped, err := w.fetch(fctx, want, w.cfg.ID+"/"+strconv.FormatUint(seq, 10))
		cancel()
		if len(ds) > 0 {
			// dispatched by the fetch itself (Config.FetchDispatch):
			// started and handed off, no slot taken
			w.stats.started.Add(int64(len(ds)))
			w.stats.handedOff.Add(int64(len(ds)))
			w.stats.byFetch.Add(int64(len(ds)))
			w.cfg.FetchDispatch.Dispatched(ds)
		}
		// a slot for each fetched task that is not handed off: of the n
		// taken, those not needed are given back; when more such tasks
		// came (a queue whose types changed), each waits for one as it is
		// passed to the handlers, ACTIVE meanwhile as a prefetched task
		slotted := len(got)
		var off []bool // HandOff's answer per task (it counts each it says yes to)
		if w.cfg.HandOff != nil {
			off = make([]bool, len(got))
			for i, t := range got {
				if off[i] = w.cfg.HandOff(t.Type); off[i] {
					slotted--
				}
			}
		}
		for i := slotted; i < n; i++ {
			<-w.slots
		}
		held := min(n, slotted)
		handing = len(got)+len(ds) > 0 && slotted == 0
		if err != nil {
			w.log.Error("fetch", "err", err)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		deep = len(got)+len(ds) == want
		if len(got) == 0 && len(ds) > 0 {
			continue // all dispatched: fetch again
		}
		if len(got) > 0 {
			jobs := make([]job, len(got))
			w.mu.Lock()
			for i, t := range got {
				hctx, cancel := context.WithCancelCause(workCtx)
				jobs[i] = job{q: qs[i], t: t, ctx: hctx, cancel: cancel}
				w.inflight[t.ID] = &running{token: t.Lease, cancel: cancel}
			}
			w.mu.Unlock()
			for i, j := range jobs {
				if off != nil && off[i] {
					w.handOff(ctx, j)
					continue
				}
				if held > 0 {
					held--
				} else {
					w.slots <- struct{}{} // handlers give theirs back, stopping or not
				}
				w.tasks <- j
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		w.idle.Store(true)
		switch {
		case capped:
			// a queue with work is at this worker's concurrency for it:
			// wait for one of its tasks to end, or for work in the others
			waited := make(chan error, 1)
			go func() {
				_, err := w.st.WaitForWork(ctx, w.cfg.ID, w.cfg.IdleWait, w.names...)
				waited <- err
			}()
			select {
			case <-w.qfree:
				// end the blocked read (a token it leaves costs one extra
				// fetch later)
				_ = w.st.Interrupt(bg, w.cfg.ID)
				err = <-waited
			case err = <-waited:
			}
		case hint > 0 && hint < w.cfg.IdleWait:
			// a limit lets more start soon: fetch again then
			select {
			case <-time.After(hint):
			case <-ctx.Done():
			}
		default:
			_, err = w.st.WaitForWork(ctx, w.cfg.ID, w.cfg.IdleWait, w.names...)
		}
		w.idle.Store(false)
		if err != nil && ctx.Err() == nil {
			w.log.Error("wait for work", "err", err)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
		}
	}
}

type outsideSlotsKey struct{}

// outsideSlots is the value of outsideSlotsKey: the task's place in the
// order its worker handed tasks off (its fetch order).
type outsideSlots struct{ seq uint64 }

// OutsideSlots reports whether the task of a handler's context runs
// outside the handler slots (Config.HandOff said so when it was fetched).
func OutsideSlots(ctx context.Context) bool {
	_, ok := ctx.Value(outsideSlotsKey{}).(outsideSlots)
	return ok
}

// HandOffOrder is the place of the task of a handler's context in the
// order its worker handed tasks off outside the slots — the order they
// were fetched in, priorities and all — (0, false) for a task in a slot.
// Their goroutines reach the handler in any order: a handler that batches
// them (the dispatcher) sorts a batch by it.
func HandOffOrder(ctx context.Context) (uint64, bool) {
	v, ok := ctx.Value(outsideSlotsKey{}).(outsideSlots)
	return v.seq, ok
}

// handOff runs a task of a HandOff type (Config.HandOff) outside the
// handler slots (the fetch loop took no slot for it), and the
// task runs in a goroutine of its own once one of HandOffConcurrency
// places is free (the fetch loop waits for it meanwhile).
func (w *Worker) handOff(ctx context.Context, j job) {
	j.ctx = context.WithValue(j.ctx, outsideSlotsKey{}, outsideSlots{seq: w.handSeq.Add(1)})
	held := true
	select {
	case w.handOffs <- struct{}{}:
	case <-ctx.Done():
		// stopping: no place is waited for (the running ones may wait for
		// the shutdown itself); runTask hands the task back
		held = false
	}
	w.handingOff.Add(1)
	go func() {
		defer w.handingOff.Done()
		w.runTask(j)
		w.ended(j)
		if held {
			<-w.handOffs
		}
	}()
}

func (w *Worker) handlerLoop() {
	for j := range w.tasks {
		w.runTask(j)
		w.ended(j)
		<-w.slots
	}
}

// ended counts j's task out of its queue's running ones, and says a slot
// of a queue at its Concurrency is free.
func (w *Worker) ended(j job) {
	w.qrun[j.q].Add(-1)
	if w.cfg.Queues[j.q].Concurrency > 0 {
		select {
		case w.qfree <- struct{}{}:
		default:
		}
	}
}

func queueNames(qs []QueueConfig) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Name
	}
	return out
}

// fetch takes up to n tasks from the worker's queues: one store call when
// it serves one queue; else queue after queue, in the listed order
// (StrictOrder) or a weighted random one, each asked for what is still
// wanted within its Concurrency. It returns the index of each task's
// queue, the store's hint (FetchWithHint), and capped: some queue was
// skipped for being at its Concurrency.
func (w *Worker) fetch(ctx context.Context, n int, tokenPrefix string) (got []*task.Task, ds []store.Dispatched, qs []int, hint time.Duration, capped bool, err error) {
	r := store.FetchRequest{WorkerID: w.cfg.ID, Lease: w.cfg.Lease}
	for _, qi := range w.queueOrder() {
		want := n - len(got) - len(ds)
		if want == 0 {
			break
		}
		q := w.cfg.Queues[qi]
		if q.Concurrency > 0 {
			if room := q.Concurrency - int(w.qrun[qi].Load()); room < want {
				want = room
				capped = true
			}
			if want <= 0 {
				continue
			}
		}
		r.N, r.Queue, r.TokenPrefix = want, q.Name, tokenPrefix
		if len(w.cfg.Queues) > 1 {
			r.TokenPrefix = tokenPrefix + "q" + strconv.Itoa(qi)
		}
		ts, d, h, ferr := w.st.FetchAndDispatch(ctx, r, w.plan(ctx, want))
		if ferr != nil {
			err = ferr
			continue
		}
		ds = append(ds, d...)
		if h > 0 && (hint == 0 || h < hint) {
			hint = h
		}
		w.qrun[qi].Add(int64(len(ts)))
		got = append(got, ts...)
		for range ts {
			qs = append(qs, qi)
		}
	}
	if len(got)+len(ds) > 0 {
		err = nil // a queue that answered is progress; the next fetch retries the others
	}
	return got, ds, qs, hint, capped && len(got)+len(ds) == 0, err
}

// plan is what a fetch of up to n tasks dispatches itself
// (Config.FetchDispatch), less the types with a Dependency: nil for none.
func (w *Worker) plan(ctx context.Context, n int) *store.FetchDispatch {
	if w.cfg.FetchDispatch == nil {
		return nil
	}
	p := w.cfg.FetchDispatch.Plan(ctx, n)
	if p == nil || len(w.cfg.Dependencies) == 0 {
		return p
	}
	p.Types = slices.DeleteFunc(p.Types, func(t store.DispatchType) bool { return w.cfg.Dependencies[t.Name] != "" })
	return p
}

// queueOrder is the order of this fetch's queues: as listed with
// StrictOrder, else drawn by weight without replacement.
func (w *Worker) queueOrder() []int {
	qs := w.cfg.Queues
	order := make([]int, len(qs))
	for i := range order {
		order[i] = i
	}
	if len(qs) == 1 || w.cfg.StrictOrder {
		return order
	}
	total := 0
	for _, q := range qs {
		total += q.Weight
	}
	for i := 0; i < len(order)-1; i++ {
		x := rand.IntN(total)
		j := i
		for ; j < len(order)-1; j++ {
			x -= qs[order[j]].Weight
			if x < 0 {
				break
			}
		}
		order[i], order[j] = order[j], order[i]
		total -= qs[order[i]].Weight
	}
	return order
}

// runTask runs one task's handler and applies its outcome.
func (w *Worker) runTask(j job) {
	t, hctx := j.t, j.ctx
	defer j.cancel(nil)
	if w.stopping.Load() {
		// fetched (prefetched) but not started before shutdown: hand back
		w.forget(t.ID)
		if w.crashed.Load() {
			return
		}
		if err := w.st.Release(context.WithoutCancel(hctx), t.ID, t.Lease, time.Time{}, "shutdown"); err != nil {
			w.log.Warn("hand back at shutdown", "task", t.ID, "err", err)
		}
		w.stats.released.Add(1)
		return
	}
	w.stats.started.Add(1)
	hctx, span := startAttempt(hctx, t, w.cfg.Clock.Now())
	bg := context.WithoutCancel(hctx) // with the attempt's span: its log lines name the trace
	outcome := "completed"
	defer func() { endAttempt(span, outcome) }()
	if dep := w.cfg.Dependencies[t.Type]; dep != "" {
		if ok, wait := w.breakers.Allow(dep); !ok {
			w.forget(t.ID)
			due := w.cfg.Clock.Now().Add(wait)
			if err := w.st.Release(bg, t.ID, t.Lease, due, "breaker_open "+dep); err != nil {
				w.log.WarnContext(hctx, "release (breaker open)", "task", t.ID, "err", err)
			}
			w.stats.released.Add(1)
			outcome = "released"
			return
		}
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = w.cfg.DefaultTimeout
	}
	dctx, cancelT := context.WithTimeout(hctx, timeout)
	result, err := w.call(dctx, t)
	if err != nil && errors.Is(dctx.Err(), context.DeadlineExceeded) && hctx.Err() == nil {
		err = ownTimeout(err, timeout)
	}
	cancelT()
	cause := context.Cause(hctx)
	w.forget(t.ID)

	if errors.Is(cause, errCrash) || w.crashed.Load() {
		outcome = "crashed"
		return // a crashed process writes nothing
	}
	if dep := w.cfg.Dependencies[t.Type]; dep != "" {
		w.settleBreaker(dep, err, cause)
	}
	switch {
	case errors.Is(err, ErrHandedOff):
		w.stats.handedOff.Add(1)
		outcome = "handed_off"
		return // another holder owns the task now; the slot is free
	case errors.Is(cause, task.ErrLeaseLost):
		w.stats.lost.Add(1)
		outcome = "lease_lost"
		return // another worker owns the task now
	case err == nil:
		if result == nil {
			result = json.RawMessage("null")
		}
		w.acks <- store.Completion{ID: t.ID, Token: t.Lease, Result: result}
		return
	case errors.Is(cause, ErrShutdown):
		if rerr := w.st.Release(bg, t.ID, t.Lease, time.Time{}, "shutdown"); rerr != nil {
			w.log.WarnContext(bg, "hand back at shutdown", "task", t.ID, "err", rerr)
		}
		w.stats.released.Add(1)
		outcome = "released"
		return
	}
	var ce *task.CancelError
	if errors.Is(cause, ErrCancelRequested) || errors.As(err, &ce) {
		if cerr := w.st.CancelActive(bg, t.ID, t.Lease, "cancelled"); cerr != nil {
			w.log.WarnContext(bg, "cancel", "task", t.ID, "err", cerr)
		}
		w.stats.cancelled.Add(1)
		outcome = "cancelled"
		return
	}
	var du *task.DependencyUnavailableError
	if errors.As(err, &du) {
		w.waitForDependency(bg, t, du)
		outcome = "released"
		return
	}
	if span.IsRecording() {
		tracing.Fail(span, err, retry.Classify(err).ErrorType)
	}
	outcome = w.fail(bg, t, err)
}

// settleBreaker tells dep's circuit breaker what an attempt showed about
// the dependency. A success, or an HTTP answer below 500 (400, 404, ...:
// the dependency is up, the task is what is wrong), is a success; a 5xx,
// 408 or 429, or a transient failure without a status (timeout, refused
// connection), is a failure. An attempt that says nothing about it
// (cancelled, handed back at shutdown, handed off, its lease lost, waiting
// for the dependency, or a permanent error of the task's own such as bad
// input) releases the call: a HALF_OPEN breaker then lets the next task
// probe at once rather than refusing tasks for another Timeout.
func (w *Worker) settleBreaker(dep string, err, cause error) {
	var ce *task.CancelError
	var du *task.DependencyUnavailableError
	var hs retry.HTTPStatuser
	switch {
	case err == nil:
		w.breakers.Record(dep, true)
	case errors.Is(err, ErrHandedOff), errors.Is(cause, task.ErrLeaseLost), errors.Is(cause, ErrShutdown),
		errors.Is(cause, ErrCancelRequested), errors.As(err, &ce), errors.As(err, &du):
		w.breakers.Release(dep)
	case errors.As(err, &hs):
		code := hs.HTTPStatus()
		w.breakers.Record(dep, code < 500 && code != 408 && code != 429)
	case retry.Classify(err).Class == task.ClassTransient:
		w.breakers.Record(dep, false)
	default:
		w.breakers.Release(dep)
	}
}

// minDependencyWait is the shortest wait a DependencyUnavailableError
// reschedules a task for, so a handler reporting Wait 0 cannot spin.
const minDependencyWait = 100 * time.Millisecond

// waitForDependency hands a task whose outside dependency cannot be used
// now (a fleet rate limit, an open breaker seen by the handler) back to
// the scheduled set, due after the dependency's wait: no retry is spent and
// nothing is recorded on the breaker (the dependency did not fail; it was
// not called).
func (w *Worker) waitForDependency(ctx context.Context, t *task.Task, du *task.DependencyUnavailableError) {
	wait := max(du.Wait, minDependencyWait)
	reason := du.Reason
	if reason == "" {
		reason = "circuit open"
	}
	due := w.cfg.Clock.Now().Add(wait)
	cause := "dependency_unavailable " + du.Dependency + ": " + reason
	if err := w.st.Release(ctx, t.ID, t.Lease, due, cause); err != nil {
		w.log.Warn("release (dependency unavailable)", "task", t.ID, "dependency", du.Dependency, "err", err)
		return
	}
	w.stats.released.Add(1)
}

// ownTimeout names a failure that came when the attempt ran past the
// task's own timeout for what it is: TaskTimeout (transient, the Default
// schedule unless TASKFLOW_RETRY_SCHEDULES sets one), not the
// NetworkTimeout a bare context.DeadlineExceeded would be classified as.
// A handler that chose its own class (task.Permanent, task.Transient,
// an HTTP status) keeps it.
func ownTimeout(err error, timeout time.Duration) error {
	var pe *task.PermanentError
	var te *task.TransientError
	var hs retry.HTTPStatuser
	var ce *task.CancelError
	var du *task.DependencyUnavailableError
	if errors.As(err, &pe) || errors.As(err, &te) || errors.As(err, &hs) || errors.As(err, &ce) || errors.As(err, &du) {
		return err
	}
	return task.Transient(task.ErrTypeTaskTimeout, fmt.Errorf("the task's timeout of %s was exceeded: %w", timeout, err))
}

// call runs the handler, turning a panic into a failure with its stack.
func (w *Worker) call(ctx context.Context, t *task.Task) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			stack := debug.Stack()
			if len(stack) > 8192 {
				stack = stack[:8192]
			}
			err = task.Transient(task.ErrTypePanic, fmt.Errorf("panic: %v\n%s", p, stack))
		}
	}()
	return w.h.ProcessTask(ctx, t)
}

// fail records the attempt's failure and says what became of the task
// (failed: a retry is due; dlq; or not_recorded).
func (w *Worker) fail(ctx context.Context, t *task.Task, err error) string {
	d := retry.Classify(err)
	now := w.cfg.Clock.Now()
	due := now.Add(d.After)
	if d.After <= 0 {
		due = w.cfg.Retry.NextRetryAt(now, t.RetryCount, d.ErrorType)
	}
	msg := err.Error()
	if len(msg) > 16384 {
		msg = msg[:16384]
	}
	out, ferr := w.st.Fail(ctx, t.ID, t.Lease, store.Failure{
		ErrorType: d.ErrorType, Message: msg, Permanent: d.Class == task.ClassPermanent,
		RetryAt: due, Attempt: t.RetryCount + 1, Worker: w.cfg.ID,
	})
	if ferr != nil {
		w.log.WarnContext(ctx, "record failure", "task", t.ID, "err", ferr)
		return "not_recorded"
	}
	w.stats.failed.Add(1)
	if out.State == task.StateDLQ {
		w.stats.dlq.Add(1)
		return "dlq"
	}
	return "failed"
}

func (w *Worker) forget(id string) {
	w.mu.Lock()
	delete(w.inflight, id)
	w.mu.Unlock()
}

// interrupt cancels the handler of id with cause, if it runs here.
func (w *Worker) interrupt(id string, cause error) {
	w.mu.Lock()
	r, ok := w.inflight[id]
	w.mu.Unlock()
	if ok {
		r.cancel(cause)
	}
}

// ackLoop writes completions in batches: it takes what has queued up while
// the previous write was in flight (group commit), up to AckBatch.
func (w *Worker) ackLoop() {
	batch := make([]store.Completion, 0, w.cfg.AckBatch)
	for c := range w.acks {
		batch = append(batch[:0], c)
	gather:
		for len(batch) < w.cfg.AckBatch {
			select {
			case c, ok := <-w.acks:
				if !ok {
					break gather
				}
				batch = append(batch, c)
			default:
				break gather
			}
		}
		w.flush(batch, false)
	}
	w.retries.Wait()
}

// writeAside retries batch in a goroutine of its own (flush with aside),
// so the acknowledgements queued behind it do not wait for one shard.
func (w *Worker) writeAside(batch []store.Completion) {
	batch = slices.Clone(batch) // (the ack loop reuses its batch's array)
	w.retries.Add(1)
	go func() { defer w.retries.Done(); w.flush(batch, true) }()
}

// flush writes batch, retrying with backoff while Redis fails. The ack
// loop's own flush (aside false) hands what only a partition marked down
// failed to writeAside and returns, and gives up after 8 attempts (≈ 3 s);
// a flush aside retries it itself for up to a lease — a shard's failover
// takes seconds, and an acknowledgement that lands after it spares the
// task a second run (after the lease the reaper may have requeued it).
func (w *Worker) flush(batch []store.Completion, aside bool) {
	if w.crashed.Load() {
		return
	}
	start := time.Now()
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs, err := w.st.CompleteBatch(ctx, batch)
		cancel()
		if err != nil && !aside && errors.Is(err, store.ErrPartitionDown) {
			// every item is in partitions marked down while others
			// answer: the next acknowledgements (theirs) must not wait
			// out this one's backoff
			w.writeAside(batch)
			return
		}
		if err == nil {
			var again []store.Completion // their partition's Redis failed: write them again
			for i, e := range errs {
				switch {
				case e == nil:
					w.stats.completed.Add(1)
				case errors.Is(e, store.ErrUnapplied):
					again = append(again, batch[i])
					err = e
				default:
					w.stats.lost.Add(1)
					w.log.Debug("completion refused", "task", batch[i].ID, "err", e)
				}
			}
			if len(again) == 0 {
				return
			}
			if len(again) < len(batch) && !aside {
				// another partition's shard answered: write these again
				// aside, so the next completions (of the partitions that
				// answer) do not wait behind one shard's failover
				w.writeAside(again)
				return
			}
			batch = again
		}
		giveUp := attempt == 8
		if aside {
			giveUp = time.Since(start) >= w.cfg.Lease
		}
		if giveUp || w.crashed.Load() {
			w.log.Error("completions not written; their leases will expire and the tasks run again", "n", len(batch), "err", err)
			return
		}
		time.Sleep(backoff) // Redis is failing: back off before writing again
		backoff = min(backoff*2, time.Second)
	}
}

// heartbeatLoop renews leases of running tasks, stops the ones lost or
// cancelled, and publishes the worker's info (breaker states).
func (w *Worker) heartbeatLoop(ctx context.Context) {
	tick := time.NewTicker(w.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if w.crashed.Load() {
			return
		}
		w.mu.Lock()
		leases := make([]store.Lease, 0, len(w.inflight))
		for id, r := range w.inflight {
			leases = append(leases, store.Lease{ID: id, Token: r.token})
		}
		w.mu.Unlock()
		hctx, cancel := context.WithTimeout(ctx, w.cfg.HeartbeatInterval)
		res, err := w.st.Heartbeat(hctx, leases, w.cfg.Lease)
		cancel()
		if err != nil {
			w.log.Warn("heartbeat", "err", err)
			if res.Answered == 0 {
				continue // Redis did not answer: nor would the publish
			}
			// the partitions that answered still said what they said
		}
		for _, id := range res.Lost {
			w.interrupt(id, task.ErrLeaseLost)
		}
		for _, id := range res.CancelRequested {
			w.interrupt(id, ErrCancelRequested)
		}
		if err := w.publish(ctx); err != nil {
			w.log.Warn("publish worker info", "err", err)
		}
	}
}

func (w *Worker) publish(ctx context.Context) error {
	b, _ := json.Marshal(w.breakers.Snapshots())
	host, _ := os.Hostname()
	return w.st.PublishWorker(ctx, w.cfg.ID, map[string]string{
		"started_at":  strconv.FormatInt(w.startedAt, 10),
		"host":        host,
		"concurrency": strconv.Itoa(w.cfg.Concurrency),
		"types":       typesOf(w.h),
		"breakers":    string(b),
	}, 3*w.cfg.HeartbeatInterval)
}

// typesOf lists the task types h routes, when it says (a mux's Types).
func typesOf(h Handler) string {
	if m, ok := h.(interface{ Types() []string }); ok {
		b, _ := json.Marshal(m.Types())
		return string(b)
	}
	return "[]"
}

// cancelListener follows the store's cancel channels (one per partition)
// and interrupts the handlers of tasks cancelled while they run here.
func (w *Worker) cancelListener(ctx context.Context, ready chan<- struct{}) {
	// ready once subscribed to every channel, so no request after Run
	// started is missed
	err := redisconn.ListenAll(ctx, w.st.Client(), w.st.CancelChannels(), 0, func(bool) { close(ready) },
		func(id string) { w.interrupt(id, ErrCancelRequested) })
	if err != nil {
		w.log.Warn("cancel listener stopped", "err", err)
	}
}

// crash makes the worker stop as a killed process would: handlers are
// cancelled, nothing more is written, leases are left to expire. Tests
// call it before cancelling Run's context.
func (w *Worker) crash() { w.crashed.Store(true) }
