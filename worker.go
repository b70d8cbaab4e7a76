package taskflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskflow/taskflow/internal/engine/depend"
	"github.com/taskflow/taskflow/internal/engine/maintenance"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/task"
)

// Worker runs the handlers registered on it against a deployment: it takes
// tasks of every type from the queues (FIFO per priority, retries at the
// adaptive ratio), holds a lease on each while its handler runs, writes the
// outcome once, and on Run's end stops gracefully. Register every handler
// and middleware before Run. Any number of workers may serve one
// deployment, in any number of processes.
type Worker struct {
	cfg Config
	mux *Mux
	app *app.App // a process's app to run on (taskflow's own binary); nil: Run opens one
	// orchestrated: taskflow's orchestrator process releases dependent
	// tasks, so the worker's scheduler part does not (taskflow's own binary)
	orchestrated bool

	ran  atomic.Bool
	mu   sync.Mutex
	eng  *worker.Worker // while running
	prog progressWriter
}

// NewWorker returns a worker for cfg's deployment; it connects when Run
// starts. An error says what is wrong with cfg.
func NewWorker(cfg Config) (*Worker, error) {
	if _, err := cfg.appConfig(); err != nil {
		return nil, err
	}
	return &Worker{cfg: cfg, mux: NewMux()}, nil
}

// Handle registers h for taskType with what opts declare (see
// Mux.Handle); a second registration of a type panics.
func (w *Worker) Handle(taskType string, h Handler, opts ...TypeOption) {
	w.mux.Handle(taskType, h, opts...)
}

// HandleFunc registers f for taskType.
func (w *Worker) HandleFunc(taskType string, f func(ctx context.Context, t *task.Task) (json.RawMessage, error), opts ...TypeOption) {
	w.mux.HandleFunc(taskType, f, opts...)
}

// Use adds middleware around every handler; the first added is the
// outermost.
func (w *Worker) Use(mw ...Middleware) { w.mux.Use(mw...) }

// Types lists the registered task types, sorted.
func (w *Worker) Types() []string { return w.mux.Types() }

// TypeInfos returns what each registered type declares.
func (w *Worker) TypeInfos() []TypeInfo { return w.mux.TypeInfos() }

// Stats counts what a running (or stopped) worker did.
type Stats struct {
	Started, Completed, Failed, DeadLettered, Cancelled, Released, LeaseLost int64
}

// Stats returns the worker's counters (zero before Run).
func (w *Worker) Stats() Stats {
	w.mu.Lock()
	eng := w.eng
	w.mu.Unlock()
	if eng == nil {
		return Stats{}
	}
	s := eng.Stats()
	return Stats{Started: s.Started, Completed: s.Completed, Failed: s.Failed, DeadLettered: s.DeadLettered,
		Cancelled: s.Cancelled, Released: s.Released, LeaseLost: s.LeaseLost}
}

// ErrRunTwice is returned by a second call of Run.
var ErrRunTwice = errors.New("taskflow: a Worker runs once")

// Run connects, publishes the registered types, and serves tasks until ctx
// ends; then it stops fetching, lets running handlers finish within the
// shutdown grace, cancels the rest (context.Cause: task.ErrShutdown) and
// hands their tasks back to the queue without spending a retry, writes
// every outcome, and returns nil. Unless Config.NoScheduler, it also runs
// the scheduler. A Worker runs once.
func (w *Worker) Run(ctx context.Context) error {
	if !w.ran.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	if len(w.mux.handlers) == 0 {
		return errors.New("taskflow: no handler registered")
	}
	a := w.app
	if a == nil {
		ac, err := w.cfg.appConfig()
		if err != nil {
			return err
		}
		if a, err = app.Open(ctx, ac, w.cfg.logger()); err != nil {
			return fmt.Errorf("taskflow: %w", err)
		}
		defer a.Close()
	}
	if err := w.publishTypes(ctx, a); err != nil {
		return err
	}
	eng := a.Config.Engine
	log := w.cfg.logger()
	wc := eng.Worker
	wc.ID, wc.Concurrency, wc.ShutdownGrace = w.cfg.WorkerID, a.Config.Concurrency, a.Config.ShutdownGrace
	if w.cfg.Concurrency != 0 { // a worker built on a process's app
		wc.Concurrency = w.cfg.Concurrency
	}
	if w.cfg.ShutdownGrace != 0 {
		wc.ShutdownGrace = w.cfg.ShutdownGrace
	}
	if len(w.cfg.Queues) > 0 { // a worker built on a process's app
		wc.Queues = make([]worker.QueueConfig, len(w.cfg.Queues))
		for i, q := range w.cfg.Queues {
			wc.Queues[i] = worker.QueueConfig{Name: q.Name, Weight: q.Weight, Concurrency: q.Concurrency}
		}
		wc.StrictOrder = w.cfg.StrictQueueOrder
	}
	wc.Logger = log.With("component", "worker")
	deps := w.mux.dependencies()
	if wc.Dependencies != nil {
		maps.Copy(deps, wc.Dependencies) // the engine's own setting wins
	}
	wc.Dependencies = deps
	wc.HandOff = w.mux.handOff
	wc.HandOffRoom = w.mux.handOffRoom()
	wc.FetchDispatch = w.mux.fetchDispatch()
	w.prog = progressWriter{a: a, keys: resultview.NewKeys(a.Store.Namespace())}
	ew, err := worker.New(a.Store, entry{w}, wc)
	if err != nil {
		return fmt.Errorf("taskflow: %w", err)
	}
	w.prog.worker = ew.ID()
	w.mu.Lock()
	w.eng = ew
	w.mu.Unlock()

	var sc *maintenance.Scheduler
	var releases *depend.Graph
	if !w.cfg.NoScheduler {
		scfg := eng.Scheduler
		scfg.Logger = log.With("component", "scheduler")
		if sc, err = maintenance.New(a.Store, scfg); err != nil {
			return fmt.Errorf("taskflow: %w", err)
		}
		if !w.orchestrated {
			releases = depend.New(a.Store, depend.Config{Logger: log.With("component", "dependencies")})
		}
	}
	log.Info("taskflow worker running", "id", ew.ID(), "concurrency", wc.Concurrency, "types", w.mux.Types(),
		"scheduler", sc != nil)
	errc := make(chan error, 3)
	n := 1
	go func() { errc <- ew.Run(ctx) }()
	if sc != nil {
		n++
		go func() { errc <- sc.Run(ctx) }()
	}
	if releases != nil {
		n++
		go func() { errc <- releases.Run(ctx) }()
	}
	var errs []error
	for range n {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// entry is the handler the engine runs: it puts the task in the context
// and routes it through the mux.
type entry struct{ w *Worker }

func (e entry) ProcessTask(ctx context.Context, t *task.Task) (json.RawMessage, error) {
	return e.w.mux.ProcessTask(withTask(ctx, t, e.w.prog), t)
}

// Types lists the routed types, for the worker's entry in the workers view.
func (e entry) Types() []string { return e.w.mux.Types() }

// publishTypes records what each handler declares, where the registry of
// every process of the deployment reads it.
func (w *Worker) publishTypes(ctx context.Context, a *app.App) error {
	specs := make(map[string]string, len(w.mux.types))
	for _, ti := range w.mux.TypeInfos() {
		b, err := json.Marshal(protocol.TypeSpec{Description: ti.Description, Params: ti.Schema(), Notify: ti.Notify})
		if err != nil {
			return fmt.Errorf("taskflow: %s: %w", ti.Name, err)
		}
		specs[ti.Name] = string(b)
	}
	if err := a.Store.PublishWorkerTypes(ctx, specs); err != nil {
		return fmt.Errorf("taskflow: %w", err)
	}
	return nil
}

// progressWriter records a running task's progress where the result view
// reads it.
type progressWriter struct {
	a      *app.App
	keys   resultview.Keys
	worker string
}

func (p progressWriter) write(ctx context.Context, id string, pr Progress) error {
	if p.a == nil {
		return ErrNoProgress
	}
	return resultview.WriteProgress(ctx, p.a.Redis, p.keys, id, resultview.Progress{Percent: pr.Percent, Message: pr.Message,
		ETASeconds: pr.ETA, ReportedBy: p.worker, At: time.Now()}, resultview.ProgressTTL)
}
