package orchestrator

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/archive"
	"github.com/taskflow/taskflow/internal/keyspace"
	"github.com/taskflow/taskflow/internal/notify"
	"github.com/taskflow/taskflow/internal/result"
	"github.com/taskflow/taskflow/internal/retry"
	"github.com/taskflow/taskflow/internal/scheduler"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/stream"
	"github.com/taskflow/taskflow/internal/task"
	"github.com/taskflow/taskflow/internal/testredis"
	"github.com/taskflow/taskflow/internal/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func databaseURL() string {
	if u := os.Getenv("TASKFLOW_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// testArchive opens an archive in a schema of the test's own.
func testArchive(t testing.TB) *archive.Archive {
	t.Helper()
	schema := "tftest_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	a, err := archive.Open(context.Background(), archive.Config{DatabaseURL: databaseURL(), Schema: schema, MaxConns: 2})
	require.NoError(t, err, "PostgreSQL at %s", databaseURL())
	t.Cleanup(func() {
		a.Close()
		p, err := pgxpool.New(context.Background(), databaseURL())
		if err == nil {
			_, _ = p.Exec(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`)
			p.Close()
		}
	})
	return a
}

// bundle is a whole deployment in one test: store, scheduler, a worker
// whose mux dispatches the external types, the orchestrator, and an
// external service (in process; see process_test.go for real processes).
type bundle struct {
	rdb  *redis.Client
	ns   string
	st   *store.Store
	note *notify.Notifier
	arc  *archive.Archive
	sk   stream.Keys
	k    keys
	rk   result.Keys
	svc  *extsvc.Service
	orch *Orchestrator
	disp *Dispatcher

	stops []func()
}

type options struct {
	handlers    map[string]extsvc.HandlerFunc
	noService   bool
	noOrch      bool
	orchCfg     Config
	svcCfg      extsvc.Config
	workerConc  int
	maxRetries  int
	extraTypes  []string
	skipArchive bool
	dispCfg     DispatcherConfig
}

func setup(t testing.TB, o options) *bundle {
	t.Helper()
	rdb, ns := testredis.Client(t)
	var maxRetries *int // 0 in options: the store's default
	if o.maxRetries != 0 {
		maxRetries = new(o.maxRetries)
	}
	st, err := store.New(rdb, store.Config{Namespace: ns, DefaultMaxRetries: maxRetries})
	require.NoError(t, err)
	note, err := notify.New(rdb, notify.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	b := &bundle{rdb: rdb, ns: ns, st: st, note: note, sk: stream.NewKeys(keyspace.MustParse(ns)), k: newKeys(keyspace.MustParse(ns)), rk: result.NewKeys(keyspace.MustParse(ns))}
	if !o.skipArchive {
		b.arc = testArchive(t)
	}
	t.Cleanup(b.stop)

	b.disp = NewDispatcher(st, o.dispCfg)
	mux := worker.NewMux()
	types := append([]string{}, o.extraTypes...)
	for typ := range o.handlers {
		types = append(types, typ)
	}
	b.disp.Register(mux, types...)
	conc := o.workerConc
	if conc == 0 {
		conc = 50
	}
	w, err := worker.New(st, mux, worker.Config{Concurrency: conc, Lease: 2 * time.Second, HeartbeatInterval: 50 * time.Millisecond,
		ShutdownGrace: 100 * time.Millisecond})
	require.NoError(t, err)
	b.run(t, "worker", w.Run, nil)
	sch, err := scheduler.New(st, scheduler.Config{Interval: 20 * time.Millisecond})
	require.NoError(t, err)
	b.run(t, "scheduler", sch.Run, nil)

	if !o.noOrch {
		b.orch = b.startOrchestrator(t, o.orchCfg)
	}
	if !o.noService {
		b.svc = b.startService(t, o.svcCfg, o.handlers)
	}
	return b
}

func (b *bundle) startOrchestrator(t testing.TB, cfg Config) *Orchestrator {
	t.Helper()
	if cfg.Block == 0 {
		cfg.Block = 50 * time.Millisecond
	}
	if cfg.ClaimIdle == 0 {
		cfg.ClaimIdle = time.Second
	}
	if cfg.WatchInterval == 0 {
		cfg.WatchInterval = 20 * time.Millisecond
	}
	if cfg.Backoff.Initial == 0 {
		cfg.Backoff = retry.Backoff{Initial: 10 * time.Millisecond, Max: 40 * time.Millisecond}
	}
	o, err := New(b.st, b.note, b.arc, cfg)
	require.NoError(t, err)
	b.run(t, "orchestrator", o.Run, nil)
	return o
}

func (b *bundle) startService(t testing.TB, cfg extsvc.Config, handlers map[string]extsvc.HandlerFunc) *extsvc.Service {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "test-service"
	}
	cfg.Namespace = b.ns
	if cfg.Block == 0 {
		cfg.Block = 50 * time.Millisecond
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 50
	}
	svc, err := extsvc.New(b.rdb, cfg)
	require.NoError(t, err)
	for typ, h := range handlers {
		svc.Handle(typ, h)
	}
	b.run(t, "service", svc.Run, nil)
	return svc
}

// run starts fn in a goroutine; stop (at cleanup, in reverse order) ends it.
func (b *bundle) run(t testing.TB, name string, fn func(context.Context) error, beforeStop func()) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if beforeStop != nil {
				beforeStop()
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	b.stops = append(b.stops, stop)
	return stop
}

func (b *bundle) stop() {
	for i := len(b.stops) - 1; i >= 0; i-- {
		b.stops[i]()
	}
}

func (b *bundle) enqueue(t testing.TB, typ, session, params string, timeout time.Duration) *task.Task {
	t.Helper()
	tk, err := b.st.Enqueue(context.Background(), store.EnqueueRequest{Type: typ, SessionID: session,
		Params: json.RawMessage(params), Timeout: timeout})
	require.NoError(t, err)
	return tk
}

// waitState polls (deadline 20 s) until the task is in want.
func (b *bundle) waitState(t testing.TB, id string, want task.State) *task.Task {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last *task.Task
	for time.Now().Before(deadline) {
		tk, err := b.st.Get(context.Background(), id)
		require.NoError(t, err)
		if tk.State == want {
			return tk
		}
		last = tk
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("task %s never reached %s (last %s, error %q)", id, want, last.State, last.LastError)
	return nil
}

// waitNotes polls until the session has n notifications and returns them.
func (b *bundle) waitNotes(t testing.TB, session string, n int) []notify.Notification {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var got []notify.Notification
	for time.Now().Before(deadline) {
		var err error
		got, err = b.note.List(context.Background(), session, "", 1000)
		require.NoError(t, err)
		if len(got) >= n {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("session %s has %d notifications, want %d", session, len(got), n)
	return nil
}
