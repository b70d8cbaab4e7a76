package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/extsvc/tools"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/platform/devredis"
	"github.com/taskflow/taskflow/internal/platform/rungroup"
)

// DevAddr is where `taskflow dev` listens when TASKFLOW_ADDR is unset.
const DevAddr = "127.0.0.1:8080"

func init() {
	register("dev", func(m *Main) *cobra.Command {
		cfg, envErr := m.config()
		if !cfg.Given("TASKFLOW_ADDR") {
			cfg.Addr = DevAddr
		}
		var opts devOptions
		cmd := &cobra.Command{
			Use:   "dev",
			Short: "Run everything in one process on 127.0.0.1: API, workers, scheduler (embedded Redis when REDIS_URL is unset)",
			Long: `Run the API, the workers and the scheduler in one process, listening on
loopback only. With REDIS_URL unset it serves an embedded in-memory
Redis-compatible server: nothing is kept when the process stops. Without
TASKFLOW_ADMIN_KEY the API runs open (requests without credentials act as
the admin), which is safe only because it listens on 127.0.0.1.

--services runs example external services in the same process (report,
analyze, document, export, or all), so external tasks complete with no
other command; --demo-data loads the plan engine's demo data into the
Redis this process uses (the plans read it there). ` + "`make run`" + ` passes both.`,
			Example: `  taskflow dev                                  # API, workers, scheduler, orchestrator
  taskflow dev --services all --demo-data      # plus the example services and the plans' data (make run)`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if envErr != nil {
					return envErr
				}
				if err := cfg.Validate(); err != nil {
					return err
				}
				host, port, err := net.SplitHostPort(cfg.Addr)
				if err != nil {
					return fmt.Errorf("--addr %q: %w", cfg.Addr, err)
				}
				switch host {
				case "", "127.0.0.1", "localhost", "::1":
				default:
					return fmt.Errorf("--addr %q: taskflow dev listens on loopback only (127.0.0.1); use `taskflow api` to serve other hosts", cfg.Addr)
				}
				if host == "" || host == "localhost" {
					host = "127.0.0.1"
				}
				if opts.services, err = parseServices(opts.servicesFlag); err != nil {
					return &ExitError{Code: 2, Err: err}
				}
				return runDev(cmd.Context(), m, cfg, net.JoinHostPort(host, port), opts)
			},
		}
		f := cmd.Flags()
		cfg.BindFlags(f, "addr", "redis-url", "dev-redis-addr", "namespace", "admin-key", "concurrency", "output-dir")
		f.StringVar(&opts.servicesFlag, "services", "", "example external services to run in this process: "+strings.Join(tools.Names(), ",")+", or all")
		f.BoolVar(&opts.demoData, "demo-data", false, "load the plans' demo data into this process's Redis")
		return cmd
	})
}

// devOptions are what `taskflow dev` runs beyond the API and the engine.
type devOptions struct {
	servicesFlag string
	services     []string // example services to run in process
	demoData     bool
}

// parseServices reads --services: names of extsvc/tools, comma-separated,
// or "all"; "" runs none.
func parseServices(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "", "none":
		return nil, nil
	case "all":
		return tools.Names(), nil
	}
	var out []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if _, ok := tools.Catalog[n]; !ok {
			return nil, fmt.Errorf("--services: unknown service %q (want %s, or all)", n, strings.Join(tools.Names(), ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

func runDev(ctx context.Context, m *Main, cfg app.Config, addr string, opts devOptions) error {
	out := m.Stderr
	var emb *devredis.Server
	if cfg.RedisURL == "" {
		var moved bool
		var err error
		emb, moved, err = devredis.StartPreferring(cfg.DevRedisAddr)
		if err != nil {
			return err
		}
		defer emb.Close()
		cfg.RedisURL = emb.URL()
		fmt.Fprintf(out, "taskflow dev: REDIS_URL is unset, so tasks live in an embedded in-memory Redis (%s).\n", emb.Addr())
		if moved {
			fmt.Fprintf(out, "taskflow dev: %s was taken, so the embedded Redis is on %s: point taskflow mcp and rankd at REDIS_URL=%s (not the documented redis://%s/0)\n",
				cfg.DevRedisAddr, emb.Addr(), emb.URL(), cfg.DevRedisAddr)
		}
		fmt.Fprintln(out, "taskflow dev: NOTHING IS KEPT when this process stops. Set REDIS_URL to use a real Redis.")
	} else {
		fmt.Fprintf(out, "taskflow dev: using Redis at %s\n", redactedURL(cfg.RedisURL))
	}
	// one app for everything this process runs: one Redis client, one store
	ap, err := app.Open(ctx, cfg, m.Logger)
	if err != nil {
		return err
	}
	defer ap.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.demoData {
		n, where, err := seedDevDemo(ctx, m, ap)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "taskflow dev: loaded %d plan demo keys into %s\n", n, where)
	}
	svcDone, err := startDevServices(ctx, m, ap, opts)
	if err != nil {
		return err
	}
	defer svcDone()
	if len(opts.services) > 0 {
		fmt.Fprintf(out, "taskflow dev: example services running in this process: %s (task types %s); files go to %s\n",
			strings.Join(opts.services, ", "), strings.Join(serviceTypes(opts.services), ", "), cfg.OutputDir)
	}
	open := cfg.AdminKey == ""
	a, err := newAPI(m, ap, open)
	if err != nil {
		return err
	}
	defer a.close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (set TASKFLOW_ADDR or --addr to another port)", addr, err)
	}
	base := "http://" + ln.Addr().String()
	if open {
		fmt.Fprintln(out, "taskflow dev: running OPEN (no TASKFLOW_ADMIN_KEY): requests without credentials act as the admin. It listens on 127.0.0.1 only.")
	}
	fmt.Fprintf(out, "taskflow dev: dashboard %s/ui/\n", base)
	fmt.Fprintf(out, "taskflow dev: MCP server for agents %s/mcp (streamable HTTP; docs/mcp.md)\n", base)
	fmt.Fprintf(out, "taskflow dev: open %s/docs  (API %s/api/v1/, health %s/health)\n", base, base, base)
	// commands printed as they run when pasted into another terminal in
	// this directory: the client named as this process was started
	self := selfCommand(os.Args[0], executable(), exec.LookPath, fileExists)
	urlEnv := ""
	if base != "http://"+DevAddr {
		urlEnv = "TASKFLOW_URL=" + base + " "
	}
	fmt.Fprintf(out, "taskflow dev: try  curl -s -X POST %s/api/v1/tasks/summarize/ -H 'Content-Type: application/json' -d '{\"content\":\"...\"}'\n", base)
	fmt.Fprintf(out, "taskflow dev: or   echo 'Some text. More text.' | %s%s submit --wait\n", urlEnv, self)
	if opts.demoData {
		fmt.Fprintf(out, "taskflow dev: plan curl -s -X POST %s/api/v1/plans/complex_dag/execute -d '{\"user_id\":1}'\n", base)
	}
	if emb != nil {
		fmt.Fprintf(out, "taskflow dev: agents over stdio: REDIS_URL=%s %s mcp   (docs/mcp.md)\n", emb.URL(), self)
	}

	// the API, the engine and the orchestrator run as one group: the first
	// part to end stops the others
	g := rungroup.New(ctx)
	g.Start("engine", func(ctx context.Context) error {
		return runEngine(ctx, m, ap, engineRun{workers: true, scheduler: true, concurrency: cfg.Concurrency,
			grace: cfg.ShutdownGrace})
	})
	g.Start("api", func(ctx context.Context) error { return a.serve(ctx, ln, cfg.ShutdownGrace) })
	// External services' outcomes, cron, dependencies (orchestrator.go),
	// counted on the API's /metrics: one process, one registry.
	g.Start("orchestrator", func(ctx context.Context) error { return runOrchestrator(ctx, m, ap, "", a.extras.orch) })
	return g.Wait()
}

// seedDevDemo loads the plans' demo data where the plans read: the Redis
// named by TASKFLOW_PLAN_REDIS_URL, else this process's own.
func seedDevDemo(ctx context.Context, m *Main, ap *app.App) (int, string, error) {
	rdb, where := ap.Redis, "this process's Redis"
	if u := ap.Config.Plans.RedisURL; u != "" {
		c, err := redisconn.Open(ctx, u, redisconn.Options{PingTimeout: 2 * time.Second})
		if err != nil {
			return 0, "", fmt.Errorf("--demo-data: TASKFLOW_PLAN_REDIS_URL: %w", err)
		}
		defer c.Close()
		rdb, where = c, redactedURL(u)
	}
	n, err := plan.Seed(ctx, rdb, ap.Config.Plans.KeyPrefix, plan.Demo())
	if err != nil {
		return 0, "", fmt.Errorf("--demo-data: %w", err)
	}
	return n, where, nil
}

// startDevServices runs the example services of opts in this process on
// its Redis; the returned func stops them and waits.
func startDevServices(ctx context.Context, m *Main, ap *app.App, opts devOptions) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stop := func() { cancel(); wg.Wait() }
	for _, name := range opts.services {
		spec := tools.Catalog[name]
		svc, err := extsvc.New(ap.Redis, extsvc.Config{Name: spec.Service, Namespace: ap.Store.Namespace().Name(),
			Logger: m.Logger, ArtifactDir: ap.Config.ArtifactDir})
		if err != nil {
			stop()
			return nil, err
		}
		spec.Register(svc, tools.Options{OutputDir: ap.Config.OutputDir})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := svc.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				m.Logger.Error("example service stopped", "service", spec.Service, "err", err)
			}
		}()
	}
	return stop, nil
}

// serviceTypes are the task types of the example services names.
func serviceTypes(names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, tools.Catalog[n].Types...)
	}
	return out
}

// selfCommand is how a person in this process's working directory runs
// this binary again: "taskflow" when that is what PATH finds (make
// install), the path it was started by when typed as one (bin/taskflow:
// make run), "go run ./cmd/taskflow" for a `go run` from the repository
// (the binary is a temporary file), else the binary's absolute path.
func selfCommand(arg0, exe string, lookPath func(string) (string, error), exists func(string) bool) string {
	if !strings.Contains(arg0, string(filepath.Separator)) {
		if p, err := lookPath(arg0); err == nil && sameFile(p, exe) {
			return arg0
		}
	} else if !strings.Contains(arg0, "go-build") {
		return arg0
	}
	if strings.Contains(exe, "go-build") && exists(filepath.Join("cmd", "taskflow", "main.go")) {
		return "go run ./cmd/taskflow"
	}
	if exe != "" {
		return exe
	}
	return arg0
}

// executable is this process's binary, "" when unknown.
func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// sameFile: a and b name one file (b already resolved).
func sameFile(a, b string) bool {
	if r, err := filepath.EvalSymlinks(a); err == nil {
		a = r
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// redactedURL hides a password in a Redis URL.
func redactedURL(u string) string {
	if at := strings.LastIndex(u, "@"); at >= 0 {
		if scheme := strings.Index(u, "://"); scheme >= 0 && scheme < at {
			return u[:scheme+3] + "***" + u[at:]
		}
	}
	return u
}
