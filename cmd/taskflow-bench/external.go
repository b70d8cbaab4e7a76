package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/handoff"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/outcome"
)

// externalType is the external task type the bench's service performs.
const externalType = "bench.external"

// externalSession is the session the bench's tasks belong to (their
// notifications are read from its stream).
const externalSession = "bench-external"

// externalResult is what `taskflow-bench external --json` prints.
type externalResult struct {
	Tasks              int `json:"tasks"`
	ServiceConcurrency int `json:"service_concurrency"`
	WorkerConcurrency  int `json:"worker_concurrency"`
	// InFlight is the dispatcher's bound as configured (0: sized by the service,
	// -1: none).
	InFlight int     `json:"inflight"`
	WorkMs   float64 `json:"work_ms"`
	// PerSec: tasks submitted in one batch → every task COMPLETED and its
	// session's notification written (read back from the session's
	// stream), end to end through dispatcher, service and orchestrator.
	PerSec float64 `json:"per_sec"`
	// DoneP50Ms .. DoneP99Ms: submit → the task's notification seen in
	// its session's stream (polled every millisecond).
	DoneP50Ms float64 `json:"done_p50_ms"`
	DoneP95Ms float64 `json:"done_p95_ms"`
	DoneP99Ms float64 `json:"done_p99_ms"`
	// AllocsPerTask and BytesPerTask: Go heap allocations of the whole
	// process (dispatcher, worker, service, orchestrator, the bench's
	// submit and its notification reader) during the external run, per
	// task.
	AllocsPerTask float64 `json:"allocs_per_task"`
	BytesPerTask  float64 `json:"bytes_per_task"`
	// CommandsPerTaskTotal is every command the clients sent during the
	// external run, per task (a go-redis hook on each client: a script
	// call is one EVALSHA, each command of a pipeline counts; the bench's
	// submit and notification reads included), ServiceCommandsPerTask the
	// service's share of it. CommandsPerTask is the server's breakdown
	// (INFO commandstats: the commands a script runs are counted under
	// their own names as well as its EVALSHA).
	CommandsPerTaskTotal   float64       `json:"commands_per_task_total"`
	ServiceCommandsPerTask float64       `json:"service_commands_per_task"`
	CommandsPerTask        []commandCost `json:"commands_per_task"`
	RedisUsecPerTask       float64       `json:"redis_usec_per_task"`
	// GoUsecPerTask is this process's CPU time (user + system, every
	// part and the bench's reads) per task during the external run;
	// DrainGoUsecPerTask the same for the in-process drain.
	GoUsecPerTask      float64 `json:"go_usec_per_task"`
	DrainGoUsecPerTask float64 `json:"drain_go_usec_per_task"`
	// DrainPerSec is the in-process drain of the same number of no-op
	// tasks by the engine's worker, in the same run; Ratio is PerSec over
	// it.
	DrainPerSec      float64       `json:"drain_per_sec"`
	DrainUsecPerTask float64       `json:"drain_redis_usec_per_task"`
	DrainCommands    []commandCost `json:"drain_commands_per_task"`
	Ratio            float64       `json:"ratio_to_drain"`
	RedisNode        string        `json:"redis_node"`
	// ServiceCmd is --service-cmd ("": extsvc in this process). With one,
	// the service's commands and CPU are not in the figures.
	ServiceCmd string `json:"service_cmd,omitempty"`
}

type externalOpts struct {
	redisURL     string
	tasks        int
	svcConc      int
	workerConc   int
	inflight     int
	work         time.Duration
	rounds       int
	jsonOut      bool
	cpuProfile   string
	memProfile   string
	noDrain      bool
	keep         bool
	blockProfile string
	prefetch     int
	// serviceCmd, when set, is the service: a process started with sh -c
	// (see the flag) instead of extsvc in this process.
	serviceCmd string
}

func newExternalCommand(m *Main) *cobra.Command {
	var o externalOpts
	cfg, _ := m.config()
	cmd := &cobra.Command{
		Use:   "external",
		Short: "Measure the external-service path end to end: submit → task.create → an extsvc service → task.completed → the orchestrator → notification",
		Long: `Runs against REDIS_URL (or --redis-url) in a namespace of its own
(taskflow-bench-<random>, deleted afterwards), in this one process but over
separate Redis connections per part: a worker whose handler is the
dispatcher (internal/external/dispatch), an external service written with
the extsvc library serving one no-op type (or --work of sleep), and the
orchestrator's outcome consumer and handoff watcher. --tasks are submitted
in one batch; the run ends when every task's notification is in its
session's stream. Then the engine's worker drains as many in-process no-op
tasks, and the external rate is given as a share of that drain.
Use a Redis of its own: the command counts are the server's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.redisURL = cfg.RedisURL
			if o.redisURL == "" {
				return &ExitError{Code: 2, Err: errors.New("external: set REDIS_URL or --redis-url")}
			}
			if o.tasks < 1 || o.svcConc < 1 || o.workerConc < 1 || o.rounds < 1 {
				return &ExitError{Code: 2, Err: errors.New("external: --tasks, --service-concurrency, --worker-concurrency and --rounds must be >= 1")}
			}
			if o.cpuProfile != "" {
				f, err := os.Create(o.cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if o.blockProfile != "" {
				runtime.SetBlockProfileRate(int(time.Millisecond / 10)) // events of 100 µs and more
			}
			var out []externalResult
			for r := 0; r < o.rounds; r++ {
				res, err := runExternal(cmd.Context(), o)
				if err != nil {
					return err
				}
				out = append(out, *res)
				if !o.jsonOut {
					printExternal(m, res)
				}
			}
			if o.blockProfile != "" {
				f, err := os.Create(o.blockProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.Lookup("block").WriteTo(f, 0); err != nil {
					return err
				}
			}
			if o.memProfile != "" {
				f, err := os.Create(o.memProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
					return err
				}
			}
			if o.jsonOut {
				enc := json.NewEncoder(m.Stdout)
				for _, r := range out {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	cfg.BindFlags(f, "redis-url")
	f.IntVar(&o.tasks, "tasks", 10000, "external tasks submitted in one batch")
	f.IntVar(&o.svcConc, "service-concurrency", 200, "the service's extsvc.Config.Concurrency")
	f.IntVar(&o.workerConc, "worker-concurrency", 10, "the dispatching worker's slots (and the in-process drain's)")
	f.IntVar(&o.inflight, "inflight", 0, "dispatch.Config.InFlight (0: sized by the live services' published concurrency, -1: no bound)")
	f.DurationVar(&o.work, "work", 0, "each task's work in the service (a sleep; 0: none)")
	f.IntVar(&o.rounds, "rounds", 1, "runs, each in a fresh namespace (one line each)")
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON object per round")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the runs to this file")
	f.StringVar(&o.memProfile, "memprofile", "", "write a Go allocation profile of the runs to this file")
	f.BoolVar(&o.noDrain, "no-drain", false, "skip the in-process drain (no ratio)")
	f.StringVar(&o.blockProfile, "blockprofile", "", "write a Go blocking profile of the runs to this file (where goroutines wait)")
	f.IntVar(&o.prefetch, "prefetch", 0, "the dispatching worker's worker.Config.Prefetch (TASKFLOW_PREFETCH)")
	f.StringVar(&o.serviceCmd, "service-cmd", "", "run the service as this command (sh -c) instead of extsvc in this process, e.g. an SDK of another language: it gets REDIS_URL, TASKFLOW_NAMESPACE, BENCH_SERVICE (the name to register), BENCH_TASK_TYPE (the no-op type to serve), BENCH_CONCURRENCY and BENCH_WORK_MS, and must stop on SIGTERM; the service's commands and CPU are then not counted")
	f.BoolVar(&o.keep, "keep", false, "keep the run's namespace (its streams show when each task passed each part: entry ids are times)")
	return cmd
}

func printExternal(m *Main, r *externalResult) {
	fmt.Fprintf(m.Stdout, "external: %d tasks, service concurrency %d, worker concurrency %d, in-flight bound %d, work %.1f ms\n",
		r.Tasks, r.ServiceConcurrency, r.WorkerConcurrency, r.InFlight, r.WorkMs)
	if r.ServiceCmd != "" {
		fmt.Fprintf(m.Stdout, "  service:      %s (its own process: its commands and CPU are not counted below)\n", r.ServiceCmd)
	}
	fmt.Fprintf(m.Stdout, "  end to end:   %8.0f tasks/s; done p50 %.1f ms, p95 %.1f ms, p99 %.1f ms\n", r.PerSec, r.DoneP50Ms, r.DoneP95Ms, r.DoneP99Ms)
	fmt.Fprintf(m.Stdout, "  per task:     %.2f Redis commands (service %.2f), %.1f µs Redis CPU, %.1f µs Go CPU, %.0f allocs, %.1f KB allocated\n",
		r.CommandsPerTaskTotal, r.ServiceCommandsPerTask, r.RedisUsecPerTask, r.GoUsecPerTask, r.AllocsPerTask, r.BytesPerTask/1024)
	fmt.Fprintf(m.Stdout, "  commands:    ")
	for i, c := range r.CommandsPerTask {
		if i == 12 {
			break
		}
		fmt.Fprintf(m.Stdout, " %s %.2f×/%.2f", c.Command, c.Calls, c.Usec)
	}
	fmt.Fprintln(m.Stdout)
	if r.DrainPerSec > 0 {
		fmt.Fprintf(m.Stdout, "  in-process drain: %8.0f tasks/s (%.1f µs Redis CPU, %.1f µs Go CPU per task); external = %.1f %% of it\n",
			r.DrainPerSec, r.DrainUsecPerTask, r.DrainGoUsecPerTask, 100*r.Ratio)
	}
}

// runExternal is one round: the external run, then the in-process drain.
func runExternal(ctx context.Context, o externalOpts) (*externalResult, error) {
	open := func(pool int) (redis.UniversalClient, error) {
		return redisconn.Open(ctx, o.redisURL, redisconn.Options{PoolSize: pool})
	}
	rdb, err := open(max(64, o.workerConc+16))
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	defer rdb.Close()
	svcRdb, err := open(max(64, o.svcConc+16)) // the service's own connections
	if err != nil {
		return nil, err
	}
	defer svcRdb.Close()
	var agentCmds, svcCmds cmdCounter
	rdb.AddHook(&agentCmds)
	svcRdb.AddHook(&svcCmds)
	ns, nodes, err := benchNamespace(ctx, rdb, 1)
	if err != nil {
		return nil, err
	}
	if o.keep {
		defer fmt.Fprintf(os.Stderr, "external: namespace %s kept\n", ns)
	} else {
		defer cleanNamespace(context.WithoutCancel(ctx), rdb, ns, 1)
	}
	name := keyspace.MustParse(ns)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	if err != nil {
		return nil, err
	}
	// every task is one session's: its stream keeps them all (the default
	// 1,000 would trim notifications a burst writes before they are read)
	note, err := notify.New(rdb, notify.Config{Namespace: name, MaxLen: int64(o.tasks) + 1000})
	if err != nil {
		return nil, err
	}
	srv := nodes.masters[0]
	res := &externalResult{Tasks: o.tasks, ServiceConcurrency: o.svcConc, WorkerConcurrency: o.workerConc, InFlight: o.inflight,
		WorkMs: float64(o.work) / float64(time.Millisecond), RedisNode: srv.addr, ServiceCmd: o.serviceCmd}

	// the parts, each until stop
	var wg sync.WaitGroup
	pctx, stopParts := context.WithCancel(ctx)
	errc := make(chan error, 8)
	start := func(what string, run func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(pctx); err != nil && pctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", what, err)
			}
		}()
	}
	defer func() { stopParts(); wg.Wait() }()

	disp := dispatch.New(st, dispatch.Config{InFlight: o.inflight})
	mux := taskflow.NewMux()
	mux.Handle(externalType, disp)
	// as a taskflow worker serving the type (taskflow.Worker): the
	// dispatcher's tasks run outside the handler slots
	w, err := worker.New(st, mux, worker.Config{Concurrency: o.workerConc, Prefetch: o.prefetch,
		HandOff: disp.HandsOff, HandOffRoom: disp.HandOffRoom, FetchDispatch: disp})
	if err != nil {
		return nil, err
	}
	oc, err := outcome.New(st, note, nil, outcome.Config{Consumer: "bench-orchestrator"})
	if err != nil {
		return nil, err
	}
	hw, err := handoff.New(st, note, nil, handoff.Config{})
	if err != nil {
		return nil, err
	}
	if o.serviceCmd != "" {
		start("service command", func(ctx context.Context) error { return runServiceCmd(ctx, o, ns) })
	} else {
		svc, err := extsvc.New(svcRdb, extsvc.Config{Name: benchService, Namespace: ns, Concurrency: o.svcConc})
		if err != nil {
			return nil, err
		}
		work := o.work
		svc.HandleFunc(externalType, func(ctx context.Context, t *extsvc.Task) (json.RawMessage, error) {
			if work > 0 {
				time.Sleep(work)
			}
			return json.RawMessage(`{"ok":true}`), nil
		})
		start("service", svc.Run)
	}
	start("orchestrator", oc.Run)
	start("handoff watcher", hw.Run)
	start("worker", w.Run)
	// the service has registered and its group exists before the clock starts
	if err := waitRegistered(ctx, rdb, ns, errc); err != nil {
		return nil, err
	}

	reqs := make([]store.EnqueueRequest, o.tasks)
	for i := range reqs {
		reqs[i] = store.EnqueueRequest{Type: externalType, SessionID: externalSession, Timeout: 5 * time.Minute}
	}
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	usec0, stats0 := redisUsec(ctx, srv.cmd), commandStats(ctx, srv.cmd)
	cmds0, svcCmds0 := agentCmds.n.Load(), svcCmds.n.Load()
	cpu0 := processUsec()
	t0 := time.Now()
	for i := 0; i < len(reqs); i += 500 {
		if _, err := st.EnqueueBatch(ctx, reqs[i:min(i+500, len(reqs))]); err != nil {
			return nil, err
		}
	}
	if err := awaitNotifications(ctx, srv.cmd, note.StreamKey(externalSession), o.tasks, t0, errc); err != nil {
		return nil, err
	}
	elapsed := time.Since(t0)
	cpu1 := processUsec()
	runtime.ReadMemStats(&ms1)
	usec1, stats1 := redisUsec(ctx, srv.cmd), commandStats(ctx, srv.cmd)
	lat, err := checkNotifications(ctx, note, o.tasks, t0)
	if err != nil {
		return nil, err
	}
	stopParts()
	wg.Wait()

	res.PerSec = float64(o.tasks) / elapsed.Seconds()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(lat)))) - 1
		return math.Round(float64(lat[max(0, i)])/float64(time.Millisecond)*10) / 10
	}
	res.DoneP50Ms, res.DoneP95Ms, res.DoneP99Ms = pct(0.50), pct(0.95), pct(0.99)
	res.AllocsPerTask = math.Round(float64(ms1.Mallocs-ms0.Mallocs) / float64(o.tasks))
	res.BytesPerTask = math.Round(float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(o.tasks))
	res.RedisUsecPerTask = math.Round(float64(usec1-usec0)/float64(o.tasks)*100) / 100
	res.GoUsecPerTask = math.Round(float64(cpu1-cpu0)/float64(o.tasks)*100) / 100
	res.CommandsPerTask = costs(stats0, stats1, o.tasks)
	res.CommandsPerTaskTotal = math.Round(float64(agentCmds.n.Load()-cmds0+svcCmds.n.Load()-svcCmds0)/float64(o.tasks)*100) / 100
	res.ServiceCommandsPerTask = math.Round(float64(svcCmds.n.Load()-svcCmds0)/float64(o.tasks)*100) / 100

	if !o.noDrain {
		// the engine's own drain of as many no-op tasks, same process, same Redis
		if err := refillStore(ctx, st, o.tasks); err != nil {
			return nil, err
		}
		u0, s0 := redisUsec(ctx, srv.cmd), commandStats(ctx, srv.cmd)
		bo := benchOpts{concurrency: max(o.workerConc, 50), fetchBatch: 64, ackBatch: 64}
		c0 := processUsec()
		rate, err := drainEngine(ctx, st, bo, o.tasks)
		res.DrainGoUsecPerTask = math.Round(float64(processUsec()-c0)/float64(o.tasks)*100) / 100
		if err != nil {
			return nil, err
		}
		res.DrainPerSec = math.Round(rate)
		res.DrainUsecPerTask = math.Round(float64(redisUsec(ctx, srv.cmd)-u0)/float64(o.tasks)*100) / 100
		res.DrainCommands = costs(s0, commandStats(ctx, srv.cmd), o.tasks)
		res.Ratio = math.Round(res.PerSec/rate*1000) / 1000
	}
	res.PerSec = math.Round(res.PerSec)
	return res, nil
}

// refillStore enqueues n tasks of the in-process bench type (not timed).
func refillStore(ctx context.Context, st *store.Store, n int) error {
	reqs := make([]store.EnqueueRequest, 500)
	for i := range reqs {
		reqs[i] = store.EnqueueRequest{Type: publicType}
	}
	for sent := 0; sent < n; sent += 500 {
		if _, err := st.EnqueueBatch(ctx, reqs[:min(500, n-sent)]); err != nil {
			return err
		}
	}
	return nil
}

// benchService is the name the bench's service registers under.
const benchService = "bench-service"

// runServiceCmd runs --service-cmd until ctx ends (then SIGTERM to its
// process group, and a SIGKILL 10 s later); the process ending first is an
// error.
func runServiceCmd(ctx context.Context, o externalOpts, ns string) error {
	// env(1) adds the run's settings to the environment the command
	// inherits (this process reads no environment outside the config table)
	cmd := exec.CommandContext(ctx, "env", "REDIS_URL="+o.redisURL, "TASKFLOW_NAMESPACE="+ns, "BENCH_SERVICE="+benchService,
		"BENCH_TASK_TYPE="+externalType, "BENCH_CONCURRENCY="+strconv.Itoa(o.svcConc),
		"BENCH_WORK_MS="+strconv.FormatFloat(float64(o.work)/float64(time.Millisecond), 'f', -1, 64),
		"sh", "-c", o.serviceCmd)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// its own process group, signalled whole: sh may not exec the command
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		return nil // stopped by the bench
	}
	if err == nil {
		err = errors.New("exited")
	}
	return fmt.Errorf("%q: %w", o.serviceCmd, err)
}

// waitRegistered waits until the bench's service has registered (a
// service command may take a while to start: 30 s).
func waitRegistered(ctx context.Context, rdb redis.UniversalClient, ns string, errc chan error) error {
	key := keyspace.MustParse(ns).Prefix() + "agent:service:" + benchService
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		select {
		case err := <-errc:
			return err
		default:
		}
		if n, _ := rdb.Exists(ctx, key).Result(); n == 1 {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("external: the service did not register within 30 s")
}

// awaitNotifications waits until the bench session's notification stream
// holds n entries, looking at its length (XLEN) every millisecond: the
// bench's own reads stay out of the per-task CPU, commands and
// allocations it measures. checkNotifications then reads them.
func awaitNotifications(ctx context.Context, rdb redis.Cmdable, stream string, n int, t0 time.Time, errc chan error) error {
	deadline := t0.Add(10*time.Minute + time.Duration(n)*time.Millisecond)
	for {
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		got, err := rdb.XLen(ctx, stream).Result()
		if err != nil {
			return err
		}
		if got >= int64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("external: %d of %d tasks notified before the deadline", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkNotifications reads the bench session's notifications once the run
// is over and returns each task's latency from t0 to its notification's
// entry (a stream id is the time Redis wrote it, in ms): each of the n
// tasks must be notified exactly once.
func checkNotifications(ctx context.Context, note *notify.Notifier, n int, t0 time.Time) ([]time.Duration, error) {
	seen := make(map[string]struct{}, n)
	lat := make([]time.Duration, 0, n)
	after := ""
	for {
		ns, err := note.List(ctx, externalSession, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, x := range ns {
			after = x.ID
			if _, dup := seen[x.TaskID]; dup {
				return nil, fmt.Errorf("external: task %s notified twice", x.TaskID)
			}
			seen[x.TaskID] = struct{}{}
			ms, _, _ := strings.Cut(x.ID, "-")
			at, err := strconv.ParseInt(ms, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("external: notification entry id %q: %w", x.ID, err)
			}
			lat = append(lat, time.UnixMilli(at).Sub(t0))
		}
		if len(ns) < 1000 {
			break
		}
	}
	if len(seen) != n {
		return nil, fmt.Errorf("external: %d notifications for %d tasks", len(seen), n)
	}
	return lat, nil
}

// cmdCounter is a go-redis hook counting the commands a client sends
// (each command of a pipeline counts; a script call is one EVALSHA).
type cmdCounter struct{ n atomic.Int64 }

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// processUsec is this process's CPU time so far (user + system), in µs.
func processUsec() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Sec*1e6 + ru.Utime.Usec + ru.Stime.Sec*1e6 + ru.Stime.Usec
}
