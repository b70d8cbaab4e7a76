// Package outcome is the agent's outcome consumer: in the consumer group
// agent-group it applies what the external services report —
// task.completed, task.failed, task.timeout, task.progress — through the
// store's atomic transitions, then caches the result, notifies the owning
// session, archives the finished task, and only then acknowledges the
// event.
//
// Delivery is at least once and application at most once: every transition
// is guarded by the attempt's fencing token and the state it starts from, so
// a redelivered event (after a crash between applying and acknowledging)
// changes nothing; a marker per attempt keeps its side effects from being
// repeated once they are all done. A consumer that dies leaves its pending
// events to the others (XAUTOCLAIM after ClaimIdle, protocol.Loop).
package outcome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/task"
)

// Config configures a Consumer.
type Config struct {
	// Consumer is this process's name in agent-group. Default
	// agent-<hostname>-<pid>.
	Consumer string
	// Block is how long one read waits (1000 ms). Default 1s.
	Block time.Duration
	// Batch is the most events read per stream per call; the
	// completions among them are applied together, a step of all of them
	// per round trip (batch.go). Default 250.
	Batch int64
	// Parallel is how many events of a batch are applied at once (events
	// of different tasks are independent). Default 8.
	Parallel int
	// ClaimIdle is how long an event may stay unacknowledged by its
	// consumer before another consumer claims it. Default 30s.
	ClaimIdle time.Duration
	// Backoff is the retry delay of transient failures.
	Backoff retry.Backoff
	// ResultTTL is the lifetime of the task:{id}:result cache. Default 24h.
	ResultTTL time.Duration
	// Retention of the events published (task.dlq). Default 7 days.
	Retention time.Duration
	// Types gives each task type's completion notification text (its
	// Notify template filled from the task's params: "Your Q4 2024 report
	// is ready"). Default nil: "Your <type> task is ready!".
	Types *tasktypes.Registry
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Observe, when set, is told of each applied outcome (for metrics):
	// kind is completed, failed, retried, dead_lettered, cancelled,
	// timeout or stale; duration is the service's duration_ms (elapsed_ms
	// for timeout), NoDuration when the event carries none.
	Observe func(kind string, t *task.Task, duration time.Duration)
}

// WithDefaults returns c with unset fields defaulted.
func (c Config) WithDefaults() Config {
	if c.Consumer == "" {
		host, _ := os.Hostname()
		c.Consumer = fmt.Sprintf("agent-%s-%d", host, os.Getpid())
	}
	if c.Block == 0 {
		c.Block = time.Second
	}
	if c.Batch == 0 {
		c.Batch = 250
	}
	if c.ClaimIdle == 0 {
		c.ClaimIdle = 30 * time.Second
	}
	if c.Parallel == 0 {
		c.Parallel = 8
	}
	c.Backoff = c.Backoff.WithDefaults()
	if c.ResultTTL == 0 {
		c.ResultTTL = 24 * time.Hour
	}
	if c.Retention == 0 {
		c.Retention = protocol.DefaultRetention
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate says what is wrong with c (after WithDefaults).
func (c Config) Validate() error {
	switch {
	case c.Consumer == "" || strings.ContainsAny(c.Consumer, " {}"):
		return fmt.Errorf("outcome: Consumer %q is not a consumer name", c.Consumer)
	case c.Block < time.Millisecond:
		return fmt.Errorf("outcome: Block %s must be ≥ 1ms", c.Block)
	case c.Batch < 1 || c.Batch > 1000:
		return fmt.Errorf("outcome: Batch %d must be 1–1000", c.Batch)
	case c.Parallel < 1:
		return fmt.Errorf("outcome: Parallel %d must be ≥ 1", c.Parallel)
	case c.ClaimIdle < time.Millisecond:
		return fmt.Errorf("outcome: ClaimIdle %s must be positive", c.ClaimIdle)
	case c.ResultTTL < time.Second:
		return fmt.Errorf("outcome: ResultTTL %s must be ≥ 1s", c.ResultTTL)
	}
	return c.Backoff.Validate()
}

// Consumer applies the response streams' events in agent-group. Run any
// number of them (each with its own Consumer name).
type Consumer struct {
	st   *store.Store
	rdb  redis.UniversalClient
	ns   keyspace.Namespace
	cfg  Config
	sk   protocol.Keys
	k    keys
	rk   resultview.Keys
	pub  *protocol.Publisher
	note *notify.Notifier // nil: no notifications
	arc  *archive.Archive // nil: no archive

	// crashAfterClaim and crashAfterApply, in tests, stop the loop after
	// an outcome is claimed (before its transition), or after the
	// transition and before anything else, as a killed process would.
	crashAfterClaim func(protocol.Message) bool
	crashAfterApply func(protocol.Message) bool

	// settled: the task types whose completions settle.lua may apply
	// (settle.go), each learned from a completion applied by the other
	// paths.
	settled settledTypes
	// nsettled counts the entries settle.lua applied (tests).
	nsettled atomic.Int64
}

// New returns the consumer of st's namespace. note and arc may be nil (no
// notifications, no archive).
func New(st *store.Store, note *notify.Notifier, arc *archive.Archive, cfg Config) (*Consumer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Consumer{st: st, rdb: st.Client(), ns: st.Namespace(), cfg: cfg, sk: protocol.NewKeys(st.Namespace()), k: newKeys(st.Namespace()), rk: resultview.NewKeys(st.Namespace()),
		pub: protocol.NewPublisher(st.Client(), cfg.Retention, cfg.Now), note: note, arc: arc}, nil
}

// errCrash ends Run as a killed process would: nothing more is written.
var errCrash = errors.New("outcome: simulated crash")

// Run consumes until ctx ends.
func (o *Consumer) Run(ctx context.Context) error {
	streams := o.sk.Responses()
	for _, s := range streams {
		if err := protocol.EnsureGroup(ctx, o.rdb, s, protocol.AgentGroup, "0"); err != nil {
			if ctx.Err() != nil {
				return nil // stopped before it started: not a failure
			}
			return err
		}
	}
	o.cfg.Logger.Info("outcome consumer started", "consumer", o.cfg.Consumer, "group", protocol.AgentGroup)
	l := &protocol.Loop{Client: o.rdb, Group: protocol.AgentGroup, Consumer: o.cfg.Consumer, Streams: streams,
		Count: o.cfg.Batch, Block: o.cfg.Block, ClaimIdle: o.cfg.ClaimIdle, Logger: o.cfg.Logger}
	err := l.Run(ctx, func(ctx context.Context, msgs []protocol.Message) error {
		if o.handleAll(ctx, msgs) {
			return errCrash
		}
		return nil
	})
	if errors.Is(err, errCrash) {
		return nil
	}
	o.cfg.Logger.Info("outcome consumer stopped", "consumer", o.cfg.Consumer)
	return nil
}

// handleAll applies a batch, Parallel tasks at a time: the events of one
// task in stream order (two outcomes of one attempt back to back: the
// first is applied first, and wins), those of different tasks at once. It
// reports a simulated crash.
func (o *Consumer) handleAll(ctx context.Context, msgs []protocol.Message) (crashed bool) {
	var lanes [][]protocol.Message
	byTask := map[string]int{}
	firsts := make(map[int]*protocol.CompletedData, len(msgs)) // lane → its first event, a completion
	for _, m := range msgs {
		d := completion(m) // decoded once: its task, and the batch's data
		id := ""
		if d != nil {
			id = d.TaskID
		} else {
			id = eventTaskID(m)
		}
		if i, ok := byTask[id]; ok && id != "" {
			lanes[i] = append(lanes[i], m)
			continue
		}
		byTask[id] = len(lanes)
		if d != nil {
			firsts[len(lanes)] = d
		}
		lanes = append(lanes, []protocol.Message{m})
	}
	// The first event of each task, when it is a completion, goes with
	// the batch (batch.go); what the batch does not finish, and every
	// other event, is applied alone, a task's events in stream order.
	var items []batchItem
	for i, lane := range lanes {
		if d := firsts[i]; d != nil {
			items = append(items, batchItem{m: lane[0], d: d})
		}
	}
	done := map[string]bool{}
	if len(items) > 0 && o.canSettle() {
		done, items = o.settle(ctx, items) // one call (settle.go); the rest as below
	}
	if len(items) > 1 {
		more, crash := o.completeBatch(ctx, items)
		if crash {
			return true
		}
		for k := range more {
			done[k] = true
		}
	}
	for i, lane := range lanes {
		if done[lane[0].ID+" "+lane[0].Stream] {
			lanes[i] = lane[1:]
		}
	}
	sem := make(chan struct{}, o.cfg.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, lane := range lanes {
		if len(lane) == 0 {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			for _, m := range lane {
				if err := o.handle(ctx, m); err != nil {
					if errors.Is(err, errCrash) {
						mu.Lock()
						crashed = true
						mu.Unlock()
						return
					}
					// Not acknowledged: retried after ClaimIdle (or by us).
					o.cfg.Logger.Warn("event not applied; it stays pending", "stream", m.Stream, "entry", m.ID, "err", err)
				}
			}
		}()
	}
	wg.Wait()
	return crashed
}

// completion is m's task.completed, nil when m is anything else (or
// cannot be read: handle says why).
func completion(m protocol.Message) *protocol.CompletedData {
	if m.Err != nil || m.Event.Type != protocol.TypeCompleted {
		return nil
	}
	v, err := m.Event.Unmarshal()
	if err != nil {
		return nil
	}
	d, _ := v.(*protocol.CompletedData)
	return d
}

// eventTaskID is the task an event is about ("" when it cannot be read:
// handle says why).
func eventTaskID(m protocol.Message) string {
	if m.Err != nil {
		return ""
	}
	var d struct {
		TaskID string `json:"task_id"`
	}
	_ = json.Unmarshal(m.Event.Data, &d)
	return d.TaskID
}

// handle applies one event and acknowledges it. An error leaves it pending.
func (o *Consumer) handle(ctx context.Context, m protocol.Message) error {
	ctx = context.WithoutCancel(ctx)
	if m.Err != nil {
		o.cfg.Logger.Warn("malformed event acknowledged and skipped", "stream", m.Stream, "entry", m.ID, "err", m.Err)
		return o.ack(ctx, m)
	}
	o.cfg.Logger.Debug("Event consumed", "stream", m.Stream, "event_id", m.Event.ID, "consumer", o.cfg.Consumer)
	v, err := m.Event.Unmarshal()
	if err != nil {
		o.cfg.Logger.Warn("invalid event acknowledged and skipped", "stream", m.Stream, "event_id", m.Event.ID, "err", err)
		return o.ack(ctx, m)
	}
	switch d := v.(type) {
	case *protocol.CompletedData: // acknowledged by once, with its marker
		ctx, span := o.startApply(ctx, m, d.TaskID, d.Traceparent)
		err := o.once(ctx, m, d.TaskID, d.Token, func(oc outcome) error { return o.completed(ctx, m, d, oc) })
		tracing.Fail(span, err, "")
		span.End()
		return err
	case *protocol.FailedData:
		ctx, span := o.startApply(ctx, m, d.TaskID, d.Traceparent)
		err := o.once(ctx, m, d.TaskID, d.Token, func(oc outcome) error { return o.failed(ctx, m, d, oc) })
		tracing.Fail(span, err, "")
		span.End()
		return err
	case *protocol.TimeoutData:
		err = o.timeout(ctx, d)
	case *protocol.ProgressData:
		err = o.progress(ctx, m, d)
	default:
		o.cfg.Logger.Warn("unexpected event type on a response stream", "stream", m.Stream, "type", m.Event.Type)
	}
	if err != nil {
		return err
	}
	return o.ack(ctx, m)
}

// startApply starts the span of the outcome m's apply ("apply
// task.completed"), child of the service's span when the event carries its
// traceparent (the Go SDK's events do): the task's trace then ends with
// its outcome and the notification it sends.
func (o *Consumer) startApply(ctx context.Context, m protocol.Message, taskID, traceparent string) (context.Context, trace.Span) {
	ctx, span := tracing.Start(tracing.WithTraceparent(ctx, traceparent), "apply", string(m.Event.Type), trace.SpanKindConsumer)
	if span.IsRecording() {
		span.SetAttributes(append(tracing.Messaging("process", m.Stream, m.ID), tracing.AttrOperationName.String("apply"),
			attribute.String("taskflow.task.id", taskID), tracing.AttrConsumerGroup.String(protocol.AgentGroup))...)
	}
	return ctx, span
}

// ignoreFinished logs and counts an outcome about a finished task that is
// not a redelivery of the outcome that finished it. Neither the token nor
// the event's message is logged: a forged event's text is not ours.
func (o *Consumer) ignoreFinished(m protocol.Message, t *task.Task) {
	o.cfg.Logger.Warn("outcome for a finished task ignored (another attempt, a duplicate run or a forged event)",
		"task_id", t.ID, "state", t.State, "stream", m.Stream, "entry", m.ID)
	o.observe("stale", t, NoDuration)
}

// stale reports whether a transition error means the event no longer
// applies (another attempt owns the task, it is finished or gone): such an
// event is acknowledged without effect.
func stale(err error) bool {
	return errors.Is(err, task.ErrLeaseLost) || errors.Is(err, task.ErrWrongState) || errors.Is(err, task.ErrNotFound)
}

func (o *Consumer) observe(kind string, t *task.Task, d time.Duration) {
	if o.cfg.Observe != nil {
		o.cfg.Observe(kind, t, d)
	}
}

func (o *Consumer) completed(ctx context.Context, m protocol.Message, d *protocol.CompletedData, oc outcome) error {
	tok := oc.tok
	result := d.Result
	if len(result) == 0 || string(result) == "null" {
		result = json.RawMessage(`{}`)
	}
	err := o.st.Complete(ctx, d.TaskID, tok, result)
	if o.crashAfterApply != nil && o.crashAfterApply(m) {
		return errCrash
	}
	if err != nil && !stale(err) {
		return err
	}
	t, gerr := o.st.Get(ctx, d.TaskID)
	if gerr != nil {
		if errors.Is(gerr, task.ErrNotFound) {
			return nil
		}
		return gerr
	}
	if err := o.leave(ctx, t, tok); err != nil {
		return err
	}
	if err != nil && !(t.State == task.StateCompleted && errors.Is(err, task.ErrWrongState)) {
		// Stale: a previous attempt's report, or the task ended otherwise.
		o.cfg.Logger.Info("stale completion ignored", "task_id", d.TaskID, "state", t.State, "reason", err)
		o.observe("stale", t, NoDuration)
		return nil
	}
	if err != nil {
		// COMPLETED already: only the redelivery of the entry that
		// completed it may redo (finish) the side effects.
		mine, ferr := o.finishedBy(ctx, d.TaskID, oc)
		if ferr != nil {
			return ferr
		}
		if !mine {
			o.ignoreFinished(m, t)
			return nil
		}
	}
	// Applied now, or applied by an earlier delivery whose side effects
	// may be incomplete: (re)do the idempotent side effects.
	o.cfg.Logger.InfoContext(ctx, "Task completed", "task_id", d.TaskID, "duration", d.DurationMS, "service", d.CompletedBy)
	o.settled.learn(t.Type)
	if err := o.cacheResult(ctx, t); err != nil {
		return err
	}
	if err := o.archive(ctx, t); err != nil {
		return err
	}
	o.observe("completed", t, time.Duration(d.DurationMS)*time.Millisecond)
	return o.notify(ctx, t, tok, notify.KindCompleted, o.cfg.Types.ReadyMessage(ctx, t.Type, t.Params), "retrieve_result")
}

func (o *Consumer) failed(ctx context.Context, m protocol.Message, d *protocol.FailedData, oc outcome) error {
	tok := oc.tok
	t, err := o.st.Get(ctx, d.TaskID)
	if errors.Is(err, task.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	// whatever this outcome does, its attempt is over
	defer func() { _ = o.leave(ctx, t, tok) }()
	if strings.EqualFold(d.Error.Code, "CANCELLED") {
		err := o.st.CancelActive(ctx, d.TaskID, tok, "cancelled by "+d.FailedBy)
		if err != nil && !stale(err) {
			return err
		}
		if err == nil {
			if t, err = o.st.Get(ctx, d.TaskID); err != nil {
				return err
			}
			o.observe("cancelled", t, NoDuration)
			if err := o.archive(ctx, t); err != nil {
				return err
			}
			return o.notify(ctx, t, tok, notify.KindCancelled, fmt.Sprintf("Your %s task was cancelled.", t.Type), "none")
		}
		return nil
	}
	transient := d.Error.IsTransient()
	now := o.cfg.Now()
	out, err := o.st.Fail(ctx, d.TaskID, tok, store.Failure{
		ErrorType: d.Error.Code, Message: d.Error.Message, Permanent: !transient, Details: keptDetails(d.Error.Details),
		RetryAt: now.Add(o.cfg.Backoff.Delay(t.RetryCount, nil)), Attempt: t.RetryCount + 1, Worker: d.FailedBy,
	})
	if o.crashAfterApply != nil && o.crashAfterApply(m) {
		return errCrash
	}
	if err != nil {
		if stale(err) {
			if cur, gerr := o.st.Get(ctx, d.TaskID); gerr == nil && cur.State == task.StateDLQ && errors.Is(err, task.ErrWrongState) && t.State == task.StateDLQ {
				mine, ferr := o.finishedBy(ctx, d.TaskID, oc)
				if ferr != nil {
					return ferr
				}
				if !mine {
					o.ignoreFinished(m, cur)
					return nil
				}
				// An earlier delivery of this entry dead-lettered it and
				// stopped short of its effects.
				return o.deadLettered(ctx, d, oc, store.FailOutcome{State: task.StateDLQ, Reason: "redelivered"})
			}
			o.cfg.Logger.Info("stale failure ignored", "task_id", d.TaskID, "reason", err)
			o.observe("stale", t, NoDuration)
			return nil
		}
		return err
	}
	o.cfg.Logger.Error("Task failed", "task_id", d.TaskID, "error", d.Error.Code, "transient", transient, "outcome", out.State, "reason", out.Reason)
	if out.State != task.StateDLQ {
		o.observe("retried", t, time.Duration(d.DurationMS)*time.Millisecond)
		return nil
	}
	return o.deadLettered(ctx, d, oc, out)
}

// deadLettered publishes task.dlq, archives and notifies. It is also the
// path of a redelivered failure whose DLQ side effects did not finish.
func (o *Consumer) deadLettered(ctx context.Context, d *protocol.FailedData, oc outcome, out store.FailOutcome) error {
	tok := oc.tok
	t, err := o.st.Get(ctx, d.TaskID)
	if err != nil {
		return err
	}
	reason := "permanent"
	if out.Reason != "permanent" {
		reason = "retries_exhausted"
	}
	e, err := protocol.New(protocol.TypeDLQ, o.cfg.Now(), protocol.DLQData{TaskID: t.ID, TaskType: t.Type, SessionID: t.SessionID,
		Error: d.Error, Attempts: t.RetryCount + 1, Reason: reason})
	if err != nil {
		return err
	}
	if _, err := o.publishDLQ(ctx, oc, e); err != nil {
		return err
	}
	if err := o.archive(ctx, t); err != nil {
		return err
	}
	o.observe("dead_lettered", t, time.Duration(d.DurationMS)*time.Millisecond)
	return o.notify(ctx, t, tok, notify.KindFailed, fmt.Sprintf("Your %s task failed: %s", t.Type, d.Error.Message), "view_error")
}

func (o *Consumer) timeout(ctx context.Context, d *protocol.TimeoutData) error {
	t, err := o.st.Get(ctx, d.TaskID)
	if errors.Is(err, task.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if t.State != task.StateTimeout {
		return nil // finished meanwhile: its own notification says so
	}
	o.observe("timeout", t, time.Duration(d.ElapsedMS)*time.Millisecond)
	// one notice per attempt (the TIMEOUT task keeps its token) however
	// often its task.timeout is published or delivered
	return o.notify(ctx, t, t.Lease, notify.KindTimeout, timeoutMessage(t), "check_status")
}

// maxDetails is the largest error.details object kept on the task (the
// event itself, in task.failed and task.dlq, keeps all of it).
const maxDetails = 8 << 10

// keptDetails is the service's error.details as recorded on the task:
// nothing for an empty object, a note of its size for one too large.
func keptDetails(d json.RawMessage) json.RawMessage {
	t := strings.TrimSpace(string(d))
	switch {
	case t == "" || t == "null" || t == "{}":
		return nil
	case len(t) > maxDetails:
		return json.RawMessage(fmt.Sprintf(`{"truncated":true,"bytes":%d}`, len(t)))
	}
	return json.RawMessage(t)
}

// leave frees the in-flight place of t's attempt with token tok (see
// dispatch.Config.InFlight): its outcome has come, or it is no longer the
// task's attempt.
func (o *Consumer) leave(ctx context.Context, t *task.Task, tok string) error {
	return dispatch.Release(ctx, o.rdb, o.ns, t.Type, t.ID, tok)
}

func (o *Consumer) progress(ctx context.Context, m protocol.Message, d *protocol.ProgressData) error {
	return resultview.WriteProgress(ctx, o.rdb, o.rk, d.TaskID, resultview.Progress{Percent: d.Percent, Message: d.Message,
		ETASeconds: d.ETASeconds, ReportedBy: d.ReportedBy, At: m.Event.Timestamp}, o.cfg.ResultTTL)
}

func (o *Consumer) cacheResult(ctx context.Context, t *task.Task) error {
	if !json.Valid(t.Result) {
		return fmt.Errorf("outcome: the result of %s is not JSON", t.ID)
	}
	return o.rdb.Set(ctx, o.rk.Cache(t.ID), cacheBody(t.Result, protocol.FormatTime(o.cfg.Now())), o.cfg.ResultTTL).Err()
}

func (o *Consumer) archive(ctx context.Context, t *task.Task) error {
	if o.arc == nil {
		return nil
	}
	if err := o.arc.Put(ctx, t); err != nil {
		return fmt.Errorf("outcome: archive %s: %w", t.ID, err)
	}
	return nil
}

// notify tells t's session about kind for the attempt with token tok. The
// notification id is derived from (kind, task, token), and the notifier
// writes an id once: a replayed apply (a crash after notifying and before
// the attempt is marked done) does not notify twice.
func (o *Consumer) notify(ctx context.Context, t *task.Task, tok string, kind notify.Kind, msg, action string) error {
	if o.note == nil || t.SessionID == "" {
		return nil
	}
	_, err := o.note.Notify(ctx, t.SessionID, notify.Notification{NotificationID: notify.StableID(kind, t.ID, tok),
		Type: kind, TaskID: t.ID, TaskType: t.Type, Message: msg, Action: action, Priority: string(t.Priority)})
	if err != nil && !errors.Is(err, notify.ErrNoSession) {
		return err
	}
	return nil
}

// timeoutMessage is the notice a session gets when its task runs past its
// timeout (the task goes on).
func timeoutMessage(t *task.Task) string {
	return fmt.Sprintf("Your %s task is taking longer than expected. The task is still running. "+
		"I'll notify you when it completes, or you can check status with: 'Show task status for %s'", t.Type, t.ID)
}
