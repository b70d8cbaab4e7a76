package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/config"
	"github.com/taskflow/taskflow/internal/devredis"
	"github.com/taskflow/taskflow/internal/orchestrator"
)

// DevAddr is where `taskflow dev` listens when TASKFLOW_ADDR is unset.
const DevAddr = "127.0.0.1:8080"

func init() {
	register("dev", func(m *Main) *cobra.Command {
		cfg, envErr := config.FromEnv(m.Getenv)
		if m.Getenv("TASKFLOW_ADDR") == "" {
			cfg.Addr = DevAddr
		}
		cmd := &cobra.Command{
			Use:   "dev",
			Short: "Run everything in one process on 127.0.0.1: API, workers, scheduler (embedded Redis when REDIS_URL is unset)",
			Long: `Run the API, the workers and the scheduler in one process, listening on
loopback only. With REDIS_URL unset it serves an embedded in-memory
Redis-compatible server: nothing is kept when the process stops. Without
TASKFLOW_ADMIN_KEY the API runs open (requests without credentials act as
the admin), which is safe only because it listens on 127.0.0.1.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if envErr != nil {
					return envErr
				}
				if err := cfg.Validate(); err != nil {
					return err
				}
				// Read again by the workers' dispatcher; checked here so a
				// bad value stops dev before it serves anything.
				if _, err := orchestrator.InFlightFromEnv(m.Getenv); err != nil {
					return &ExitError{Code: 2, Err: err}
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
				return runDev(cmd.Context(), m, cfg, net.JoinHostPort(host, port))
			},
		}
		f := cmd.Flags()
		f.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address, loopback only (TASKFLOW_ADDR)")
		f.StringVar(&cfg.RedisURL, "redis-url", cfg.RedisURL, "Redis URL (REDIS_URL); unset = embedded in-memory server")
		f.StringVar(&cfg.Namespace, "namespace", cfg.Namespace, "Redis key namespace (TASKFLOW_NAMESPACE)")
		f.StringVar(&cfg.AdminKey, "admin-key", cfg.AdminKey, "admin bearer token (TASKFLOW_ADMIN_KEY); unset = open")
		f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "handler goroutines (TASKFLOW_CONCURRENCY)")
		return cmd
	})
}

func runDev(ctx context.Context, m *Main, cfg config.Config, addr string) error {
	out := m.Stderr
	if cfg.RedisURL == "" {
		emb, err := devredis.Start()
		if err != nil {
			return err
		}
		defer emb.Close()
		cfg.RedisURL = emb.URL()
		fmt.Fprintf(out, "taskflow dev: REDIS_URL is unset, so tasks live in an embedded in-memory Redis (%s).\n", emb.Addr())
		fmt.Fprintln(out, "taskflow dev: NOTHING IS KEPT when this process stops. Set REDIS_URL to use a real Redis.")
	} else {
		fmt.Fprintf(out, "taskflow dev: using Redis at %s\n", redactedURL(cfg.RedisURL))
	}
	rdb, err := openRedis(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	// Packages that read REDIS_URL themselves (the plan engine) must see the
	// Redis this process uses, embedded or not.
	dm := *m
	getenv := m.Getenv
	dm.Getenv = func(k string) string {
		if k == "REDIS_URL" {
			return cfg.RedisURL
		}
		return getenv(k)
	}
	m = &dm

	open := cfg.AdminKey == ""
	a, err := newAPI(m, cfg, rdb, open)
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
	fmt.Fprintf(out, "taskflow dev: open %s/docs  (API %s/api/v1/, health %s/health)\n", base, base, base)
	fmt.Fprintf(out, "taskflow dev: try  curl -s -X POST %s/api/v1/tasks/summarize/ -H 'Content-Type: application/json' -d '{\"content\":\"...\"}'\n", base)
	fmt.Fprintf(out, "taskflow dev: or   echo 'some text. more text.' | TASKFLOW_URL=%s taskflow submit --wait\n", base)

	eng, err := engineFromEnv(m.Getenv, cfg.Namespace)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)
	go func() {
		errc <- runEngine(ctx, m, rdb, eng, engineRun{workers: true, scheduler: true, concurrency: cfg.Concurrency,
			grace: cfg.ShutdownGrace, namespace: cfg.Namespace})
	}()
	go func() { errc <- a.serve(ctx, ln, cfg.ShutdownGrace) }()
	// External services' outcomes, cron, dependencies (orchestrator.go),
	// counted on the API's /metrics: one process, one registry.
	go func() { errc <- runOrchestrator(ctx, m, rdb, cfg.Namespace, "", cfg.DatabaseURL, a.extras.orch) }()
	first := <-errc
	cancel()
	second, third := <-errc, <-errc
	if errors.Is(first, context.Canceled) {
		first = nil
	}
	if errors.Is(second, context.Canceled) {
		second = nil
	}
	return errors.Join(first, second, third)
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
