// Command taskflow-bench measures taskflow from outside: `bench` drives the
// engine (enqueue, drain, producer, start latency) on a Redis, `loadgen`
// drives the HTTP submit endpoint of a running API, `fill` writes a
// deployment's worth of tasks for the API and the dashboard to page. It is
// a measuring tool, kept out of the production binary: `taskflow` ships
// what runs a deployment, and this binary what is run against one. Figures
// go into docs/benchmarks.md with the command that produced them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/platform/config"
	"github.com/taskflow/taskflow/internal/platform/version"
)

// Main holds the streams and environment of one run (tests build their own).
type Main struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string

	cfg    *app.Config // read from Getenv once per Run (config)
	cfgErr error
}

// config is the run's configuration, read from the environment once
// (app.Load); each command binds its flags onto its own copy.
func (m *Main) config() (app.Config, error) {
	if m.cfg == nil {
		c, err := app.Load(m.Getenv)
		m.cfg, m.cfgErr = &c, err
	}
	return *m.cfg, m.cfgErr
}

// ExitError carries an exit code out of a subcommand.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Root builds the command tree.
func (m *Main) Root() *cobra.Command {
	root := &cobra.Command{
		Use:           "taskflow-bench",
		Short:         "Measure taskflow: the engine on a Redis (bench), the submit endpoint of an API (loadgen), its MCP server (mcp); fill a namespace with many tasks (fill)",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Read().String(),
	}
	root.SetOut(m.Stdout)
	root.SetErr(m.Stderr)
	root.AddCommand(newBenchCommand(m), newLoadgenCommand(m), newMCPCommand(m), newFillCommand(m), newExternalCommand(m))
	return root
}

// Run executes args.
func (m *Main) Run(ctx context.Context, args []string) error {
	m.cfg = nil
	root := m.Root()
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// apiClient is where loadgen sends its requests.
type apiClient struct {
	base, token string
}

// clientCommand reads TASKFLOW_URL and TASKFLOW_TOKEN (else
// TASKFLOW_ADMIN_KEY), overridden by --url and --token, as taskflow's
// client commands do.
func clientCommand(m *Main, cmd *cobra.Command, run func(ctx context.Context, c *apiClient, args []string) error) *cobra.Command {
	cfg, _ := m.config() // only the client settings concern it
	cfg.BindFlags(cmd.Flags(), config.ClientFlags...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := &apiClient{base: strings.TrimRight(cfg.APIURL, "/"), token: cfg.ClientToken()}
		ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/live", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("cannot reach the taskflow API at %s (set TASKFLOW_URL or --url): %w", c.base, err)
		}
		res.Body.Close()
		return run(cmd.Context(), c, args)
	}
	return cmd
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := &Main{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	if err := m.Run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "taskflow-bench:", err)
		var ee *ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.Code)
		}
		os.Exit(1)
	}
}
