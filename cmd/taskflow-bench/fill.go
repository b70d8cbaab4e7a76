package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/task"
)

// FillConfig says what `taskflow-bench fill` writes. The zero value plus
// WithDefaults is a million tasks over 12 hours.
//
// The tasks arrive in batches of Batch, evenly over Span. The oldest
// CompletedShare+DLQShare of them (the queue is FIFO) are taken by a
// worker Lag after their batch arrived and finish then: most COMPLETED,
// DLQShare dead-lettered by a permanent failure. The rest are still
// PENDING when the fill ends: a backlog, the newest tasks. Every write is
// one of the store's transitions (enqueue, fetch, complete, fail) on a
// store built as `taskflow api` builds its own, so the task hashes, the
// per-state indexes, the queues and the event stream are what production
// writes; only "now" comes from a clock the fill moves along the span.
type FillConfig struct {
	// Tasks is how many tasks to create. Default 1,000,000.
	Tasks int
	// Types are the task types, given to the tasks in turn. Default
	// noop, sleep (the built-in types every worker serves).
	Types []string
	// CompletedShare is the share of tasks that end COMPLETED. nil: 0.7.
	CompletedShare *float64
	// DLQShare is the share that end in the DLQ (a permanent failure on
	// the first attempt). Default 0.
	DLQShare float64
	// Span is the time over which the tasks arrive, ending Lag before the
	// fill started. 0: all at once (a burst). nil: 12h, inside the default
	// TASKFLOW_RETENTION (24h), so a scheduler purges none of them.
	Span *time.Duration
	// Lag is how long after its batch arrived a processed task finishes:
	// it is fetched at half of it and completes (or fails) at the end.
	// nil: 20ms. Above MAX_TASK_AGE the fetch dead-letters the tasks
	// instead, as it would in production.
	Lag *time.Duration
	// Batch is the tasks per enqueue, fetch and complete call (1..1000).
	// The tasks of one call share their timestamps, which a listing
	// sorted by time reads as one block: smaller is closer to tasks
	// submitted one by one, larger is faster. Default 100.
	Batch int
	// WorkerID is the worker named in the processed tasks (field and
	// state history). Its length matters: the history holds it, and a
	// history over the server's hash-max-listpack-value (64 bytes) turns
	// the task's hash into a hashtable, about three times larger.
	// Default: the id a worker started on this host gets
	// (worker.Config's default, <host>-<pid>-<random>).
	WorkerID string
	// Progress is how often a progress line is printed. Default 5s.
	Progress time.Duration
}

// WithDefaults returns c with every unset field set to its default.
func (c FillConfig) WithDefaults() FillConfig {
	if c.Tasks == 0 {
		c.Tasks = 1_000_000
	}
	if len(c.Types) == 0 {
		c.Types = []string{"noop", "sleep"}
	}
	if c.CompletedShare == nil {
		c.CompletedShare = new(0.7)
	}
	if c.Span == nil {
		c.Span = new(12 * time.Hour)
	}
	if c.Lag == nil {
		c.Lag = new(20 * time.Millisecond)
	}
	if c.Batch == 0 {
		c.Batch = 100
	}
	if c.WorkerID == "" {
		c.WorkerID = worker.Config{}.WithDefaults().ID
	}
	if c.Progress == 0 {
		c.Progress = 5 * time.Second
	}
	return c
}

// Validate says what is wrong with c (after WithDefaults).
func (c FillConfig) Validate() error {
	var errs []error
	if c.Tasks < 1 {
		errs = append(errs, fmt.Errorf("--tasks %d must be at least 1", c.Tasks))
	}
	if c.Batch < 1 || c.Batch > 1000 {
		errs = append(errs, fmt.Errorf("--batch %d must be within [1, 1000]", c.Batch))
	}
	if *c.CompletedShare < 0 || c.DLQShare < 0 || *c.CompletedShare+c.DLQShare > 1 {
		errs = append(errs, fmt.Errorf("--completed-share %v and --dlq-share %v must not be negative nor add up to more than 1", *c.CompletedShare, c.DLQShare))
	}
	if *c.Span < 0 || *c.Lag < 0 {
		errs = append(errs, errors.New("--span and --lag must not be negative"))
	}
	for _, t := range c.Types {
		if strings.TrimSpace(t) == "" {
			errs = append(errs, errors.New("--types: empty task type"))
		}
	}
	if c.Progress < 0 {
		errs = append(errs, errors.New("--progress must not be negative"))
	}
	return errors.Join(errs...)
}

// fillResult is what `taskflow-bench fill --json` prints.
type fillResult struct {
	Namespace    string  `json:"namespace"`
	Tasks        int     `json:"tasks"`
	Completed    int     `json:"completed"`
	DeadLettered int     `json:"dead_lettered"`
	Seconds      float64 `json:"seconds"`
	TasksPerSec  float64 `json:"tasks_per_sec"`
	// States is the per-state count the API reads (GET
	// /api/v1/queues/status) once the fill is done.
	States map[task.State]int64 `json:"states"`
	// Pending is the depth of the primary queues at the end.
	Pending int64 `json:"primary_queue"`
	// RedisUsedMemory is INFO memory's used_memory before and after;
	// their difference is the fill's share only on a server of its own.
	RedisUsedMemoryBefore int64 `json:"redis_used_memory_before"`
	RedisUsedMemoryAfter  int64 `json:"redis_used_memory_after"`
	// EventStreamBytes is MEMORY USAGE of the lifecycle event stream,
	// part of the above: capped by entries (EventStreamMaxLen), and the
	// fill's entries carry a batch of events each.
	EventStreamBytes int64 `json:"event_stream_bytes"`
}

func newFillCommand(m *Main) *cobra.Command {
	cfg, envErr := m.config()
	var (
		fc            FillConfig
		types         string
		completed     float64
		span, lag     time.Duration
		asJSON, clean bool
	)
	cmd := &cobra.Command{
		Use:   "fill",
		Short: "Fill a namespace with many tasks (default a million over 12 hours, 70% COMPLETED) through the store's own transitions",
		Long: `Writes --tasks tasks into an empty namespace of REDIS_URL (--redis-url)
and TASKFLOW_NAMESPACE (--namespace), through the store's transitions, so
every key and index is what a deployment that ran those tasks holds:
  - the tasks arrive in batches of --batch, evenly over --span (ending --lag
    before the fill started; --span 0: all at once);
  - the oldest --completed-share + --dlq-share of them are fetched (as a
    worker does) --lag/2 after they arrived and completed, or failed
    permanently into the DLQ, --lag after;
  - the rest stay PENDING in the queue, the newest tasks.
The namespace is left in place for the API to serve; --delete removes its
keys (SCAN + UNLINK of {namespace}:*) and writes nothing.`,
		Example: `  taskflow-bench fill --redis-url redis://127.0.0.1:6390/0 --namespace fill1m --tasks 1000000 --types noop,sleep --completed-share 0.7
  taskflow-bench fill --redis-url redis://127.0.0.1:6390/0 --namespace fill1m --delete`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if envErr != nil {
				return envErr
			}
			if cfg.RedisURL == "" {
				return &ExitError{Code: 2, Err: errors.New("fill: set REDIS_URL or --redis-url")}
			}
			// never the default namespace by accident: it may be a deployment's
			if !cmd.Flags().Changed("namespace") && !cfg.Given("TASKFLOW_NAMESPACE") {
				return &ExitError{Code: 2, Err: errors.New("fill: name the namespace to fill with --namespace (or TASKFLOW_NAMESPACE)")}
			}
			for _, t := range strings.Split(types, ",") {
				fc.Types = append(fc.Types, strings.TrimSpace(t))
			}
			fc.CompletedShare, fc.Span, fc.Lag = &completed, &span, &lag
			fc = fc.WithDefaults()
			if err := fc.Validate(); err != nil {
				return &ExitError{Code: 2, Err: fmt.Errorf("fill: %w", err)}
			}
			// the store's clock: the fill moves it along the span
			clk := clock.NewFake(time.Now())
			cfg.Engine.Store.Clock = clk
			ap, err := app.Open(cmd.Context(), cfg, nil)
			if err != nil {
				return err
			}
			defer ap.Close()
			if clean {
				n := cleanNamespace(context.WithoutCancel(cmd.Context()), ap.Redis, cfg.Namespace, ap.Store.Partitions())
				fmt.Fprintf(m.Stdout, "deleted %d keys of namespace %s\n", n, cfg.Namespace)
				return nil
			}
			res, err := runFill(cmd.Context(), m, ap.Store, clk, fc)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(m.Stdout).Encode(res)
			}
			fmt.Fprintf(m.Stdout, "namespace %s: %d tasks in %.1fs (%.0f tasks/s)\n", res.Namespace, res.Tasks, res.Seconds, res.TasksPerSec)
			fmt.Fprintf(m.Stdout, "states: %s; primary queue %d\n", formatStates(res.States), res.Pending)
			fmt.Fprintf(m.Stdout, "redis used_memory %s -> %s (event stream %s)\n",
				mib(res.RedisUsedMemoryBefore), mib(res.RedisUsedMemoryAfter), mib(res.EventStreamBytes))
			return nil
		},
	}
	f := cmd.Flags()
	cfg.BindFlags(f, "redis-url", "namespace")
	f.Lookup("namespace").Usage = "key namespace to fill; must hold no task (TASKFLOW_NAMESPACE)"
	f.IntVar(&fc.Tasks, "tasks", 1_000_000, "tasks to create")
	f.StringVar(&types, "types", "noop,sleep", "task types, given to the tasks in turn")
	f.Float64Var(&completed, "completed-share", 0.7, "share of the tasks that end COMPLETED (the oldest)")
	f.Float64Var(&fc.DLQShare, "dlq-share", 0, "share that end in the DLQ (a permanent failure), among the processed ones")
	f.DurationVar(&span, "span", 12*time.Hour, "time over which the tasks arrived (0: all at once)")
	f.DurationVar(&lag, "lag", 20*time.Millisecond, "time from a processed task's arrival to its end (fetched at half of it)")
	f.IntVar(&fc.Batch, "batch", 100, "tasks per enqueue, fetch and complete call (1..1000); the tasks of a call share their timestamps")
	f.StringVar(&fc.WorkerID, "worker-id", "", "worker named in the processed tasks (default: a worker's default id on this host, <host>-<pid>-<random>)")
	f.DurationVar(&fc.Progress, "progress", 5*time.Second, "interval of the progress lines (on stderr)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&clean, "delete", false, "delete the namespace's keys instead of filling it")
	return cmd
}

// runFill fills st's namespace as fc says, moving clk (st's clock).
func runFill(ctx context.Context, m *Main, st *store.Store, clk *clock.Fake, fc FillConfig) (*fillResult, error) {
	rdb := st.Client()
	before, err := st.QueueStatus(ctx)
	if err != nil {
		return nil, err
	}
	var held int64
	for _, n := range before.States {
		held += n
	}
	if held > 0 || before.Primary > 0 {
		return nil, fmt.Errorf("fill: namespace %s already holds %d tasks: fill writes only into an empty namespace (--delete empties it)", st.Namespace(), held)
	}
	res := &fillResult{Namespace: st.Namespace().Name(), Tasks: fc.Tasks, RedisUsedMemoryBefore: usedMemory(ctx, rdb)}

	// The timeline, in whole ms (the store's precision): batch i arrives at
	// arrive(i); a processed batch ends at arrive(i)+lag. Events run in time
	// order, so the fetch of a batch takes exactly that batch (FIFO).
	batches := (fc.Tasks + fc.Batch - 1) / fc.Batch
	processed := int(math.Round(float64(fc.Tasks) * (*fc.CompletedShare + fc.DLQShare)))
	deadEvery := 0.0 // dead-lettered per processed task
	if processed > 0 {
		deadEvery = fc.DLQShare / (*fc.CompletedShare + fc.DLQShare)
	}
	span, lag := *fc.Span, *fc.Lag
	wallStart := time.Now()
	origin := wallStart.Add(-lag - span).Truncate(time.Millisecond)
	arrive := func(i int) time.Time {
		if batches == 1 {
			return origin
		}
		return origin.Add(time.Duration(float64(span) * float64(i) / float64(batches-1))).Truncate(time.Millisecond)
	}
	workerID := fc.WorkerID
	leaseFor := max(30*time.Second, lag) // no lease expires during the fill
	reqs := make([]store.EnqueueRequest, fc.Batch)
	created, fetched, calls := 0, 0, 0
	nextProc := 0 // the next batch to process
	lastPrint := wallStart
	progress := func() {
		if fc.Progress <= 0 || time.Since(lastPrint) < fc.Progress {
			return
		}
		lastPrint = time.Now()
		el := time.Since(wallStart)
		fmt.Fprintf(m.Stderr, "fill: %s created %d/%d, completed %d, dead-lettered %d (%.0f tasks/s created)\n",
			el.Round(time.Second), created, fc.Tasks, res.Completed, res.DeadLettered, float64(created)/el.Seconds())
	}

	process := func(b int) error {
		n := min(fc.Batch, processed-fetched)
		if n <= 0 {
			return nil
		}
		clk.Set(arrive(b).Add(lag / 2))
		calls++
		ts, err := st.Fetch(ctx, store.FetchRequest{N: n, WorkerID: workerID, TokenPrefix: workerID + ":" + strconv.Itoa(calls), Lease: leaseFor})
		if err != nil {
			return fmt.Errorf("fill: fetch: %w", err)
		}
		// the ones the fetch did not return went to the DLQ (MAX_TASK_AGE)
		res.DeadLettered += n - len(ts)
		clk.Set(arrive(b).Add(lag))
		done := make([]store.Completion, 0, len(ts))
		for _, t := range ts {
			k := fetched
			fetched++
			if math.Floor(float64(k+1)*deadEvery) > math.Floor(float64(k)*deadEvery) {
				_, err := st.Fail(ctx, t.ID, t.Lease, store.Failure{ErrorType: "InvalidInputError", Message: "taskflow-bench fill: failed on purpose",
					Permanent: true, Attempt: 1, Worker: workerID})
				if err != nil {
					return fmt.Errorf("fill: fail %s: %w", t.ID, err)
				}
				res.DeadLettered++
				continue
			}
			done = append(done, store.Completion{ID: t.ID, Token: t.Lease, Result: json.RawMessage(`{}`)})
		}
		fetched += n - len(ts)
		errs, err := st.CompleteBatch(ctx, done)
		if err != nil {
			return fmt.Errorf("fill: complete: %w", err)
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("fill: complete: %w", err)
		}
		res.Completed += len(done)
		return nil
	}

	for b := 0; b < batches; b++ {
		// the batches due to end before this one arrives end first
		for nextProc < b && fetched < processed && !arrive(nextProc).Add(lag).After(arrive(b)) {
			if err := process(nextProc); err != nil {
				return nil, err
			}
			nextProc++
		}
		n := min(fc.Batch, fc.Tasks-created)
		for i := range n {
			k := created + i
			typ := fc.Types[k%len(fc.Types)]
			reqs[i] = store.EnqueueRequest{Type: typ}
			if typ == "sleep" {
				reqs[i].Params = json.RawMessage(`{"duration_ms":10}`)
			}
		}
		clk.Set(arrive(b))
		if _, err := st.EnqueueBatch(ctx, reqs[:n]); err != nil {
			return nil, fmt.Errorf("fill: enqueue: %w", err)
		}
		created += n
		progress()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	// the batches that end after the last one arrived
	for ; fetched < processed; nextProc++ {
		if err := process(nextProc); err != nil {
			return nil, err
		}
		progress()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	elapsed := time.Since(wallStart)
	res.Seconds = math.Round(elapsed.Seconds()*10) / 10
	res.TasksPerSec = math.Round(float64(fc.Tasks) / elapsed.Seconds())
	after, err := st.QueueStatus(ctx)
	if err != nil {
		return nil, err
	}
	res.States, res.Pending = after.States, after.Primary
	res.RedisUsedMemoryAfter = usedMemory(ctx, rdb)
	for _, k := range st.EventStreamKeys() { // one stream per partition
		n, _ := rdb.MemoryUsage(ctx, k, 0).Result()
		res.EventStreamBytes += n
	}
	fmt.Fprintf(m.Stderr, "fill: done in %s\n", elapsed.Round(100*time.Millisecond))
	return res, nil
}

// usedMemory is INFO memory's used_memory (0 when the server does not say).
func usedMemory(ctx context.Context, rdb redis.UniversalClient) int64 {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func formatStates(s map[task.State]int64) string {
	var parts []string
	for _, st := range task.States {
		if s[st] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st, s[st]))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
