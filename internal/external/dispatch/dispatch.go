// Package dispatch is the worker side of the external path: the
// Dispatcher, the worker handler of every task type an external service
// performs, publishes the attempt's task.create and hands the attempt off
// to the services, and the in-flight bound admits at most so many
// attempts of a type at once across every dispatcher of the namespace.
//
// It owns two keys (keys.go): the task's last dispatch token and each
// type's in-flight places. The outcome consumer and the handoff watcher
// free a place when an attempt ends (Release) and read the token when an
// event carries none (LastToken).
package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/task"
)

// Config configures a Dispatcher.
type Config struct {
	// DefaultTimeout is the attempt's timeout for a task that sets none.
	// Default 5m (the worker's DefaultTimeout).
	DefaultTimeout time.Duration
	// Grace is added to the attempt's timeout to make the handed-off
	// lease: if no orchestrator marks the task TIMEOUT within Grace after
	// its timeout (none is running), the reaper requeues it. It is also
	// when the watcher first checks that a live service serves the type
	// (if the timeout is not sooner). Default 30s.
	Grace time.Duration
	// Retention of published events. Default 7 days.
	Retention time.Duration
	// InFlight bounds the attempts of one task type that are dispatched
	// (task.create published) and not finished, across every dispatcher of
	// the namespace. A task fetched while its type is full waits in the
	// worker (FIFO per type and process) for a place, so the backlog stays
	// in the core's priority queues, where high/normal/low are honoured,
	// instead of draining into the FIFO task.create stream. Default 0:
	// the bound sizes itself to Headroom (4) × the live services' total concurrency for
	// the type (each instance publishes its own when it registers;
	// Capacity), read at most every CapacityRefresh; DefaultInFlight (64)
	// while no live service publishes one. Positive: that bound;
	// negative: unbounded. The binary's processes take it from
	// TASKFLOW_EXTERNAL_INFLIGHT (internal/platform/config).
	InFlight int
	// CapacityRefresh is how often the live services' concurrency is read
	// again when InFlight is 0. Default 1s.
	CapacityRefresh time.Duration
	// AdmitPoll is how often a task waiting for a place looks again (one
	// ZCOUNT). Up to 16 waiters of a type look at once, so the faster they
	// look the more the first to look, not the first to wait, gets a freed
	// place: at 5ms high tasks waited behind most of a backlog of low ones
	// one run in five (TestInFlightBoundKeepsPrioritiesOnTheExternalPath).
	// Default 50ms.
	AdmitPoll time.Duration
	// AdmitWait is the longest a task waits for a place while holding its
	// worker's slot (and less than the handler's deadline); then it goes
	// back to the core (rescheduled handBackDelay later, no retry spent) and
	// the slot serves other work. Default 10s.
	AdmitWait time.Duration
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = 5 * time.Minute
	}
	if c.Grace == 0 {
		c.Grace = 30 * time.Second
	}
	if c.Retention <= 0 {
		c.Retention = protocol.DefaultRetention
	}
	if c.CapacityRefresh <= 0 {
		c.CapacityRefresh = time.Second
	}
	if c.AdmitPoll <= 0 {
		c.AdmitPoll = 50 * time.Millisecond
	}
	if c.AdmitWait <= 0 {
		c.AdmitWait = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Dispatcher is the worker handler of every task type an external service
// performs. A worker fetches the task as for any type (so priorities,
// scheduled runs, retries and leases are the core's); the dispatcher
// publishes task.create with the attempt's lease token and hands the
// attempt to the external path (store.Handoff): the task stays ACTIVE with
// the same token under a lease of timeout + Grace, and the worker's slot is
// free at once (the handler returns worker.ErrHandedOff). The outcome
// consumer (internal/external/outcome) applies the service's outcome with that
// token; the handoff watcher (internal/external/handoff) marks the task TIMEOUT
// when the timeout passes, forwards cancel requests to the services and
// fails the attempt (transient) when no live service serves the type any
// more.
type Dispatcher struct {
	st  *store.Store
	rdb redis.UniversalClient
	ns  keyspace.Namespace
	cfg Config
	sk  protocol.Keys
	k   keys
	pub *protocol.Publisher

	mu      sync.Mutex
	turns   map[string]chan struct{} // per task type: the waiter allowed to ask for a place
	waiting map[string]int           // per task type: dispatches waiting for a place
	sending map[string]int           // per task type: dispatches HandsOff let run outside the slots, not yet answered
	seen    map[string]int           // per task type: the bound last used (-1: none)
	held    map[string]int           // per task type: its in-flight count at its last dispatch (one partition)
	fullAt  map[string]time.Time     // per task type: when a dispatch last found it full

	caps bounds // the live services' concurrency (InFlight 0)

	// wakes are, per type, the channels of the dispatches waiting for a
	// place, in the order they began to wait: an announcement of k places
	// freed closes the first k (the subscriber of the freed channel runs
	// while any dispatch waits)
	wakes    map[string][]chan struct{}
	stopSub  context.CancelFunc
	waitersN int // dispatches waiting for a place, all types

	// dispatch.lua calls and handoffs made at the same time go to Redis
	// together (group commit: one pipeline per batch)
	dispatches   *redisconn.Group[*scriptCall]
	handoffGroup *redisconn.Group[*handoffCall]
	// with one partition: publish and handoff in one script per batch
	combined *redisconn.Group[*dispatchCall]
}

// scriptCall is one dispatch.lua call of a batch.
type scriptCall struct {
	call redisconn.ScriptCall
	seq  uint64 // as dispatchCall's
	res  *redis.Cmd
}

// dispatchCall is one attempt of a store.DispatchMany batch; seq is its
// task's place in its worker's hand-off order (worker.HandOffOrder, 0 for
// a task dispatched from a slot, which waited: first).
type dispatchCall struct {
	req store.DispatchRequest
	seq uint64
	res store.DispatchResult
}

// handoffCall is one handoff of a batch.
type handoffCall struct {
	req store.HandoffRequest
	res store.HandoffResult
}

// maxBatch is the most dispatches (or handoffs) sent in one pipeline.
const maxBatch = 256

// DefaultInFlight is Config.InFlight's default.
const DefaultInFlight = 64

// New returns the dispatcher of st's namespace.
func New(st *store.Store, cfg Config) *Dispatcher {
	cfg = cfg.withDefaults()
	d := &Dispatcher{st: st, rdb: st.Client(), ns: st.Namespace(), cfg: cfg, sk: protocol.NewKeys(st.Namespace()), k: newKeys(st.Namespace()),
		pub: protocol.NewPublisher(st.Client(), cfg.Retention, cfg.Now), turns: map[string]chan struct{}{}, waiting: map[string]int{}, wakes: map[string][]chan struct{}{}, sending: map[string]int{}, seen: map[string]int{}, held: map[string]int{}, fullAt: map[string]time.Time{},
		caps: bounds{rdb: st.Client(), ns: st.Namespace(), refresh: cfg.CapacityRefresh}}
	d.dispatches = &redisconn.Group[*scriptCall]{Max: maxBatch, Run: func(cs []*scriptCall) {
		slices.SortStableFunc(cs, func(a, b *scriptCall) int { return cmp.Compare(a.seq, b.seq) }) // as combined's
		calls := make([]redisconn.ScriptCall, len(cs))
		for i, c := range cs {
			calls[i] = c.call
		}
		for i, r := range redisconn.RunScripts(context.Background(), d.rdb, dispatchScript, calls) {
			cs[i].res = r
		}
	}}
	d.combined = &redisconn.Group[*dispatchCall]{Max: maxBatch, Run: func(cs []*dispatchCall) {
		// in the order the worker fetched them (a fetch takes by priority
		// weight; their goroutines come here in any order)
		slices.SortStableFunc(cs, func(a, b *dispatchCall) int { return cmp.Compare(a.seq, b.seq) })
		reqs := make([]store.DispatchRequest, len(cs))
		for i, c := range cs {
			reqs[i] = c.req
		}
		now := d.cfg.Now()
		batch := store.DispatchBatch{Stream: d.sk.Create(), MinID: protocol.MinID(now, d.cfg.Retention),
			EventType: string(protocol.TypeCreate), Stamp: protocol.FormatTime(now), Grace: d.cfg.Grace}
		for i, r := range d.st.DispatchMany(context.Background(), batch, reqs) {
			cs[i].res = r
		}
	}}
	d.handoffGroup = &redisconn.Group[*handoffCall]{Max: maxBatch, Run: func(cs []*handoffCall) {
		reqs := make([]store.HandoffRequest, len(cs))
		for i, c := range cs {
			reqs[i] = c.req
		}
		for i, r := range d.st.HandoffMany(context.Background(), reqs) {
			cs[i].res = r
		}
	}}
	return d
}

// HandsOff says whether a task of taskType may run outside the worker's
// handler slots (worker.Config.HandOff): yes while no dispatch of the type
// waits for an in-flight place in this process, so the dispatch is one
// round trip; no while the type is full, so the task waits holding a slot
// and the worker stops fetching once its slots wait, leaving the backlog
// in the core's priority queues.
//
// And at most the type's bound at a time are in their round trip outside
// the slots (the bound last seen; one until it is known): a burst fetched
// before the first answer says the type is full does not take more than
// the bound out of the queues.
func (d *Dispatcher) HandsOff(taskType string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiting[taskType] > 0 {
		return false
	}
	b, known := d.seen[taskType]
	if !known {
		b = 1
	}
	if b >= 0 && d.sending[taskType] >= b {
		return false
	}
	d.sending[taskType]++ // until its dispatch answers (sent)
	return true
}

// HandOffRoom is how many more tasks HandsOff would take now
// (worker.Config.HandOffRoom), counted from what the last dispatches
// answered: none while a task of any type waits for a place or a type
// was found full within fullQuiet, else per type half of its free places
// (its bound less its in-flight count at its last dispatch and the sends
// in their round trip; the other half for the tasks waiting in slots). A
// worker fetches that many beyond its free slots: the tasks of a type at
// or near its bound stay in the priority queues. With several partitions
// (no count answered) none.
func (d *Dispatcher) HandOffRoom() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Now()
	room := 0
	for typ, b := range d.seen {
		if d.waiting[typ] > 0 || now.Sub(d.fullAt[typ]) < fullQuiet {
			return 0
		}
		if b < 0 {
			return math.MaxInt32
		}
		n, ok := d.held[typ]
		if !ok || n < 0 {
			continue
		}
		room += max(0, b-n-d.sending[typ]) / 2
	}
	return room
}

// Plan implements worker.FetchDispatcher: a fetch of up to n tasks
// dispatches those of the types this dispatcher has dispatched before
// itself (store.FetchDispatch: the place, the event and the handoff in
// the fetch's own script call), with their bounds, the types' task.create
// stream and the prefix of its events' ids. Not a type a dispatch of this
// process waits a place for (its tasks come to ProcessTask, which has
// them wait in fetch order: one dispatched by a later fetch would pass
// them); a task the script finds its type full for comes to ProcessTask
// too. Nil with several partitions or tracing on (a traced dispatch is a
// span of its own).
func (d *Dispatcher) Plan(ctx context.Context, n int) *store.FetchDispatch {
	if n <= 0 || !d.st.CanDispatch() || tracing.Active() {
		return nil
	}
	now := d.cfg.Now()
	d.mu.Lock()
	types := make([]string, 0, len(d.seen))
	for typ := range d.seen {
		if d.waiting[typ] == 0 {
			types = append(types, typ)
		}
	}
	d.mu.Unlock()
	if len(types) == 0 {
		return nil
	}
	p := &store.FetchDispatch{Stream: d.sk.Create(), MinID: protocol.MinID(now, d.cfg.Retention),
		EventType: string(protocol.TypeCreate), Stamp: protocol.FormatTime(now), Grace: d.cfg.Grace,
		DefaultTimeout: d.cfg.DefaultTimeout, Types: make([]store.DispatchType, len(types)), EventIDPrefix: uuid.NewString()[:32]}
	for i, typ := range types {
		p.Types[i] = store.DispatchType{Name: typ, Inflight: d.k.inflight(typ), Bound: d.bound(ctx, typ)}
	}
	return p
}

// Dispatched implements worker.FetchDispatcher: what ProcessTask does
// after its dispatch for the tasks a fetch dispatched (the types'
// in-flight counts, the lifecycle lines).
func (d *Dispatcher) Dispatched(ds []store.Dispatched) {
	d.mu.Lock()
	for _, x := range ds {
		if x.InFlight >= 0 {
			d.held[x.Type] = x.InFlight
		}
	}
	d.mu.Unlock()
	ctx := context.Background()
	if !d.cfg.Logger.Enabled(ctx, slog.LevelInfo) {
		return
	}
	debug := d.cfg.Logger.Enabled(ctx, slog.LevelDebug)
	for _, x := range ds {
		if debug {
			d.cfg.Logger.DebugContext(ctx, "Event published", "stream", d.sk.Create(), "entry", x.EntryID)
		}
		if x.First {
			d.cfg.Logger.InfoContext(ctx, "Task created", "task_id", x.ID, "type", x.Type, "session", x.SessionID)
		} else {
			d.cfg.Logger.InfoContext(ctx, "Task dispatched", "task_id", x.ID, "task_type", x.Type, "attempt", x.Attempt)
		}
	}
}

// sent ends what HandsOff counted for a task of typ.
func (d *Dispatcher) sent(typ string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sending[typ]--; d.sending[typ] <= 0 {
		delete(d.sending, typ)
	}
}

// ProcessTask implements worker.Handler.
func (d *Dispatcher) ProcessTask(ctx context.Context, t *task.Task) (json.RawMessage, error) {
	if worker.OutsideSlots(ctx) { // HandsOff counted it
		defer d.sent(t.Type)
	}
	if t.Lease == "" {
		return nil, task.Permanent(errors.New("dispatch: the task has no lease token"))
	}
	params := t.Params
	if len(params) == 0 {
		params = json.RawMessage("null")
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = d.cfg.DefaultTimeout
	}
	// the producer span of the dispatch: task.create carries its
	// traceparent, which the service continues
	pctx, span := tracing.Start(ctx, "publish task.create", "", trace.SpanKindProducer)
	defer span.End()
	// the deadline the agent enforces, in seconds with its fraction: a
	// 0.5 s timeout is not sent as 0 ("none"), nor 1.5 s as 1
	cd := protocol.CreateData{
		TaskID: t.ID, TaskType: t.Type, Params: params, SessionID: t.SessionID,
		Timeout: timeout.Seconds(), Priority: string(t.Priority), CreatedBy: "agent",
		Attempt: t.RetryCount + 1, Token: t.Lease, Traceparent: tracing.Traceparent(pctx),
	}
	e, err := protocol.New(protocol.TypeCreate, d.cfg.Now(), cd)
	if err != nil {
		return nil, task.Permanent(fmt.Errorf("dispatch: %w", err))
	}
	// what a service's decoder checks (e.g. a task type the protocol
	// cannot carry), on the struct rather than by decoding the event
	if err := cd.Validate(); err != nil {
		return nil, task.Permanent(fmt.Errorf("dispatch: %w", err))
	}
	if span.IsRecording() {
		span.SetAttributes(append(tracing.Messaging("send", d.sk.Create(), e.ID), tracing.AttrOperationName.String("publish"),
			tracing.AttrTaskType.String(t.Type), tracing.AttrAttempt.Int(t.Attempt()))...)
	}
	prev, err := d.dispatch(ctx, t, e, timeout)
	if err != nil {
		tracing.Fail(span, err, "")
		return nil, err
	}
	// (the lines' arguments cost allocations even when their level is off)
	if d.cfg.Logger.Enabled(pctx, slog.LevelDebug) {
		d.cfg.Logger.DebugContext(pctx, "Event published", "stream", d.sk.Create(), "event_id", e.ID)
	}
	switch {
	case !d.cfg.Logger.Enabled(pctx, slog.LevelInfo):
	case prev == "": // the task was never dispatched before
		// first lifecycle line: task.create published for it
		d.cfg.Logger.InfoContext(pctx, "Task created", "task_id", t.ID, "type", t.Type, "session", t.SessionID)
	default:
		d.cfg.Logger.InfoContext(pctx, "Task dispatched", "task_id", t.ID, "task_type", t.Type, "attempt", t.RetryCount+1)
	}

	if d.st.CanDispatch() {
		// published and handed off in one script (store.DispatchMany)
		return nil, errDispatched
	}
	// A deployment of several partitions publishes (the protocol's keys)
	// and hands off (the task's partition) in two steps. The handoff is
	// made before the slot is freed: until it is written a cancel request
	// reaches the worker, which no longer holds the attempt, so it is the
	// handoff that reports the request (handoff.lua) and the dispatcher
	// that tells the services.
	d.handOff(context.WithoutCancel(ctx), t, timeout)
	return nil, fmt.Errorf("dispatch: %w", worker.ErrHandedOff)
}

// handOff hands the dispatched attempt of t to the external path
// (store.Handoff), trying 5 times while Redis fails.
func (d *Dispatcher) handOff(ctx context.Context, t *task.Task, timeout time.Duration) {
	req := d.handoffRequest(t, timeout, d.cfg.Now())
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		var cancelled bool
		var err error
		if attempt == 0 { // with the handoffs made meanwhile, in one round trip
			c := &handoffCall{req: req}
			d.handoffGroup.Do(c)
			cancelled, err = c.res.CancelRequested, c.res.Err
		} else {
			cancelled, err = d.st.Handoff(ctx, t.ID, t.Lease, req.Holder, req.TimeoutAt, req.LeaseUntil, req.CheckAt)
		}
		if cancelled {
			// requested while we were dispatching: the orchestrator's
			// cancel forwarder saw a task not yet handed off
			d.publishCancel(ctx, t.ID)
		}
		if err == nil || errors.Is(err, task.ErrWrongState) || errors.Is(err, task.ErrLeaseLost) || errors.Is(err, task.ErrNotFound) {
			return
		}
		if attempt == 4 {
			// Still the worker's until its lease expires; the service's
			// outcome with this token still applies meanwhile.
			d.cfg.Logger.Warn("dispatched task not handed off; it is dispatched again when its lease expires", "task_id", t.ID, "err", err)
			return
		}
		time.Sleep(backoff) // Redis is failing: back off before the next try
		backoff *= 2
	}
}

// handoffRequest is the handoff of t's attempt dispatched at now with
// timeout: the task's holder names the type and the dispatching worker,
// its lease deadline is the timeout plus Grace, and the watcher first
// looks at it after Grace (or at the timeout, when sooner).
// errDispatched is ProcessTask's answer for an attempt published and
// handed off: worker.ErrHandedOff.
var errDispatched = fmt.Errorf("dispatch: %w", worker.ErrHandedOff)

// holder is the worker field of t's task once handed off.
func holder(t *task.Task) string { return "external:" + t.Type + " (dispatched by " + t.Worker + ")" }

func (d *Dispatcher) handoffRequest(t *task.Task, timeout time.Duration, now time.Time) store.HandoffRequest {
	timeoutAt := now.Add(timeout)
	firstCheck := now.Add(d.cfg.Grace)
	if timeoutAt.Before(firstCheck) {
		firstCheck = timeoutAt
	}
	return store.HandoffRequest{ID: t.ID, Token: t.Lease, Holder: holder(t),
		TimeoutAt: timeoutAt, LeaseUntil: timeoutAt.Add(d.cfg.Grace), CheckAt: firstCheck}
}

// publishAndHandOff is publish for a deployment of one partition: the
// place, the token, the event and the handoff in one script call
// (store.DispatchMany), shared with the dispatches made meanwhile. An
// attempt that is no longer the worker's (its lease lost, the task
// finished or deleted) is neither published nor handed off: the slot has
// nothing left to do with it (worker.ErrHandedOff). A cancel requested
// before the dispatch ends the attempt CANCELLED by the worker; it was
// never published.
func (d *Dispatcher) publishAndHandOff(ctx context.Context, t *task.Task, e protocol.Event, timeout time.Duration, bound int) (prev string, ok bool, err error) {
	now := d.cfg.Now()
	// the script takes the lease deadline, the first check and the
	// in-flight place's deadline from the timeout and the grace
	// (store.DispatchBatch); the event's type and timestamp are the batch's
	c := &dispatchCall{req: store.DispatchRequest{ID: t.ID, Token: t.Lease, Holder: holder(t),
		TimeoutAt: now.Add(timeout), Inflight: d.k.inflight(t.Type), Bound: bound, EventID: e.ID, Data: string(e.Data)}}
	c.seq, _ = worker.HandOffOrder(ctx)
	d.combined.Do(c)
	r := c.res
	if r.Published || r.Full {
		d.mu.Lock()
		d.held[t.Type] = r.InFlight
		if r.Full {
			d.fullAt[t.Type] = now
		}
		d.mu.Unlock()
	}
	switch {
	case r.Published:
		return r.PrevToken, true, nil
	case r.Full:
		return "", false, nil
	case r.CancelRequested:
		return "", false, task.Cancel(errors.New("cancel requested before the task was dispatched"))
	case errors.Is(r.Err, task.ErrLeaseLost), errors.Is(r.Err, task.ErrNotFound), errors.Is(r.Err, task.ErrWrongState):
		d.cfg.Logger.Debug("attempt no longer the worker's: not dispatched", "task_id", t.ID, "err", r.Err)
		return "", false, fmt.Errorf("dispatch: %v: %w", r.Err, worker.ErrHandedOff)
	}
	// a script that failed half way may have taken the place: give it back
	_ = Release(context.WithoutCancel(ctx), d.rdb, d.ns, t.Type, t.ID, t.Lease)
	if ctx.Err() != nil {
		return "", false, context.Cause(ctx)
	}
	return "", false, task.Transient(task.ErrTypeServiceUnavailable, fmt.Errorf("dispatch: publish: %w", r.Err))
}

// dispatch publishes the attempt's task.create e once t's type has a
// free in-flight place, and returns the token the task was last
// dispatched with ("" for its first dispatch). One script takes the place,
// records the attempt's token and publishes the event (dispatch.lua), so
// no place is held without its event, nor an event sent without its place.
//
// While no dispatch of the type waits in this process, a task asks at
// once (dispatches of one type run in parallel). While the type is full
// the task waits, holding its worker's slot: the
// waiters of one type in this process ask in turn (up to turns at once), in the order the worker
// fetched them (the core's weighted priority order, so low is not
// starved), looking every AdmitPoll at the type's count. A cancel request
// or a shutdown ends the wait with the worker's cause (the worker then
// cancels or hands back the task); a wait longer than AdmitWait, or
// reaching the handler's deadline, hands the task back to the core without
// spending a retry.
func (d *Dispatcher) dispatch(ctx context.Context, t *task.Task, e protocol.Event, timeout time.Duration) (prev string, err error) {
	if d.cfg.InFlight < 0 {
		d.bound(ctx, t.Type) // seen: none
		prev, _, err := d.publish(ctx, t, e, timeout, -1)
		return prev, err
	}
	giveUp := d.cfg.Now().Add(d.cfg.AdmitWait)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-d.cfg.AdmitPoll).Before(giveUp) {
		giveUp = dl.Add(-d.cfg.AdmitPoll)
	}
	bound := d.bound(ctx, t.Type)
	full := func() error {
		return &task.DependencyUnavailableError{Dependency: "external:" + t.Type, Wait: handBackDelay,
			Reason: fmt.Sprintf("%d tasks of the type in flight", bound)}
	}
	// No one of this process waits for a place of the type: try at once,
	// dispatches of the type in parallel. Else, or when the type is full,
	// queue behind the waiters, who ask in turn (fetch order).
	if d.waiters(t.Type, 0) == 0 {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		prev, ok, err := d.publish(ctx, t, e, timeout, bound)
		if err != nil || ok {
			return prev, err
		}
	}
	d.waiters(t.Type, 1)
	defer d.waiters(t.Type, -1)
	turn := d.turn(t.Type)
	timer := time.NewTimer(max(giveUp.Sub(d.cfg.Now()), 0))
	defer timer.Stop()
	select {
	case turn <- struct{}{}:
	case <-timer.C:
		return "", full()
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	defer func() { <-turn }()
	// places freed from now on wake this wait, in its turn among the
	// type's waiters (registered before asking, so none freed meanwhile is
	// missed; woken but still full, it waits first in line again)
	var freed chan struct{}
	defer func() { d.unwake(t.Type, freed) }()
	for room, woken := true, false; ; {
		if freed == nil {
			freed = d.wake(t.Type, woken)
		}
		if room {
			if ctx.Err() != nil {
				return "", context.Cause(ctx)
			}
			prev, ok, err := d.publish(ctx, t, e, timeout, bound)
			if err != nil || ok {
				return prev, err
			}
		}
		if !d.cfg.Now().Before(giveUp) {
			d.cfg.Logger.Debug("external task type full: task handed back", "task_id", t.ID, "task_type", t.Type)
			return "", full()
		}
		timer.Reset(d.cfg.AdmitPoll)
		select {
		case <-freed: // a place was freed for it: ask again at once
			freed, woken, room = nil, true, true
			bound = d.bound(ctx, t.Type)
			if !timer.Stop() {
				<-timer.C
			}
			continue
		case <-timer.C:
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
		// a cheap look before the script, which carries the event
		bound = d.bound(ctx, t.Type)
		n, err := InFlight(ctx, d.rdb, d.ns, t.Type, d.cfg.Now())
		room = err != nil || n < int64(bound) // on an error the script says
	}
}

// wake registers a waiter for a place of typ, last in line (first when it
// was woken before and found the type full again), and returns its
// channel, closed when an announcement of freed places reaches it
// (FreedChannel).
func (d *Dispatcher) wake(typ string, first bool) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := make(chan struct{})
	if first {
		d.wakes[typ] = append([]chan struct{}{c}, d.wakes[typ]...)
	} else {
		d.wakes[typ] = append(d.wakes[typ], c)
	}
	return c
}

// unwake ends the wait registered as c: out of the line, or, when it was
// woken and did not take the freed place it was woken for (it left for
// another reason), that place goes to the next in line.
func (d *Dispatcher) unwake(typ string, c chan struct{}) {
	if c == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	q := d.wakes[typ]
	if i := slices.Index(q, c); i >= 0 {
		d.wakes[typ] = slices.Delete(q, i, i+1)
		if len(d.wakes[typ]) == 0 {
			delete(d.wakes, typ)
		}
		return
	}
	d.wakeFirst(typ, 1)
}

// wakeFirst wakes the first n waiters of typ (d.mu held).
func (d *Dispatcher) wakeFirst(typ string, n int) {
	q := d.wakes[typ]
	n = min(n, len(q))
	for _, c := range q[:n] {
		close(c)
	}
	if n == len(q) {
		delete(d.wakes, typ)
	} else {
		d.wakes[typ] = q[n:]
	}
}

// subscribe listens on the freed channel while dispatches wait for a
// place (waiters starts and stops it, d.mu held): an announcement of k
// places freed ("<set> <k>") wakes the first k waiters of the type whose
// set it names, in the order they began to wait (the fetch's, as their
// turns): the first to wait, not the first to look, gets a place.
func (d *Dispatcher) subscribe() {
	ctx, cancel := context.WithCancel(context.Background())
	d.stopSub = cancel
	go func() {
		ps := d.rdb.Subscribe(ctx, d.k.freed())
		defer ps.Close()
		msgs := ps.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-msgs:
				if !ok {
					return
				}
				set, count, _ := strings.Cut(m.Payload, " ")
				n, err := strconv.Atoi(count)
				if err != nil || n < 1 {
					n = 1
				}
				d.mu.Lock()
				for typ := range d.wakes {
					if d.k.inflight(typ) == set {
						d.wakeFirst(typ, n)
					}
				}
				d.mu.Unlock()
			}
		}
	}()
}

// fullQuiet is how long after a type was found full HandOffRoom says
// none.
const fullQuiet = 100 * time.Millisecond

// handBackDelay is how long after it a task handed back by a full type
// (AdmitWait) is due again.
const handBackDelay = 500 * time.Millisecond

// bound is typ's in-flight bound now: Config.InFlight when set, else the
// live services' total concurrency for it times Headroom.
func (d *Dispatcher) bound(ctx context.Context, typ string) int {
	b := d.cfg.InFlight
	if b == 0 {
		b = d.caps.of(ctx, typ, d.cfg.Now())
	}
	d.mu.Lock()
	d.seen[typ] = b
	d.mu.Unlock()
	return b
}

// publish runs dispatch.lua once with the type's bound (-1: none): ok is
// false when the type is full (nothing was written). The call is not
// cancelled with ctx once made: a dispatch is done whole.
func (d *Dispatcher) publish(ctx context.Context, t *task.Task, e protocol.Event, timeout time.Duration, bound int) (prev string, ok bool, err error) {
	if d.st.CanDispatch() {
		return d.publishAndHandOff(ctx, t, e, timeout, bound)
	}
	now := d.cfg.Now()
	member := inflightMember(t.ID, t.Lease)
	args := []any{now.UnixMilli(), bound, member, now.Add(timeout + d.cfg.Grace).UnixMilli(),
		t.Lease, int64(tokenTTL / time.Second), protocol.MinID(now, d.cfg.Retention)}
	args = append(args, e.Values()...)
	bg := context.WithoutCancel(ctx)
	c := &scriptCall{call: redisconn.ScriptCall{Keys: []string{d.k.inflight(t.Type), d.k.token(t.ID), d.sk.Create()}, Args: args}}
	c.seq, _ = worker.HandOffOrder(ctx)
	d.dispatches.Do(c) // with the dispatches made meanwhile, in one round trip
	res, err := c.res.StringSlice()
	if errors.Is(err, redis.Nil) {
		return "", false, nil // full
	}
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("dispatch.lua answered %q", res)
	}
	if err != nil {
		// a script that failed half way (the XADD refused) may have taken
		// the place: give it back
		_ = Release(bg, d.rdb, d.ns, t.Type, t.ID, t.Lease)
		if ctx.Err() != nil {
			return "", false, context.Cause(ctx)
		}
		return "", false, task.Transient(task.ErrTypeServiceUnavailable, fmt.Errorf("dispatch: publish: %w", err))
	}
	return res[0], true, nil
}

// waiters adds delta to the number of this process's dispatches of typ
// waiting for a place and returns it.
func (d *Dispatcher) waiters(typ string, delta int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if delta != 0 {
		was := d.waitersN
		d.waitersN += delta
		switch {
		case was == 0 && d.waitersN > 0:
			d.subscribe() // (the last one may still be ending: they overlap)
		case was > 0 && d.waitersN == 0:
			d.stopSub()
		}
	}
	n := d.waiting[typ] + delta
	if n == 0 {
		delete(d.waiting, typ)
	} else {
		d.waiting[typ] = n
	}
	return n
}

// turns is how many waiters of a type ask for a place at once (their
// dispatch.lua calls go to Redis together); the others queue behind them.
// One at a time serialized the type's dispatches on round trips whenever
// it had been full once: waiters never ran out under a steady backlog.
const turns = 16

// turn returns typ's turn channel: up to turns waiters of the type at a
// time ask for a place; the others queue on the channel (FIFO).
func (d *Dispatcher) turn(typ string) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.turns[typ]
	if !ok {
		c = make(chan struct{}, turns)
		d.turns[typ] = c
	}
	return c
}

func (d *Dispatcher) publishCancel(ctx context.Context, id string) {
	e, err := protocol.New(protocol.TypeCancel, d.cfg.Now(), protocol.CancelData{TaskID: id, Reason: "cancelled"})
	if err == nil {
		_, err = d.pub.Publish(ctx, d.sk.Cancel(), e)
	}
	if err != nil {
		d.cfg.Logger.Warn("cancel event not published", "task_id", id, "err", err)
	}
}
