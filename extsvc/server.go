package extsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/platform/tracing"
)

// Server is one instance of an external service: it consumes the task
// types registered on it. Register handlers, then call Run once. (Service
// is the protocol's word for the program; in Go it is a Server, so that it
// is not mistaken for internal/frontdoor/service, taskflow's business rules.)
type Server struct {
	rdb      redis.UniversalClient
	cfg      Config
	keys     protocol.Keys
	pub      *protocol.Publisher
	group    string
	handlers map[string]Handler

	specs map[string]protocol.TypeSpec // task type → what register publishes

	mu        sync.Mutex
	inflight  map[string]*running  // stream entry id → running task
	cancelled map[string]time.Time // task id → when a cancel arrived
	slot      chan struct{}        // signalled when a task ends
	wg        sync.WaitGroup

	outcomes chan outcomeReq // to flushLoop, while Run runs
}

// outcomeReq is one task's outcome for flushLoop: published to target,
// then its task.create entry acknowledged.
type outcomeReq struct {
	target  string
	e       protocol.Event
	entryID string
	taskID  string
}

type running struct {
	taskID string
	cancel context.CancelCauseFunc
}

// New returns a Server on rdb (owned by the caller).
func New(rdb redis.UniversalClient, cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ns, err := keyspace.Parse(cfg.Namespace)
	if err != nil {
		return nil, fmt.Errorf("extsvc: Namespace: %w", err)
	}
	k := protocol.NewKeys(ns)
	return &Server{
		rdb: rdb, cfg: cfg, keys: k,
		pub:       protocol.NewPublisher(rdb, cfg.Retention, cfg.Now),
		group:     protocol.ServiceGroup(cfg.Name),
		handlers:  map[string]Handler{},
		specs:     map[string]protocol.TypeSpec{},
		inflight:  map[string]*running{},
		cancelled: map[string]time.Time{},
		slot:      make(chan struct{}, 1),
	}, nil
}

// Handle registers h for taskType. Registering a type twice panics (a
// programming error, as with http.ServeMux).
func (s *Server) Handle(taskType string, h Handler) {
	if !protocol.ValidTaskType(taskType) {
		panic(fmt.Sprintf("extsvc: %q is not a task type name", taskType))
	}
	if _, dup := s.handlers[taskType]; dup {
		panic(fmt.Sprintf("extsvc: task type %q registered twice", taskType))
	}
	s.handlers[taskType] = h
}

// TypeInfo describes a task type to the deployment's clients: the API
// lists it (GET /api/v1/task-types), checks a submit's params against
// Params before publishing the task (a 422 naming the field), agent tools
// take Params as their input schema, and a session's notification of a
// completed task reads Notify.
type TypeInfo struct {
	// Description says what the type does, for people and agents.
	Description string
	// Params declares the type's params.
	Params param.Schema
	// Notify is the notification text when a task of the type completes;
	// {field} is replaced by the task's params.field, e.g. "Your {quarter}
	// {year} report is ready". Empty: the default text.
	Notify string
}

// Describe publishes info about taskType, a type this service handles,
// each time the service registers. Call it before Run.
func (s *Server) Describe(taskType string, info TypeInfo) {
	sch, err := json.Marshal(info.Params.JSONSchema())
	if err != nil {
		panic(fmt.Sprintf("extsvc: %s: params schema: %v", taskType, err)) // only maps of plain values
	}
	s.specs[taskType] = protocol.TypeSpec{Service: s.cfg.Name, Description: info.Description, Params: sch, Notify: info.Notify}
}

// HandleFunc registers f for taskType.
func (s *Server) HandleFunc(taskType string, f func(ctx context.Context, t *Task) (json.RawMessage, error)) {
	s.Handle(taskType, HandlerFunc(f))
}

// Types lists the registered task types, sorted.
func (s *Server) Types() []string {
	out := make([]string, 0, len(s.handlers))
	for t := range s.handlers {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Consumer is this process's consumer name.
func (s *Server) Consumer() string { return s.cfg.Consumer }

// Run serves until ctx ends, then stops gracefully: no new reads, running
// tasks get Grace to finish. It returns nil after a graceful stop.
func (s *Server) Run(ctx context.Context) error {
	if len(s.handlers) == 0 {
		return errors.New("extsvc: no task types registered")
	}
	for t := range s.specs {
		if _, ok := s.handlers[t]; !ok {
			return fmt.Errorf("extsvc: %q is described but has no handler", t)
		}
	}
	// "0": a service started after tasks were published still gets them.
	if err := protocol.EnsureGroup(ctx, s.rdb, s.keys.Create(), s.group, "0"); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: not a failure
		}
		return err
	}
	if err := s.register(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	cancelFrom, err := s.lastID(ctx, s.keys.Cancel())
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	s.cfg.Logger.Info("service started", "service", s.cfg.Name, "consumer", s.cfg.Consumer, "types", strings.Join(s.Types(), ","))

	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var bgWG sync.WaitGroup
	s.outcomes = make(chan outcomeReq, s.cfg.Concurrency)
	flushed := make(chan struct{})
	go func() { defer close(flushed); s.flushLoop(bg) }()
	bgWG.Add(2)
	go func() { defer bgWG.Done(); s.heartbeatLoop(bg) }()
	go func() { defer bgWG.Done(); s.cancelLoop(bg, cancelFrom) }()

	loopErr := s.loop(ctx)

	// Graceful stop: wait for running tasks up to Grace.
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	timer := time.NewTimer(s.cfg.Grace)
	select {
	case <-done:
	case <-timer.C:
		s.mu.Lock()
		for _, r := range s.inflight {
			r.cancel(errStopping)
		}
		s.mu.Unlock()
		<-done
	}
	timer.Stop()
	close(s.outcomes) // every task has ended: nothing more to publish
	<-flushed
	stopBG()
	bgWG.Wait()
	// The registration is not deleted: other instances of the service
	// may still run, and it expires by itself 3 heartbeats after the last
	// one stops (see register).
	s.cfg.Logger.Info("service stopped", "service", s.cfg.Name, "consumer", s.cfg.Consumer)
	if loopErr != nil && !errors.Is(loopErr, context.Canceled) && ctx.Err() == nil {
		return loopErr
	}
	return nil
}

// loop reads the service's group on task.create (protocol.Loop: new
// entries, entries of dead workers claimed after ClaimIdle, a backoff
// while Redis fails) and starts a task per entry, never more at once
// than Concurrency.
func (s *Server) loop(ctx context.Context) error {
	l := &protocol.Loop{Client: s.rdb, Group: s.group, Consumer: s.cfg.Consumer, Streams: []string{s.keys.Create()},
		Count: int64(s.cfg.Concurrency), Room: s.room, Block: s.cfg.Block, ClaimIdle: s.cfg.ClaimIdle,
		Logger: s.cfg.Logger.With("service", s.cfg.Name)}
	return l.Run(ctx, func(ctx context.Context, msgs []protocol.Message) error {
		for _, m := range msgs {
			s.dispatch(ctx, m)
		}
		return nil
	})
}

// room is how many more tasks may start now, waiting for a running one to
// end while none may; 0 when ctx ends.
func (s *Server) room(ctx context.Context) int64 {
	for {
		if free := s.cfg.Concurrency - s.running(); free > 0 {
			return int64(free)
		}
		select {
		case <-s.slot:
		case <-ctx.Done():
			return 0
		}
	}
}

func (s *Server) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight)
}

// dispatch starts the task of m, or acknowledges m at once when it is not
// this service's (another type, malformed, already cancelled).
func (s *Server) dispatch(ctx context.Context, m protocol.Message) {
	ack := func() {
		if err := protocol.Ack(context.WithoutCancel(ctx), s.rdb, s.keys.Create(), s.group, m.ID); err != nil {
			s.cfg.Logger.Warn("ack failed", "service", s.cfg.Name, "entry", m.ID, "err", err)
		}
	}
	if m.Err != nil {
		s.cfg.Logger.Warn("malformed task.create entry skipped", "service", s.cfg.Name, "entry", m.ID, "err", m.Err)
		ack()
		return
	}
	d, err := protocol.As[protocol.CreateData](m.Event)
	if err != nil {
		s.cfg.Logger.Warn("malformed task.create entry skipped", "service", s.cfg.Name, "entry", m.ID, "err", err)
		ack()
		return
	}
	h, ok := s.handlers[d.TaskType]
	if !ok {
		ack() // another service's type
		return
	}
	t := &Task{ID: d.TaskID, Type: d.TaskType, SessionID: d.SessionID, Params: d.Params,
		Timeout: time.Duration(d.Timeout * float64(time.Second)), Priority: d.Priority, Attempt: d.Attempt,
		CreatedAt: m.Event.Timestamp, Traceparent: d.Traceparent, token: d.Token, svc: s, started: s.cfg.Now()}

	s.mu.Lock()
	if _, dup := s.inflight[m.ID]; dup {
		s.mu.Unlock()
		return
	}
	if _, gone := s.cancelled[d.TaskID]; gone {
		s.mu.Unlock()
		s.finish(ctx, m.ID, t, nil, ErrCancelled)
		return
	}
	tctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	s.inflight[m.ID] = &running{taskID: d.TaskID, cancel: cancel}
	s.wg.Add(1)
	s.mu.Unlock()

	tctx, span := s.startSpan(tctx, t, m.ID)
	if s.cfg.Logger.Enabled(tctx, slog.LevelInfo) { // its arguments cost allocations when it is not
		s.cfg.Logger.InfoContext(tctx, "Task processing", "task_id", t.ID, "service", s.cfg.Name, "task_type", t.Type, "attempt", t.Attempt)
	}
	go func() {
		defer s.wg.Done()
		defer span.End()
		res, err := s.call(tctx, h, t)
		if err != nil && tctx.Err() != nil {
			if cause := context.Cause(tctx); errors.Is(cause, errStopping) {
				// Left pending: another worker claims it after ClaimIdle.
				s.cfg.Logger.InfoContext(tctx, "task left for another worker (stopping)", "task_id", t.ID, "service", s.cfg.Name)
				s.release(m.ID, cancel)
				return
			} else if errors.Is(cause, ErrCancelled) {
				err = ErrCancelled
			}
		}
		if err != nil && span.IsRecording() {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(attribute.String("error.type", toErrorInfo(err).Code))
		}
		s.finish(tctx, m.ID, t, res, err)
		s.release(m.ID, cancel)
	}()
}

// startSpan starts the consumer span "process TYPE" around t's handler,
// child of task.create's traceparent when it has one, from the global
// OpenTelemetry TracerProvider (a no-op unless the program installs one:
// taskflow's own binary does when OTEL_EXPORTER_OTLP_ENDPOINT is set).
func (s *Server) startSpan(ctx context.Context, t *Task, entryID string) (context.Context, trace.Span) {
	ctx = tracing.WithTraceparent(ctx, t.Traceparent) // the handler's logs name the trace even untraced
	if !tracing.Active() {
		return ctx, trace.SpanFromContext(context.Background()) // records nothing
	}
	ctx, span := otel.GetTracerProvider().Tracer(tracerScope).Start(ctx, "process "+t.Type, trace.WithSpanKind(trace.SpanKindConsumer))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("messaging.system", "taskflow"), attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.operation.name", "process"), attribute.String("messaging.destination.name", s.keys.Create()),
			attribute.String("messaging.consumer.group.name", s.group), attribute.String("messaging.message.id", entryID),
			attribute.String("taskflow.task.id", t.ID), attribute.String("taskflow.task.type", t.Type),
			attribute.Int("taskflow.task.attempt", t.Attempt), attribute.String("taskflow.service", s.cfg.Name))
	}
	return ctx, span
}

// tracerScope is the instrumentation scope of the SDK's spans.
const tracerScope = "github.com/taskflow/taskflow/extsvc"

// traceparent is what an outcome event carries: ctx's span context (the
// handler's span), else task.create's, echoed.
func traceparent(ctx context.Context, t *Task) string {
	if tp := tracing.Traceparent(ctx); tp != "" {
		return tp
	}
	return t.Traceparent
}

func (s *Server) release(entryID string, cancel context.CancelCauseFunc) {
	cancel(nil)
	s.mu.Lock()
	delete(s.inflight, entryID)
	s.mu.Unlock()
	select {
	case s.slot <- struct{}{}:
	default:
	}
}

// call runs the handler, turning a panic into a PANIC failure.
func (s *Server) call(ctx context.Context, h Handler, t *Task) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Error{Code: "PANIC", Message: fmt.Sprint(p), Details: map[string]any{"stack": string(debug.Stack())}}
		}
	}()
	return h.Handle(ctx, t)
}

// finish hands the outcome to flushLoop, which publishes it, then
// acknowledges the create entry: if the process dies in between, the entry
// is claimed and the task redone, and the orchestrator ignores the second
// outcome. The task's slot is free once its outcome is handed over (at most
// Concurrency outcomes wait for their flush): a slot held through the
// flush's two round trips left the handlers idle a third of the time at
// 10 ms tasks.
func (s *Server) finish(ctx context.Context, entryID string, t *Task, res json.RawMessage, herr error) {
	ctx = context.WithoutCancel(ctx)
	now := s.cfg.Now()
	dur := now.Sub(t.started).Milliseconds()
	var e protocol.Event
	var target string
	var err error
	if herr == nil {
		if len(res) == 0 || string(res) == "null" {
			res = json.RawMessage(`{}`)
		}
		cd := protocol.CompletedData{
			TaskID: t.ID, Status: "success", Result: res, DurationMS: dur, CompletedBy: s.cfg.Name, Token: t.token,
			Traceparent: traceparent(ctx, t)}
		e, err = protocol.New(protocol.TypeCompleted, now, cd)
		target = s.keys.Completed()
		if err == nil {
			err = cd.Validate() // a result that is not a JSON object is the service's bug
		}
		if err != nil {
			herr = fmt.Errorf("result is not a JSON object: %w", err)
		} else {
			s.cfg.Logger.InfoContext(ctx, "Task completed", "task_id", t.ID, "duration", dur, "service", s.cfg.Name)
		}
	}
	if herr != nil {
		info := toErrorInfo(herr)
		e, err = protocol.New(protocol.TypeFailed, now, protocol.FailedData{
			TaskID: t.ID, Status: "failed", Error: info, DurationMS: dur, FailedBy: s.cfg.Name, Token: t.token,
			Traceparent: traceparent(ctx, t)})
		target = s.keys.Failed()
		s.cfg.Logger.ErrorContext(ctx, "Task failed", "task_id", t.ID, "error", info.Code, "service", s.cfg.Name)
	}
	if err != nil {
		s.cfg.Logger.Error("cannot encode outcome", "task_id", t.ID, "err", err)
		return
	}
	s.outcomes <- outcomeReq{target: target, e: e, entryID: entryID, taskID: t.ID}
}

// maxFlush is the most outcomes flushLoop writes in one round trip.
const maxFlush = 256

// flushLoop publishes the outcomes finish hands it until s.outcomes is
// closed: whatever has come meanwhile (up to maxFlush) in one pipeline of
// XADDs, then, once those are written, one XACK of the entries whose
// outcome was published — two round trips for a batch instead of two per
// task, and still no entry acknowledged before its outcome is published
// (docs/protocol.md, step 7).
func (s *Server) flushLoop(ctx context.Context) {
	batch := make([]outcomeReq, 0, maxFlush)
	for first := range s.outcomes {
		batch = append(batch[:0], first)
	more:
		for len(batch) < maxFlush {
			select {
			case r, ok := <-s.outcomes:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		s.flush(ctx, batch)
	}
}

// flush writes one batch of outcomes and tells each whether it was
// published.
func (s *Server) flush(ctx context.Context, batch []outcomeReq) {
	cmds := make([]*redis.StringCmd, len(batch))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range batch {
			cmds[i] = p.XAdd(ctx, s.pub.Args(r.target, r.e))
		}
		return nil
	})
	ids := make([]string, 0, len(batch))
	for i, r := range batch {
		if err := cmds[i].Err(); err != nil {
			s.cfg.Logger.Error("cannot publish outcome; the entry stays pending for a retry", "service", s.cfg.Name,
				"task_id", r.taskID, "entry", r.entryID, "err", err)
			continue
		}
		ids = append(ids, r.entryID)
	}
	if err := protocol.Ack(ctx, s.rdb, s.keys.Create(), s.group, ids...); err != nil {
		// published: the entries are claimed and run again after
		// ClaimIdle, and the agent applies the first outcome only
		s.cfg.Logger.Warn("ack failed", "service", s.cfg.Name, "entries", len(ids), "err", err)
	}
}

func toErrorInfo(err error) protocol.ErrorInfo {
	var e *Error
	if errors.As(err, &e) {
		info := protocol.ErrorInfo{Code: e.Code, Message: e.Message}
		r := e.Retryable
		info.Retryable = &r
		if len(e.Details) > 0 {
			info.Details, _ = json.Marshal(e.Details)
		}
		return info
	}
	f := false
	switch {
	case errors.Is(err, ErrCancelled):
		return protocol.ErrorInfo{Code: "CANCELLED", Message: "cancelled at the agent's request", Retryable: &f}
	case errors.Is(err, context.DeadlineExceeded):
		t := true
		return protocol.ErrorInfo{Code: "TIMEOUT", Message: err.Error(), Retryable: &t}
	}
	return protocol.ErrorInfo{Code: "INTERNAL_ERROR", Message: err.Error(), Retryable: &f}
}

// heartbeatLoop touches the entries held by running tasks, so that no
// other worker claims them, and renews the service's registration.
func (s *Server) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		ids := make([]string, 0, len(s.inflight))
		for id := range s.inflight {
			ids = append(ids, id)
		}
		for id, at := range s.cancelled {
			if time.Since(at) > time.Hour {
				delete(s.cancelled, id)
			}
		}
		s.mu.Unlock()
		if err := protocol.Touch(ctx, s.rdb, s.keys.Create(), s.group, s.cfg.Consumer, ids...); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("heartbeat failed", "service", s.cfg.Name, "err", err)
		}
		if err := s.register(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("registration failed", "service", s.cfg.Name, "err", err)
		}
	}
}

// cancelLoop follows the cancel stream (no group: every worker sees every
// request) and cancels the matching running task.
func (s *Server) cancelLoop(ctx context.Context, from string) {
	for ctx.Err() == nil {
		res, err := s.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{s.keys.Cancel(), from}, Count: 100, Block: s.cfg.Block}).Result()
		if err != nil {
			if !errors.Is(err, redis.Nil) && ctx.Err() == nil {
				select {
				case <-time.After(200 * time.Millisecond):
				case <-ctx.Done():
				}
			}
			continue
		}
		for _, st := range res {
			for _, x := range st.Messages {
				from = x.ID
				e, err := protocol.Decode(x.ID, x.Values)
				if err != nil {
					continue
				}
				d, err := protocol.As[protocol.CancelData](e)
				if err != nil {
					continue
				}
				s.mu.Lock()
				s.cancelled[d.TaskID] = time.Now()
				for _, r := range s.inflight {
					if r.taskID == d.TaskID {
						r.cancel(ErrCancelled)
					}
				}
				s.mu.Unlock()
			}
		}
	}
}

func (s *Server) lastID(ctx context.Context, key string) (string, error) {
	xs, err := s.rdb.XRevRangeN(ctx, key, "+", "-", 1).Result()
	if err != nil {
		return "", fmt.Errorf("extsvc: read %s: %w", key, err)
	}
	if len(xs) == 0 {
		return "0-0", nil
	}
	return xs[0].ID, nil
}

func (s *Server) register(ctx context.Context) error {
	ttl := 3 * s.cfg.HeartbeatInterval
	if ttl < time.Second {
		ttl = time.Second
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, s.keys.Services(), s.cfg.Name)
		now := s.cfg.Now()
		p.HSet(ctx, s.keys.Service(s.cfg.Name), "types", strings.Join(s.Types(), ","),
			"consumer", s.cfg.Consumer, "heartbeat_ms", now.UnixMilli(),
			// this instance's share of the types' in-flight bound
			protocol.ConcurrencyFieldPrefix+s.cfg.Consumer, protocol.FormatConcurrency(s.cfg.Concurrency, now.Add(ttl).UnixMilli()))
		p.PExpire(ctx, s.keys.Service(s.cfg.Name), ttl)
		for t, spec := range s.specs {
			b, err := json.Marshal(spec)
			if err != nil {
				return err
			}
			p.HSet(ctx, s.keys.TaskTypes(), t, b)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("extsvc: register: %w", err)
	}
	return nil
}
