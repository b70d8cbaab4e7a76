package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/tasktypes/builtin"
	"github.com/taskflow/taskflow/task"
)

// benchResult is what `taskflow-bench bench --json` prints.
type benchResult struct {
	Tasks       int `json:"tasks"`
	Concurrency int `json:"concurrency"`
	Prefetch    int `json:"prefetch"`
	FetchBatch  int `json:"fetch_batch"`
	AckBatch    int `json:"ack_batch"`
	// EnqueueSinglePerSec: one Enqueue call per task from --concurrency
	// goroutines.
	EnqueueSinglePerSec float64 `json:"enqueue_single_per_sec"`
	// EnqueuePerSec: EnqueueBatch of --batch tasks per call.
	EnqueuePerSec float64 `json:"enqueue_per_sec"`
	// ProcessedPerSec: a backlog of 2×tasks no-op tasks drained by one
	// worker process with --concurrency handlers.
	ProcessedPerSec float64 `json:"processed_per_sec"`
	// ProcessedWithProducerPerSec: tasks enqueued (batches of 100) while the
	// worker processes them, counted until the last is completed.
	ProcessedWithProducerPerSec float64 `json:"processed_with_producer_per_sec"`
	// ProbePerSec: the probe (probe/*.lua: pop, lease with a fencing token,
	// complete guarded by it — no history, events, indexes, priorities or
	// task data) draining the same backlog (2×tasks) with 4 loops of
	// --fetch-batch; DrainVsProbe and ProducerVsProbe are the engine's
	// rates over it, taken in the same run.
	ProbePerSec float64 `json:"probe_per_sec,omitempty"`
	// With --public: the same work through the public Go API (package
	// taskflow): EnqueueClientSinglePerSec and EnqueueClientPerSec are
	// Client.Enqueue (one per call, from --concurrency goroutines) and
	// Client.EnqueueMany (--batch per call, 4 goroutines);
	// ProcessedPublicPerSec a backlog of 2×tasks drained by a
	// taskflow.Worker running a user-defined no-op handler, between two
	// drains of equal backlogs by the engine serving the built-in noop
	// handler (ProcessedBuiltinAdjacentPerSec, their mean);
	// PublicVsBuiltin is the public drain's share of that mean.
	EnqueueClientSinglePerSec      float64 `json:"enqueue_client_single_per_sec,omitempty"`
	EnqueueClientPerSec            float64 `json:"enqueue_client_per_sec,omitempty"`
	ProcessedPublicPerSec          float64 `json:"processed_public_per_sec,omitempty"`
	ProcessedBuiltinAdjacentPerSec float64 `json:"processed_builtin_adjacent_per_sec,omitempty"`
	// EnqueueStoreInterleavedPerSec and EnqueueClientInterleavedPerSec:
	// EnqueueBatch and Client.EnqueueMany of --batch, 4 goroutines, in 4
	// alternating rounds of max(--batch, tasks/2) tasks each.
	EnqueueStoreInterleavedPerSec  float64 `json:"enqueue_store_interleaved_per_sec,omitempty"`
	EnqueueClientInterleavedPerSec float64 `json:"enqueue_client_interleaved_per_sec,omitempty"`
	PublicVsBuiltin                float64 `json:"public_vs_builtin,omitempty"`
	DrainVsProbe                   float64 `json:"drain_vs_probe,omitempty"`
	ProducerVsProbe                float64 `json:"producer_vs_probe,omitempty"`
	// StartP50Ms / StartP99Ms: enqueue call → handler start at a steady
	// --rate tasks/s for --latency-duration.
	StartP50Ms float64 `json:"start_p50_ms"`
	StartP99Ms float64 `json:"start_p99_ms"`
	StartMaxMs float64 `json:"start_max_ms"`
	LatencyN   int     `json:"latency_samples"`
	// RedisUsecPerTask is the Redis main thread's CPU (INFO cpu; every
	// client of the server counts, so use a server of its own) per task in
	// each phase: where the time goes.
	RedisUsecPerTask map[string]float64 `json:"redis_usec_per_task"`
	// CommandsPerTask breaks each phase's Redis time down by command (INFO
	// commandstats deltas; the commands a script runs are counted under
	// their own names as well as the script's EVALSHA), the costliest first.
	CommandsPerTask map[string][]commandCost `json:"commands_per_task"`
	// RedisNode is the server whose CPU is measured: on a Redis Cluster the
	// master of the namespace's slot, where all its keys live; with several
	// partitions the masters holding them, joined with ",", and
	// RedisUsecPerTask and CommandsPerTask add them up.
	RedisNode string `json:"redis_node"`
	// Partitions is --partitions; PartitionNodes the master of each
	// partition (a cluster's), in partition order.
	Partitions     int      `json:"partitions"`
	PartitionNodes []string `json:"partition_nodes,omitempty"`
	// RedisUsecPerTaskByNode is RedisUsecPerTask per measured master:
	// node → phase → µs per task (what each shard spends).
	RedisUsecPerTaskByNode map[string]map[string]float64 `json:"redis_usec_per_task_by_node,omitempty"`
}

// commandCost is one command's share of a phase, per task.
type commandCost struct {
	Command string  `json:"command"`
	Calls   float64 `json:"calls"`
	Usec    float64 `json:"usec"`
}

type benchOpts struct {
	redisURL    string
	tasks       int
	concurrency int
	batch       int
	rate        int
	latencyDur  time.Duration
	jsonOut     bool
	only        string
	cpuProfile  string
	prefetch    int
	fetchBatch  int
	ackBatch    int
	partitions  int
	public      bool
}

func newBenchCommand(m *Main) *cobra.Command {
	{
		var o benchOpts
		cfg, _ := m.config() // REDIS_URL only: plain text
		cmd := &cobra.Command{
			Use:   "bench",
			Short: "Measure enqueue rate, processing rate and start latency against a Redis",
			Long: `Runs against REDIS_URL (or --redis-url) in a namespace of its own
(taskflow-bench-<random>, deleted afterwards; nothing else is touched):
  1. enqueue --tasks tasks one call each (from --concurrency goroutines)
  2. enqueue --tasks tasks in batches of --batch
  3. drain that backlog (2×tasks no-op tasks) with one worker of --concurrency
  4. a producer enqueues --tasks tasks while the worker processes them
  5. enqueue→start latency at a steady --rate tasks/s for --latency-duration
Leases, FIFO, counters and lifecycle events are all on. Before the drain
(and with --only drain, producer or probe) a probe drains the same backlog
with the least a durable lifecycle does (pop, a lease with a fencing token,
a completion guarded by it): drain and producer are reported as shares of
it, taken in the same run.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				o.redisURL = cfg.RedisURL
				if o.redisURL == "" {
					return &ExitError{Code: 2, Err: errors.New("bench: set REDIS_URL or --redis-url")}
				}
				if o.partitions < 1 || o.partitions > store.MaxPartitions {
					return &ExitError{Code: 2, Err: fmt.Errorf("bench: --partitions must be within [1, %d]", store.MaxPartitions)}
				}
				if o.tasks < 1 || o.concurrency < 1 || o.batch < 1 || o.batch > 2000 || o.rate < 1 {
					return &ExitError{Code: 2, Err: errors.New("bench: --tasks, --concurrency, --rate must be >= 1 and --batch within [1, 2000]")}
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
				res, err := runBench(cmd.Context(), m, o)
				if err != nil {
					return err
				}
				if o.jsonOut {
					return json.NewEncoder(m.Stdout).Encode(res)
				}
				fmt.Fprintf(m.Stdout, "tasks %d, concurrency %d\n", res.Tasks, res.Concurrency)
				fmt.Fprintf(m.Stdout, "enqueue (single):        %10.0f tasks/s\n", res.EnqueueSinglePerSec)
				fmt.Fprintf(m.Stdout, "enqueue (batched):       %10.0f tasks/s\n", res.EnqueuePerSec)
				fmt.Fprintf(m.Stdout, "processed (backlog):     %10.0f tasks/s\n", res.ProcessedPerSec)
				fmt.Fprintf(m.Stdout, "processed (w/ producer): %10.0f tasks/s\n", res.ProcessedWithProducerPerSec)
				if res.ProbePerSec > 0 {
					fmt.Fprintf(m.Stdout, "probe (bare lifecycle):  %10.0f tasks/s; drain %.0f %% of it, with producer %.0f %%\n",
						res.ProbePerSec, 100*res.DrainVsProbe, 100*res.ProducerVsProbe)
				}
				fmt.Fprintf(m.Stdout, "start latency p50 %.3f ms, p99 %.3f ms, max %.3f ms (%d samples)\n", res.StartP50Ms, res.StartP99Ms, res.StartMaxMs, res.LatencyN)
				printCosts(m.Stdout, res)
				return nil
			},
		}
		f := cmd.Flags()
		cfg.BindFlags(f, "redis-url")
		f.IntVar(&o.tasks, "tasks", 100000, "tasks per phase")
		f.IntVar(&o.concurrency, "concurrency", 50, "worker handler goroutines (and single-enqueue goroutines)")
		f.IntVar(&o.batch, "batch", 500, "tasks per batched enqueue call")
		f.IntVar(&o.rate, "rate", 1000, "tasks/s of the latency phase")
		f.DurationVar(&o.latencyDur, "latency-duration", 5*time.Second, "length of the latency phase")
		f.BoolVar(&o.jsonOut, "json", false, "print one JSON object")
		f.IntVar(&o.prefetch, "prefetch", 0, "worker.Config.Prefetch: tasks fetched ahead of free handlers")
		f.IntVar(&o.fetchBatch, "fetch-batch", 64, "worker.Config.FetchBatch: most tasks per fetch script call")
		f.IntVar(&o.ackBatch, "ack-batch", 64, "worker.Config.AckBatch: most completions per script call")
		f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the run to this file")
		f.IntVar(&o.partitions, "partitions", 1, "TASKFLOW_PARTITIONS of the bench's deployment (on a cluster its namespace is chosen so the partitions sit on as many masters as they can)")
		f.StringVar(&o.only, "only", "", "run one phase: enqueue, drain, producer, probe, latency or public (default all; drain and producer run the probe too)")
		f.BoolVar(&o.public, "public", false, "also measure the public Go API: Client.Enqueue/EnqueueMany and a taskflow.Worker draining with a user-defined no-op handler, against the built-in drain")
		return cmd
	}
}

func runBench(ctx context.Context, m *Main, o benchOpts) (*benchResult, error) {
	rdb, err := redisconn.Open(ctx, o.redisURL, redisconn.Options{PoolSize: max(64, o.concurrency+16)})
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	defer rdb.Close()
	ns, nodes, err := benchNamespace(ctx, rdb, o.partitions)
	if err != nil {
		return nil, err
	}
	defer cleanNamespace(context.WithoutCancel(ctx), rdb, ns, o.partitions)
	st, err := store.New(rdb, store.Config{Namespace: ns, Partitions: o.partitions})
	if err != nil {
		return nil, err
	}
	res := &benchResult{Tasks: o.tasks, Concurrency: o.concurrency, Prefetch: o.prefetch, FetchBatch: o.fetchBatch, AckBatch: o.ackBatch,
		RedisUsecPerTask: map[string]float64{}, CommandsPerTask: map[string][]commandCost{},
		Partitions: o.partitions, RedisUsecPerTaskByNode: map[string]map[string]float64{}}
	var addrs []string
	for _, n := range nodes.masters {
		addrs = append(addrs, n.addr)
		res.RedisUsecPerTaskByNode[n.addr] = map[string]float64{}
	}
	res.RedisNode = strings.Join(addrs, ",")
	if o.partitions > 1 {
		res.PartitionNodes = nodes.ofPartition
	}
	usecs := func() []int64 {
		out := make([]int64, len(nodes.masters))
		for i, n := range nodes.masters {
			out[i] = redisUsec(ctx, n.cmd)
		}
		return out
	}
	stats := func() map[string][2]int64 {
		sum := map[string][2]int64{}
		for _, n := range nodes.masters {
			for k, v := range commandStats(ctx, n.cmd) {
				s := sum[k]
				sum[k] = [2]int64{s[0] + v[0], s[1] + v[1]}
			}
		}
		return sum
	}
	mark, marks := usecs(), stats()
	account := func(phase string, tasks int) {
		now, nows := usecs(), stats()
		var total int64
		for i, n := range nodes.masters {
			d := now[i] - mark[i]
			total += d
			res.RedisUsecPerTaskByNode[n.addr][phase] = math.Round(float64(d)/float64(tasks)*100) / 100
		}
		res.RedisUsecPerTask[phase] = math.Round(float64(total)/float64(tasks)*100) / 100
		res.CommandsPerTask[phase] = costs(marks, nows, tasks)
		mark, marks = now, nows
	}
	run := func(p string) bool { return o.only == "" || o.only == p }

	if run("enqueue") || run("drain") {
		// 1. single enqueues
		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		errc := make(chan error, o.concurrency)
		for g := 0; g < o.concurrency; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(o.tasks) {
					if _, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "noop"}); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := firstErr(errc); err != nil {
			return nil, err
		}
		res.EnqueueSinglePerSec = float64(o.tasks) / time.Since(start).Seconds()
		account("enqueue_single", o.tasks)

		// 2. batched enqueues from 4 goroutines
		start = time.Now()
		var chunks atomic.Int64
		nChunks := int64((o.tasks + o.batch - 1) / o.batch)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				reqs := make([]store.EnqueueRequest, o.batch)
				for i := range reqs {
					reqs[i] = store.EnqueueRequest{Type: "noop"}
				}
				for c := chunks.Add(1); c <= nChunks; c = chunks.Add(1) {
					n := min(o.batch, o.tasks-int(c-1)*o.batch)
					if _, err := st.EnqueueBatch(ctx, reqs[:n]); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := firstErr(errc); err != nil {
			return nil, err
		}
		res.EnqueuePerSec = float64(o.tasks) / time.Since(start).Seconds()
		account("enqueue_batched", o.tasks)
	}

	if run("drain") || run("producer") || run("probe") {
		// the probe, on the namespace's shard, with the drain's backlog
		pps, err := runProbe(ctx, rdb, keyspace.MustParse(ns).Prefix(), 2*o.tasks, o.fetchBatch)
		if err != nil {
			return nil, err
		}
		res.ProbePerSec = pps
		account("probe", 2*o.tasks)
	}

	if run("drain") {
		// 3. drain the backlog
		backlog := int64(2 * o.tasks)
		w, stop, err := benchWorker(ctx, st, o, "noop", nil)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		waitCompleted(w, backlog)
		res.ProcessedPerSec = float64(backlog) / time.Since(start).Seconds()
		stop()
		account("drain", int(backlog))
	}

	if run("producer") {
		// 4. a producer alongside the worker
		w, stop, err := benchWorker(ctx, st, o, "noop", nil)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		errc := make(chan error, 1)
		go func() {
			reqs := make([]store.EnqueueRequest, 100)
			for i := range reqs {
				reqs[i] = store.EnqueueRequest{Type: "noop"}
			}
			for sent := 0; sent < o.tasks; sent += 100 {
				n := min(100, o.tasks-sent)
				if _, err := st.EnqueueBatch(ctx, reqs[:n]); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		if err := <-errc; err != nil {
			stop()
			return nil, err
		}
		waitCompleted(w, int64(o.tasks))
		res.ProcessedWithProducerPerSec = float64(o.tasks) / time.Since(start).Seconds()
		stop()
		account("producer", o.tasks)
	}

	if o.public || o.only == "public" {
		if err := benchPublic(ctx, o, ns, st, res, account); err != nil {
			return nil, err
		}
	}

	if res.ProbePerSec > 0 {
		res.DrainVsProbe = math.Round(res.ProcessedPerSec/res.ProbePerSec*1000) / 1000
		res.ProducerVsProbe = math.Round(res.ProcessedWithProducerPerSec/res.ProbePerSec*1000) / 1000
	}

	if run("latency") {
		// 5. steady rate, start latency
		var mu sync.Mutex
		sent := map[string]time.Time{}
		lat := make([]time.Duration, 0, int(float64(o.rate)*o.latencyDur.Seconds())+1)
		onStart := func(id string) {
			now := time.Now()
			mu.Lock()
			if t0, ok := sent[id]; ok {
				lat = append(lat, now.Sub(t0))
			}
			mu.Unlock()
		}
		w, stop, err := benchWorker(ctx, st, o, "noop", onStart)
		if err != nil {
			return nil, err
		}
		_ = w
		total := int(float64(o.rate) * o.latencyDur.Seconds())
		interval := time.Second / time.Duration(o.rate)
		begin := time.Now()
		for i := 0; i < total; i++ {
			// pace by absolute schedule so the rate holds on average
			if d := time.Until(begin.Add(time.Duration(i) * interval)); d > 0 {
				time.Sleep(d)
			}
			id := "lat-" + strconv.Itoa(i)
			mu.Lock()
			sent[id] = time.Now()
			mu.Unlock()
			if _, err := st.Enqueue(ctx, store.EnqueueRequest{ID: id, Type: "noop"}); err != nil {
				stop()
				return nil, err
			}
		}
		waitCompleted(w, int64(total))
		stop()
		slices.Sort(lat)
		res.LatencyN = len(lat)
		if len(lat) > 0 {
			pct := func(p float64) float64 {
				i := int(math.Ceil(p*float64(len(lat)))) - 1
				return float64(lat[max(0, i)]) / float64(time.Millisecond)
			}
			res.StartP50Ms, res.StartP99Ms = pct(0.50), pct(0.99)
			res.StartMaxMs = float64(lat[len(lat)-1]) / float64(time.Millisecond)
		}
	}
	return res, nil
}

// benchWorker starts the engine's worker serving typ with the built-in
// noop handler function; onStart (if set) is called with each task id when
// its handler starts.
func benchWorker(ctx context.Context, st *store.Store, o benchOpts, typ string, onStart func(string)) (*worker.Worker, func(), error) {
	mux := taskflow.NewMux()
	mux.HandleFunc(typ, func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		if onStart != nil {
			onStart(t.ID)
		}
		return builtin.Noop(ctx, t)
	})
	w, err := worker.New(st, mux, worker.Config{Concurrency: o.concurrency, Prefetch: o.prefetch, FetchBatch: o.fetchBatch, AckBatch: o.ackBatch})
	if err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	return w, func() { cancel(); <-done }, nil
}

// waitCompleted waits until the worker has acknowledged n completions.
func waitCompleted(w interface{ Stats() worker.Stats }, n int64) {
	for w.Stats().Completed < n {
		time.Sleep(200 * time.Microsecond)
	}
}

func firstErr(c chan error) error {
	select {
	case err := <-c:
		return err
	default:
		return nil
	}
}

// redisUsec is the Redis server's CPU time so far (INFO cpu: user + sys
// of the main thread), in microseconds; 0 when the server does not say.
func redisUsec(ctx context.Context, rdb redis.Cmdable) int64 {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user_main_thread" || k == "used_cpu_sys_main_thread") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return int64(total * 1e6)
}

// cleanNamespace deletes the keys of namespace ns of the given number of
// partitions (and only those) and returns how many it deleted. Each
// pattern ({ns}:*, {ns:p0}:* …) carries one hash tag, so on a Redis
// Cluster go-redis sends its SCAN to the master of that slot, where all of
// them are (TestFillCluster checks it).
func cleanNamespace(ctx context.Context, rdb redis.UniversalClient, ns string, partitions int) int64 {
	name := keyspace.MustParse(ns)
	patterns := []string{name.Pattern()}
	if partitions > 1 {
		for _, p := range name.PartitionPrefixes(partitions) {
			patterns = append(patterns, p+"*")
		}
	}
	var n int64
	for _, pattern := range patterns {
		iter := rdb.Scan(ctx, 0, pattern, 5000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == 1000 {
				n += rdb.Unlink(ctx, batch...).Val()
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			n += rdb.Unlink(ctx, batch...).Val()
		}
	}
	return n
}

// node is one Redis server the bench measures.
type node struct {
	addr string
	cmd  redis.Cmdable
}

// benchNodes are the servers holding a bench namespace: the masters, each
// once, and the master of each partition.
type benchNodes struct {
	masters     []node
	ofPartition []string
}

// benchNamespace picks the bench's namespace (taskflow-bench-<random>) and
// finds the servers holding it. On a Redis Cluster with several
// partitions it checks that they sit on as many masters as they can
// (keyspace.PartitionPrefixes aims each at its own range of slots, which
// matches the masters of an evenly split cluster; on another split it
// draws other namespaces, up to 200, for the best spread).
func benchNamespace(ctx context.Context, rdb redis.UniversalClient, partitions int) (string, benchNodes, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		ns := "taskflow-bench-" + uuid.NewString()[:8]
		addr := ""
		if c, ok := rdb.(*redis.Client); ok {
			addr = c.Options().Addr
		}
		return ns, benchNodes{masters: []node{{addr, rdb}}, ofPartition: []string{addr}}, nil
	}
	var count atomic.Int64 // ForEachMaster calls at once
	if err := cc.ForEachMaster(ctx, func(context.Context, *redis.Client) error { count.Add(1); return nil }); err != nil {
		return "", benchNodes{}, err
	}
	var best benchNodes
	bestNS := ""
	for try := 0; try < 200; try++ {
		ns := "taskflow-bench-" + uuid.NewString()[:8]
		name := keyspace.MustParse(ns)
		prefixes := name.PartitionPrefixes(partitions)
		var bn benchNodes
		seen := map[string]bool{}
		for _, p := range prefixes {
			m, err := cc.MasterForKey(ctx, p+"x")
			if err != nil {
				return "", benchNodes{}, err
			}
			addr := m.Options().Addr
			bn.ofPartition = append(bn.ofPartition, addr)
			if !seen[addr] {
				seen[addr] = true
				bn.masters = append(bn.masters, node{addr, m})
			}
		}
		if bestNS == "" || len(bn.masters) > len(best.masters) {
			best, bestNS = bn, ns
		}
		if len(best.masters) >= min(int(count.Load()), len(prefixes)) {
			break
		}
	}
	if partitions > 1 { // the global keys' master too (list of live workers)
		m, err := cc.MasterForKey(ctx, keyspace.MustParse(bestNS).Prefix()+"x")
		if err != nil {
			return "", benchNodes{}, err
		}
		found := false
		for _, n := range best.masters {
			found = found || n.addr == m.Options().Addr
		}
		if !found {
			best.masters = append(best.masters, node{m.Options().Addr, m})
		}
	}
	return bestNS, best, nil
}

// commandStats reads INFO commandstats: command → (calls, usec).
func commandStats(ctx context.Context, rdb redis.Cmdable) map[string][2]int64 {
	out := map[string][2]int64{}
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return out
	}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var calls, usec int64
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = [2]int64{calls, usec}
	}
	return out
}

// costs is the per-task difference between two commandstats readings, the
// costliest command first; commands under 1 % of the phase are left out.
func costs(before, after map[string][2]int64, tasks int) []commandCost {
	var out []commandCost
	var total int64
	for name, a := range after {
		d := a[1] - before[name][1]
		if d > 0 && name != "info" {
			total += d
		}
	}
	for name, a := range after {
		b := before[name]
		calls, usec := a[0]-b[0], a[1]-b[1]
		if calls <= 0 || name == "info" || usec*100 < total {
			continue
		}
		out = append(out, commandCost{Command: name,
			Calls: math.Round(float64(calls)/float64(tasks)*1000) / 1000,
			Usec:  math.Round(float64(usec)/float64(tasks)*100) / 100})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Usec > out[j].Usec })
	return out
}

// printCosts writes each phase's Redis CPU per task and its costliest
// commands.
func printCosts(w io.Writer, res *benchResult) {
	phases := make([]string, 0, len(res.RedisUsecPerTask))
	for p := range res.RedisUsecPerTask {
		phases = append(phases, p)
	}
	sort.Strings(phases)
	fmt.Fprintf(w, "redis CPU per task on %s (main thread, µs) and its costliest commands (calls/task, µs/task):\n", res.RedisNode)
	if len(res.RedisUsecPerTaskByNode) > 1 {
		defer func() {
			fmt.Fprintf(w, "per master (partitions on %s):\n", strings.Join(res.PartitionNodes, ","))
			nodes := make([]string, 0, len(res.RedisUsecPerTaskByNode))
			for n := range res.RedisUsecPerTaskByNode {
				nodes = append(nodes, n)
			}
			sort.Strings(nodes)
			for _, n := range nodes {
				fmt.Fprintf(w, "  %s:", n)
				for _, p := range phases {
					fmt.Fprintf(w, " %s %.2f", p, res.RedisUsecPerTaskByNode[n][p])
				}
				fmt.Fprintln(w)
			}
		}()
	}
	for _, p := range phases {
		fmt.Fprintf(w, "  %-10s %6.2f µs:", p, res.RedisUsecPerTask[p])
		for i, c := range res.CommandsPerTask[p] {
			if i == 6 {
				break
			}
			fmt.Fprintf(w, " %s %.2f×/%.2f", c.Command, c.Calls, c.Usec)
		}
		fmt.Fprintln(w)
	}
}
