// Command rankd runs one plan of taskflow's plan engine for the
// request on stdin and prints the candidates as one JSON line, with the
// flags, input, output and exit codes of the reference engine rankd. See
// docs/plan.md.
//
//	echo '{"user_id":1}' | rankd --plan_name complex_dag
//	echo '{"user_id":1}' | rankd --plan ../shared/reference/rankd/plans/reels_plan_a.plan.json
//	rankd --plan_name complex_dag --plan_dir internal/plan/testdata/plans --bench 1000 --bench_concurrency 4
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/ir"
	"github.com/taskflow/taskflow/internal/plan/registry"
	"github.com/taskflow/taskflow/internal/platform/config"
	"github.com/taskflow/taskflow/internal/platform/version"
	builtin "github.com/taskflow/taskflow/plans"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

type options struct {
	plan, planName, planDir       string
	deadlineMS, nodeTimeoutMS     int
	bench, benchConc, benchWarmup int
	benchUserID                   int64
	trace, asyncScheduler         bool
	env, registryDir              string
	redisURL, keyPrefix           string
	cpuPolicy                     string
	inlineMaxRows, maxInflight    int
	printManifest                 bool
	readDeadColumns               bool
	redisConns, flushDelayUS      int
}

// flagDef is one flag: its name in the binaries' convention (kebab-case)
// and, for the flags the reference rankd has, its snake_case spelling, kept
// as an alias so the reference's command lines run unchanged.
type flagDef struct{ name, alias string }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	var o options
	// REDIS_URL and RANKD_KEY_PREFIX, as the configuration table reads
	// them (plain text: nothing to refuse), are the defaults of
	// --redis-url and --key-prefix
	cfg, _ := config.Load(getenv)
	fs := flag.NewFlagSet("rankd", flag.ContinueOnError)
	var defs []flagDef
	def := func(name, alias string) string { defs = append(defs, flagDef{name, alias}); return name }
	fs.StringVar(&o.plan, def("plan", ""), "", "path of a plan JSON file")
	fs.StringVar(&o.planName, def("plan-name", "plan_name"), "", "name of a plan: <plan-dir>/<name>.plan.json, or one of the plans built into rankd")
	fs.StringVar(&o.planDir, def("plan-dir", "plan_dir"), "", "folder of named plans (default: the plans built into rankd, the repository's plans/)")
	fs.BoolVar(&o.asyncScheduler, def("async-scheduler", "async_scheduler"), true, "accepted for compatibility: the engine is always asynchronous")
	fs.IntVar(&o.deadlineMS, def("deadline-ms", "deadline_ms"), 0, "request deadline in ms (0: none)")
	fs.IntVar(&o.nodeTimeoutMS, def("node-timeout-ms", "node_timeout_ms"), 0, "per-node timeout in ms (0: none)")
	fs.IntVar(&o.bench, def("bench", ""), 0, "run the plan N times and print latency/throughput JSON")
	fs.IntVar(&o.benchConc, def("bench-concurrency", "bench_concurrency"), 1, "plans in flight at once during --bench")
	fs.IntVar(&o.benchWarmup, def("bench-warmup", "bench_warmup"), 50, "untimed runs before --bench measures")
	fs.Int64Var(&o.benchUserID, def("bench-user-id", "bench_user_id"), 1, "user_id of the --bench request")
	fs.BoolVar(&o.trace, def("trace", ""), false, "print a per-node timeline to stderr")
	fs.StringVar(&o.env, def("env", ""), "dev", "endpoint environment: dev, test or prod")
	fs.StringVar(&o.registryDir, def("registry-dir", "registry_dir"), "", "registry folder (default: the registry built into rankd)")
	fs.StringVar(&o.redisURL, def("redis-url", "redis_url"), cfg.RedisURL, "Redis URL for every redis endpoint (default $REDIS_URL; empty: the registry's address)")
	fs.StringVar(&o.keyPrefix, def("key-prefix", "key_prefix"), cfg.Plans.KeyPrefix, "prefix of every Redis key the plan reads (default $RANKD_KEY_PREFIX)")
	fs.StringVar(&o.cpuPolicy, def("cpu-policy", "cpu_policy"), plan.PolicyAuto, "where CPU nodes run: auto, pool or inline")
	fs.IntVar(&o.inlineMaxRows, def("inline-max-rows", "inline_max_rows"), plan.DefaultInlineMaxRows, "auto policy: inputs up to this many rows run inline (-1: never)")
	fs.IntVar(&o.maxInflight, def("max-inflight", "max_inflight"), 0, "Redis commands in flight per endpoint (0: the registry's policy)")
	fs.BoolVar(&o.readDeadColumns, def("read-dead-columns", "read_dead_columns"), false, "read every row's country even where no output or expression can see it (the reference's reads)")
	fs.IntVar(&o.redisConns, def("redis-conns", "redis_conns"), 1, "connections per Redis endpoint: 1, 2, 4 ... 256 (commands issued together share a write)")
	fs.IntVar(&o.flushDelayUS, def("flush-delay-us", "flush_delay_us"), 0, "µs a Redis connection may wait after a write to gather the next one (0: write at once)")
	fs.BoolVar(&o.printManifest, def("print-task-manifest", ""), false, "print the op catalog as registry/tasks.toml and exit")
	var showVersion bool
	fs.BoolVar(&showVersion, def("version", ""), false, "print the version and exit")
	for _, d := range defs {
		if d.alias != "" {
			f := fs.Lookup(d.name)
			fs.Var(f.Value, d.alias, "alias of --"+d.name)
		}
	}
	usageOut := stderr
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			usageOut = stdout // asked for: the help is the answer
		}
	}
	fs.SetOutput(usageOut)
	fs.Usage = func() { usage(usageOut, fs, defs) }
	// Every error exits 1, as the reference rankd's do (docs/plan.md), a
	// bad flag too (Go's flag package would say 2); the flag package has
	// printed the message and the usage.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "Error: unexpected argument %q (rankd reads the request on stdin; rankd --help)\n", fs.Arg(0))
		return 1
	}
	if showVersion {
		fmt.Fprintln(stdout, "rankd", version.Read())
		return 0
	}
	if o.printManifest {
		fmt.Fprint(stdout, plan.NewCatalog().Manifest())
		return 0
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "Error: "+errMessage(err))
		return 1
	}
	var reg *registry.Registry
	var err error
	if o.registryDir != "" {
		reg, err = registry.Load(os.DirFS(o.registryDir), o.env)
	} else {
		reg, err = registry.Default(o.env)
	}
	if err != nil {
		return fail(err)
	}
	if o.planName != "" {
		if !reg.Validation.ValidPlanName(o.planName) {
			return fail(fmt.Errorf("Invalid plan_name '%s'. Plan names must match [A-Za-z0-9_]+ only.", o.planName))
		}
		if o.plan != "" {
			return fail(errors.New("Cannot specify both --plan and --plan_name"))
		}
	} else if o.plan == "" && o.bench == 0 {
		return fail(errors.New("no plan: give --plan PATH or --plan-name NAME (rankd --help lists the built-in plans)"))
	}
	if o.deadlineMS < 0 || o.nodeTimeoutMS < 0 || o.bench < 0 || o.benchConc < 1 || o.flushDelayUS < 0 {
		return fail(errors.New("--deadline-ms, --node-timeout-ms, --bench and --flush-delay-us must not be negative; --bench-concurrency must be at least 1"))
	}
	if o.redisConns < 1 || o.redisConns > 256 || o.redisConns&(o.redisConns-1) != 0 {
		return fail(fmt.Errorf("--redis-conns %d: must be a power of two from 1 to 256", o.redisConns))
	}
	eng, err := plan.New(plan.Config{Registry: reg, RedisURL: o.redisURL, KeyPrefix: o.keyPrefix,
		CPUPolicy: o.cpuPolicy, InlineMaxRows: o.inlineMaxRows, MaxInflight: o.maxInflight, ReadDeadColumns: o.readDeadColumns,
		RedisConns: o.redisConns, FlushDelay: time.Duration(o.flushDelayUS) * time.Microsecond})
	if err != nil {
		return fail(err)
	}
	defer eng.Close()
	opts := plan.RunOptions{Deadline: time.Duration(o.deadlineMS) * time.Millisecond,
		NodeTimeout: time.Duration(o.nodeTimeoutMS) * time.Millisecond, Trace: o.trace}
	if o.bench > 0 {
		return bench(ctx, eng, o, opts, stdout, stderr)
	}

	input, err := io.ReadAll(stdin)
	if err != nil {
		return fail(err)
	}
	req, err := plan.ParseRequest(input, reg)
	if err != nil {
		var re *plan.RequestError
		if errors.As(err, &re) {
			line, _ := json.Marshal(struct {
				Error  string `json:"error"`
				Detail string `json:"detail"`
			}{re.Kind, re.Detail})
			fmt.Fprintln(stdout, string(line))
			return 1
		}
		return fail(err)
	}
	if req.RequestID == "" {
		req.RequestID = uuid.NewString()
	}
	engineID := uuid.NewString()
	c, err := loadPlan(eng, o)
	if err != nil {
		return fail(err)
	}
	traced := opts
	traced.Trace = true // to tell a plan that read nothing
	res, err := eng.Run(ctx, c, req, traced)
	if o.trace && res != nil {
		printTrace(stderr, c.Name, res, dataSource(eng, c, o))
	}
	if err != nil {
		return fail(err)
	}
	if noData(res) && dataAbsent(ctx, eng, c, o) {
		// otherwise stderr stays the reference rankd's (errors only): a
		// user without follows reads nothing too, and that is an answer
		dataNote(stderr, eng, c, o)
		warnIfNoData(stderr, res)
	}
	line := plan.AppendOutput(nil, req.RequestID, engineID, res.Outputs, reg)
	line = append(line, '\n')
	if _, err := stdout.Write(line); err != nil {
		return 1
	}
	return 0
}

// loadPlan compiles the plan o names: --plan's file, or --plan-name's from
// --plan-dir, or from the plans built into rankd when no folder is given.
// An unknown name is an error that lists the plans there are.
func loadPlan(eng *plan.Engine, o options) (*plan.Compiled, error) {
	if o.plan != "" {
		return eng.Load(o.plan)
	}
	fsys, where := builtin.FS(), "built into rankd"
	if o.planDir != "" {
		fsys, where = os.DirFS(o.planDir), "in "+o.planDir
	}
	file := o.planName + builtin.Suffix
	data, err := fs.ReadFile(fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		names, lerr := builtin.Names(fsys)
		if lerr != nil || len(names) == 0 {
			return nil, fmt.Errorf("no plan named '%s': there are no plans %s", o.planName, where)
		}
		return nil, fmt.Errorf("no plan named '%s'; the plans %s are: %s", o.planName, where, strings.Join(names, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	source := file
	if o.planDir != "" {
		source = filepath.Join(o.planDir, file)
	}
	p, err := plan.Parse(data, source)
	if err != nil {
		return nil, err
	}
	return eng.Compile(p)
}

// usage is rankd --help: what it does, how the request arrives, examples,
// and every flag under its kebab-case name.
func usage(w io.Writer, fs *flag.FlagSet, defs []flagDef) {
	fmt.Fprint(w, `rankd runs one plan of taskflow's plan engine: a DAG of Redis reads and CPU
steps, under a deadline. It reads one JSON request on stdin, runs the plan,
and prints the candidates as one JSON line on stdout. Errors go to stderr
and exit 1.

Request (stdin): {"user_id": 1, "request_id": "r-1", "param_overrides": {...}}
  user_id is required; request_id defaults to a new UUID.

Examples:
  echo '{"user_id":1}' | rankd --plan-name complex_dag
  echo '{"user_id":1}' | rankd --plan my_plan.plan.json --trace
  rankd --plan-name complex_dag --bench 2000 --bench-concurrency 4
  taskflow seed-demo   # loads the demo data the built-in plans read

Built-in plans: `)
	names, _ := builtin.Names(builtin.FS())
	fmt.Fprintln(w, strings.Join(names, ", "))
	fmt.Fprint(w, "\nFlags (each also accepts the reference rankd's snake_case spelling, e.g. --plan_name):\n")
	for _, d := range defs {
		f := fs.Lookup(d.name)
		typ, help := flag.UnquoteUsage(f)
		line := "  --" + d.name
		if typ != "" {
			line += " " + typ
		}
		fmt.Fprintf(w, "%-28s %s", line, help)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	}
}

// errMessage strips the package sentinels' prefixes so the message is the
// reference's ("Plan contains a cycle", not "invalid plan: Plan contains…").
func errMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{plan.ErrPlan.Error() + ": ", registry.ErrInvalid.Error() + ": ", ir.ErrIR.Error() + ": "} {
		if len(msg) > len(p) && msg[:len(p)] == p {
			msg = msg[len(p):]
		}
	}
	return msg
}

// dataNote says on stderr where the plan's data is read: the Redis of
// each endpoint and the key prefix, so an answer can be told from an
// answer on another Redis's (or no) data.
func dataNote(w io.Writer, eng *plan.Engine, c *plan.Compiled, o options) {
	if where := dataSource(eng, c, o); where != "" {
		fmt.Fprintf(w, "rankd: plan %s reads %s\n", c.Name, where)
	}
}

// dataSource names the Redis of each endpoint the plan reads, and the
// key prefix; "" for a plan that reads none.
func dataSource(eng *plan.Engine, c *plan.Compiled, o options) string {
	var where []string
	for _, id := range c.Endpoints {
		where = append(where, eng.DescribeEndpoint(id))
	}
	if len(where) == 0 {
		return ""
	}
	prefix := ""
	if o.keyPrefix != "" {
		prefix = fmt.Sprintf(" (key prefix %q)", o.keyPrefix)
	}
	return strings.Join(slices.Compact(where), ", ") + prefix
}

// warnIfNoData warns when every Redis read of a run found nothing: the
// plan's data is not where rankd looked (another Redis, another prefix,
// or not loaded), and an empty answer would look like a real one.
func warnIfNoData(w io.Writer, res *plan.Result) {
	if reads := redisReads(res); reads > 0 {
		fmt.Fprintf(w, "rankd: warning: the plan's %d Redis read(s) found no data: is the data loaded there? (`taskflow seed-demo` loads the demo data; `make run` loads it into its embedded Redis, redis://127.0.0.1:6380/0)\n", reads)
	}
}

// dataAbsent reports whether the Redis of the plan's first endpoint holds
// no key under the key prefix at all (the data was never loaded there),
// as opposed to a request whose reads found nothing (a user without
// follows). Unknown (unreachable, a very large keyspace) counts as present.
func dataAbsent(ctx context.Context, eng *plan.Engine, c *plan.Compiled, o options) bool {
	if len(c.Endpoints) == 0 {
		return false
	}
	u := eng.DescribeEndpoint(c.Endpoints[0])
	if strings.Contains(u, "…") {
		return false // a redacted password: not ours to reconnect with
	}
	if !strings.Contains(u, "://") {
		u = "redis://" + u + "/0"
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rdb, err := redisconn.Open(ctx, u, redisconn.Options{PingTimeout: time.Second})
	if err != nil {
		return false
	}
	defer rdb.Close()
	const maxScanned = 200000
	var cursor uint64
	for scanned := 0; scanned < maxScanned; scanned += 1000 {
		keys, next, err := rdb.Scan(ctx, cursor, o.keyPrefix+"*", 1000).Result()
		if err != nil || len(keys) > 0 {
			return false
		}
		if cursor = next; cursor == 0 {
			return true
		}
	}
	return false
}

// redisReads counts the nodes of a traced run that read Redis.
func redisReads(res *plan.Result) int {
	n := 0
	for _, t := range res.Trace {
		if t.RoundTrips > 0 {
			n++
		}
	}
	return n
}

// noData: a traced run read Redis and every read found nothing.
func noData(res *plan.Result) bool {
	rows := 0
	for _, t := range res.Trace {
		if t.RoundTrips > 0 {
			rows += t.RowsOut
		}
	}
	return redisReads(res) > 0 && rows == 0
}

func printTrace(w io.Writer, name string, res *plan.Result, source string) {
	if source != "" {
		source = ", data from " + source
	}
	fmt.Fprintf(w, "trace %s: %d node(s), %s, critical path %d Redis round trip(s)%s\n", name, len(res.Trace), res.Elapsed.Round(time.Microsecond), res.CriticalRoundTrips, source)
	fmt.Fprintf(w, "%-12s %-22s %-4s %-7s %10s %10s %8s %8s %4s\n", "node", "op", "kind", "place", "start_us", "end_us", "rows_in", "rows_out", "rtt")
	tr := append([]plan.NodeTrace(nil), res.Trace...)
	sort.SliceStable(tr, func(i, j int) bool { return tr[i].Start < tr[j].Start })
	for _, t := range tr {
		fmt.Fprintf(w, "%-12s %-22s %-4s %-7s %10d %10d %8d %8d %4d", t.NodeID, t.Op, t.Kind, t.Place,
			t.Start.Microseconds(), t.End.Microseconds(), t.RowsIn, t.RowsOut, t.RoundTrips)
		if t.Err != "" {
			fmt.Fprintf(w, "  error: %s", t.Err)
		}
		fmt.Fprintln(w)
	}
}

func bench(ctx context.Context, eng *plan.Engine, o options, opts plan.RunOptions, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "Error: "+errMessage(err))
		return 1
	}
	if o.plan == "" && o.planName == "" {
		return fail(errors.New("--bench needs --plan or --plan-name"))
	}
	c, err := loadPlan(eng, o)
	if err != nil {
		return fail(err)
	}
	if err := eng.Ping(ctx, c); err != nil {
		return fail(err)
	}
	dataNote(stderr, eng, c, o)
	req := &plan.Request{RequestID: "bench", UserID: o.benchUserID}
	probe := opts
	probe.Trace = true
	if res, err := eng.Run(ctx, c, req, probe); err == nil && noData(res) && dataAbsent(ctx, eng, c, o) {
		warnIfNoData(stderr, res) // a benchmark of empty reads measures nothing
	}
	opts.Trace = false
	var crit atomic.Int64
	one := func() (time.Duration, error) {
		t0 := time.Now()
		res, err := eng.Run(ctx, c, req, opts)
		if err == nil {
			crit.Store(int64(res.CriticalRoundTrips))
		}
		return time.Since(t0), err
	}
	for i := 0; i < o.benchWarmup; i++ {
		if _, err := one(); err != nil {
			return fail(err)
		}
	}
	rtt, err := measureRTT(ctx, eng, c)
	if err != nil {
		return fail(err)
	}
	lat := make([]time.Duration, o.bench)
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	cpu0 := processCPU()
	start := time.Now()
	for w := 0; w < o.benchConc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(o.bench) {
					return
				}
				d, err := one()
				lat[i] = d
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	total := time.Since(start)
	cpu := processCPU() - cpu0
	if firstErr != nil {
		return fail(firstErr)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	bound := time.Duration(crit.Load()) * rtt
	out := map[string]any{
		"plan": c.Name, "iterations": o.bench, "concurrency": o.benchConc,
		"total_ms": float64(total.Microseconds()) / 1000, "throughput_rps": float64(o.bench) / total.Seconds(),
		"avg_us": us(sum / time.Duration(len(lat))), "p50_us": us(pct(0.50)), "p99_us": us(pct(0.99)),
		"min_us": us(lat[0]), "max_us": us(lat[len(lat)-1]),
		"critical_round_trips": crit.Load(), "rtt_us": us(rtt), "bound_us": us(bound),
		"cpu_policy": eng.Config().CPUPolicy, "cpu_us_per_plan": us(cpu / time.Duration(o.bench)),
	}
	order := []string{"plan", "iterations", "concurrency", "total_ms", "throughput_rps", "avg_us", "p50_us", "p99_us", "min_us", "max_us", "critical_round_trips", "rtt_us", "bound_us", "cpu_policy", "cpu_us_per_plan"}
	buf := []byte{'{'}
	for i, k := range order {
		if i > 0 {
			buf = append(buf, ',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(out[k])
		buf = append(append(append(buf, kb...), ':'), vb...)
	}
	buf = append(buf, '}', '\n')
	_, _ = stdout.Write(buf)
	return 0
}

// measureRTT is the median of 200 sequential PINGs to the plan's first
// endpoint: one Redis round trip on this machine, now.
func measureRTT(ctx context.Context, eng *plan.Engine, c *plan.Compiled) (time.Duration, error) {
	if len(c.Endpoints) == 0 {
		return 0, nil
	}
	return eng.RTT(ctx, c.Endpoints[0], 200)
}

// processCPU is the user + system CPU time this process has used
// (getrusage): divided by the plans run, what a plan costs rankd whatever
// else the machine is doing.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
