// Package externaltest runs a whole deployment of the external path inside
// one test, on the real Redis of internal/testrig/testredis and the PostgreSQL of
// TASKFLOW_TEST_DATABASE_URL: the store, a scheduler, a worker whose mux
// dispatches the external types (internal/external/dispatch), the outcome consumer
// (internal/external/outcome), the handoff watcher (internal/external/handoff) and an
// external service (extsvc), each in its own goroutine, stopped at the
// test's cleanup in reverse order.
//
// It is shared by the tests of those packages, which are end-to-end tests
// of one path; it is test code and is imported by tests only.
package externaltest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/maintenance"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/handoff"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
	"github.com/taskflow/taskflow/task"
)

// Echo is a service handler that reports progress (50 %, "halfway") and
// completes with "echo <params.word>" and the attempt's number.
func Echo(ctx context.Context, t *extsvc.Task) (json.RawMessage, error) {
	var p struct {
		Word string `json:"word"`
	}
	if err := t.UnmarshalParams(&p); err != nil {
		return nil, err
	}
	if err := t.Progress(ctx, 50, "halfway", 2*time.Second); err != nil {
		return nil, err
	}
	return extsvc.Result("", "echo "+p.Word, map[string]any{"attempt": t.Attempt}), nil
}

// DatabaseURL is the PostgreSQL the archive tests use:
// TASKFLOW_TEST_DATABASE_URL, else the local default.
func DatabaseURL() string {
	if u := os.Getenv("TASKFLOW_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Archive opens an archive in a schema of the test's own, dropped at
// cleanup.
func Archive(t testing.TB) *archive.Archive {
	t.Helper()
	schema := "tftest_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	a, err := archive.Open(context.Background(), archive.Config{DatabaseURL: DatabaseURL(), Schema: schema, MaxConns: 2})
	require.NoError(t, err, "PostgreSQL at %s", DatabaseURL())
	t.Cleanup(func() {
		a.Close()
		p, err := pgxpool.New(context.Background(), DatabaseURL())
		if err == nil {
			_, _ = p.Exec(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`)
			p.Close()
		}
	})
	return a
}

// Bundle is a whole deployment in one test: store, scheduler, a worker
// whose mux dispatches the external types, the outcome consumer and the
// watcher, and an external service (in process; see
// internal/external/outcome/process_test.go for real processes).
type Bundle struct {
	Redis     redis.UniversalClient
	NS        string
	Namespace keyspace.Namespace
	Store     *store.Store
	Notifier  *notify.Notifier
	Archive   *archive.Archive // nil with Options.SkipArchive
	Streams   protocol.Keys
	Results   resultview.Keys

	Service    *extsvc.Server       // nil with Options.NoService
	Consumer   *outcome.Consumer    // nil with Options.NoOrchestrator
	Watcher    *handoff.Watcher     // nil with Options.NoOrchestrator
	Dispatcher *dispatch.Dispatcher // the worker's handler of the external types
	Worker     *worker.Worker       // the worker dispatching them

	mu    sync.Mutex
	stops []func()
}

// Options shape a Bundle.
type Options struct {
	// Handlers are the external service's task types; the worker
	// dispatches them (and ExtraTypes, which no service of the bundle
	// serves).
	Handlers   map[string]extsvc.HandlerFunc
	ExtraTypes []string
	// NoService starts no service (StartService starts one later).
	NoService bool
	// NoOrchestrator starts neither the outcome consumer nor the watcher
	// (StartConsumer, StartWatcher).
	NoOrchestrator bool
	// Outcome, Handoff, Service and Dispatch configure the parts; unset
	// fields get the fast settings of tests (see StartConsumer,
	// StartWatcher, StartService).
	Outcome  outcome.Config
	Handoff  handoff.Config
	Service  extsvc.Config
	Dispatch dispatch.Config
	// WorkerConcurrency is the worker's slots. Default 50.
	WorkerConcurrency int
	// MaxRetries is the store's default max_retries (0: the store's).
	MaxRetries int
	// SkipArchive runs without PostgreSQL.
	SkipArchive bool
}

// Setup builds and starts a Bundle in a fresh namespace.
func Setup(t testing.TB, o Options) *Bundle {
	t.Helper()
	rdb, name := testredis.Client(t)
	var maxRetries *int // 0 in options: the store's default
	if o.MaxRetries != 0 {
		maxRetries = new(o.MaxRetries)
	}
	st, err := store.New(rdb, store.Config{Namespace: name, DefaultMaxRetries: maxRetries})
	require.NoError(t, err)
	ns := keyspace.MustParse(name)
	note, err := notify.New(rdb, notify.Config{Namespace: ns})
	require.NoError(t, err)
	b := &Bundle{Redis: rdb, NS: name, Namespace: ns, Store: st, Notifier: note,
		Streams: protocol.NewKeys(ns), Results: resultview.NewKeys(ns)}
	if !o.SkipArchive {
		b.Archive = Archive(t)
	}
	t.Cleanup(b.Stop)

	b.Dispatcher = dispatch.New(st, o.Dispatch)
	mux := taskflow.NewMux()
	types := append([]string{}, o.ExtraTypes...)
	for typ := range o.Handlers {
		types = append(types, typ)
	}
	for _, typ := range types {
		mux.Handle(typ, b.Dispatcher)
	}
	conc := o.WorkerConcurrency
	if conc == 0 {
		conc = 50
	}
	w, err := worker.New(st, mux, worker.Config{Concurrency: conc, Lease: 2 * time.Second, HeartbeatInterval: 50 * time.Millisecond,
		ShutdownGrace: 100 * time.Millisecond, HandOff: b.Dispatcher.HandsOff, HandOffRoom: b.Dispatcher.HandOffRoom, FetchDispatch: b.Dispatcher}) // as taskflow.Worker sets it
	require.NoError(t, err)
	b.Worker = w
	b.Run(t, "worker", w.Run)
	sch, err := maintenance.New(st, maintenance.Config{Interval: 20 * time.Millisecond})
	require.NoError(t, err)
	b.Run(t, "scheduler", sch.Run)

	if !o.NoOrchestrator {
		b.Consumer = b.StartConsumer(t, o.Outcome)
		b.Watcher = b.StartWatcher(t, o.Handoff)
	}
	if !o.NoService {
		b.Service, _ = b.StartService(t, o.Service, o.Handlers)
	}
	return b
}

// StartConsumer starts an outcome consumer; unset fields of cfg get test
// settings (50 ms reads, ClaimIdle 1 s, retries after 10–40 ms).
func (b *Bundle) StartConsumer(t testing.TB, cfg outcome.Config) *outcome.Consumer {
	t.Helper()
	if cfg.Block == 0 {
		cfg.Block = 50 * time.Millisecond
	}
	if cfg.ClaimIdle == 0 {
		cfg.ClaimIdle = time.Second
	}
	if cfg.Backoff.Initial == 0 {
		cfg.Backoff = retry.Backoff{Initial: 10 * time.Millisecond, Max: 40 * time.Millisecond}
	}
	c, err := outcome.New(b.Store, b.Notifier, b.Archive, cfg)
	require.NoError(t, err)
	b.Run(t, "outcome consumer", c.Run)
	return c
}

// StartWatcher starts a handoff watcher; an unset WatchInterval is 20 ms.
func (b *Bundle) StartWatcher(t testing.TB, cfg handoff.Config) *handoff.Watcher {
	t.Helper()
	if cfg.WatchInterval == 0 {
		cfg.WatchInterval = 20 * time.Millisecond
	}
	w, err := handoff.New(b.Store, b.Notifier, b.Archive, cfg)
	require.NoError(t, err)
	b.Run(t, "watcher", w.Run)
	return w
}

// StartOrchestrator starts what `taskflow orchestrator` runs of the
// external path: an outcome consumer and a watcher.
func (b *Bundle) StartOrchestrator(t testing.TB, oc outcome.Config, hc handoff.Config) (*outcome.Consumer, *handoff.Watcher) {
	t.Helper()
	return b.StartConsumer(t, oc), b.StartWatcher(t, hc)
}

// StartService starts an external service of the bundle's namespace
// serving handlers (name test-service, 50 ms reads, 50 tasks at once
// unless cfg says otherwise); stop ends it at once (a worker gone).
func (b *Bundle) StartService(t testing.TB, cfg extsvc.Config, handlers map[string]extsvc.HandlerFunc) (svc *extsvc.Server, stop func()) {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "test-service"
	}
	cfg.Namespace = b.NS
	if cfg.Block == 0 {
		cfg.Block = 50 * time.Millisecond
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 50
	}
	svc, err := extsvc.New(b.Redis, cfg)
	require.NoError(t, err)
	for typ, h := range handlers {
		svc.Handle(typ, h)
	}
	return svc, b.Run(t, "service", svc.Run)
}

// Run starts fn in a goroutine; the returned stop (also called at
// cleanup, in reverse order of starts) cancels its context and waits for
// it. An error fn returns fails the test.
func (b *Bundle) Run(t testing.TB, name string, fn func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	b.mu.Lock()
	b.stops = append(b.stops, stop)
	b.mu.Unlock()
	return stop
}

// Stop stops everything Run started, the last started first.
func (b *Bundle) Stop() {
	b.mu.Lock()
	stops := append([]func(){}, b.stops...)
	b.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

// Enqueue submits a task.
func (b *Bundle) Enqueue(t testing.TB, typ, session, params string, timeout time.Duration) *task.Task {
	t.Helper()
	tk, err := b.Store.Enqueue(context.Background(), store.EnqueueRequest{Type: typ, SessionID: session,
		Params: json.RawMessage(params), Timeout: timeout})
	require.NoError(t, err)
	return tk
}

// WaitState polls (deadline 20 s) until the task is in want.
func (b *Bundle) WaitState(t testing.TB, id string, want task.State) *task.Task {
	t.Helper()
	var tk *task.Task
	testwait.Until(t, 20*time.Second, 10*time.Millisecond, func() bool {
		var err error
		tk, err = b.Store.Get(context.Background(), id)
		require.NoError(t, err)
		return tk.State == want
	}, func() string {
		return fmt.Sprintf("task %s never reached %s (last %s, error %q)", id, want, tk.State, tk.LastError)
	})
	return tk
}

// WaitNotes polls (deadline 20 s) until the session has n notifications
// and returns them.
func (b *Bundle) WaitNotes(t testing.TB, session string, n int) []notify.Notification {
	t.Helper()
	var got []notify.Notification
	testwait.Until(t, 20*time.Second, 10*time.Millisecond, func() bool {
		var err error
		got, err = b.Notifier.List(context.Background(), session, "", 1000)
		require.NoError(t, err)
		return len(got) >= n
	}, func() string { return fmt.Sprintf("session %s has %d notifications, want %d", session, len(got), n) })
	return got
}

// WaitTimeoutNotices polls (deadline 5 s) until the task.timeout stream
// holds at least n messages and returns them: the watcher marks an
// attempt TIMEOUT, then publishes, so a test that saw the state waits for
// the message.
func (b *Bundle) WaitTimeoutNotices(t testing.TB, n int) []redis.XMessage {
	t.Helper()
	var xs []redis.XMessage
	require.Eventually(t, func() bool {
		var err error
		xs, err = b.Redis.XRange(context.Background(), b.Streams.Timeout(), "-", "+").Result()
		return err == nil && len(xs) >= n
	}, 5*time.Second, 10*time.Millisecond)
	return xs
}

// Drained waits until agent-group has read and acknowledged every entry
// of the stream: the consumer applies an event's effects before it
// acknowledges it, so they are all visible then.
func (b *Bundle) Drained(t testing.TB, key string) {
	t.Helper()
	require.Eventually(t, func() bool {
		lag, pending, err := protocol.Lag(context.Background(), b.Redis, key, protocol.AgentGroup)
		return err == nil && pending == 0 && lag == 0
	}, 10*time.Second, 10*time.Millisecond)
}

// Entries returns the stream's entries as the consumer reads them.
func (b *Bundle) Entries(t testing.TB, key string) []protocol.Message {
	t.Helper()
	xs, err := b.Redis.XRange(context.Background(), key, "-", "+").Result()
	require.NoError(t, err)
	out := make([]protocol.Message, 0, len(xs))
	for _, x := range xs {
		e, err := protocol.Decode(x.ID, x.Values)
		require.NoError(t, err)
		out = append(out, protocol.Message{Stream: key, ID: x.ID, Event: e})
	}
	return out
}

// Publish appends an event to a stream, as a service (or a forger) would.
func (b *Bundle) Publish(t testing.TB, key string, typ protocol.Type, data any) string {
	t.Helper()
	e, err := protocol.New(typ, time.Now(), data)
	require.NoError(t, err)
	id, err := protocol.NewPublisher(b.Redis, 0, nil).Publish(context.Background(), key, e)
	require.NoError(t, err)
	return id
}

// LastToken is the token the task was last dispatched with.
func (b *Bundle) LastToken(t testing.TB, id string) string {
	t.Helper()
	tok, err := dispatch.LastToken(context.Background(), b.Store, id)
	require.NoError(t, err)
	require.NotEmpty(t, tok, "task %s was dispatched", id)
	return tok
}
