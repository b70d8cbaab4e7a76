// Command taskflow is the one binary of taskflow: the API server, workers,
// the scheduler, external services, client commands and benchmarks. Each
// subcommand lives in its own file and registers itself with register.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/platform/config"
	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/internal/platform/version"
)

// Main holds what every subcommand shares: its streams, its logger and
// the process's configuration. Tests build one with their own buffers and
// environment.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Logger *slog.Logger
	Getenv func(string) string

	// the configuration read from Getenv (config), once per Run
	cfg    *app.Config
	cfgErr error
}

// config is the process's configuration: every setting of
// internal/platform/config's table, read from the environment once (app.Load).
// Each command binds its flags onto its own copy (cfg.BindFlags); the
// parts built deeper down take the settings no flag overrides from here.
// The error names every wrong variable; a command that runs the
// deployment's parts refuses to start with it.
func (m *Main) config() (app.Config, error) {
	if m.cfg == nil {
		c, err := app.Load(m.Getenv)
		m.cfg, m.cfgErr = &c, err
	}
	return *m.cfg, m.cfgErr
}

// NewMain returns a Main wired to the process's streams and environment.
func NewMain() *Main {
	return &Main{
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Getenv: os.Getenv,
	}
}

// commands are the subcommand constructors registered by each file's init.
var commands = map[string]func(m *Main) *cobra.Command{}

// register adds a subcommand constructor; name must be unique.
func register(name string, build func(m *Main) *cobra.Command) {
	if _, dup := commands[name]; dup {
		panic("taskflow: command registered twice: " + name)
	}
	commands[name] = build
}

// Root builds the command tree.
func (m *Main) Root() *cobra.Command {
	root := &cobra.Command{
		Use:           "taskflow",
		Short:         "taskflow: a durable task queue, external services over Redis Streams, and a plan engine",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Read().String(), // taskflow --version
	}
	root.SetVersionTemplate("taskflow {{.Version}}\n")
	// One flag convention: kebab-case. A snake_case spelling (--redis_url,
	// as rankd's reference flags are written) names the same flag.
	root.SetGlobalNormalizationFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
	})
	root.SetIn(m.Stdin)
	root.SetOut(m.Stdout)
	root.SetErr(m.Stderr)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		root.AddCommand(commands[n](m))
	}
	return root
}

// Run executes the command line args and returns the error to report.
// It reads the configuration first; LOG_LEVEL and LOG_FORMAT, when set,
// replace the logger every command uses, and a wrong one stops every
// command. A configuration error exits 2.
func (m *Main) Run(ctx context.Context, args []string) error {
	m.cfg = nil // read afresh: one Run is one process
	cfg, cfgErr := m.config()
	if err := config.Only(cfgErr, "LOG_LEVEL", "LOG_FORMAT"); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	if cfg.Given("LOG_LEVEL") || cfg.Given("LOG_FORMAT") {
		l, err := config.NewLogger(cfg.LogLevel, cfg.LogFormat, m.Stderr)
		if err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		m.Logger = l
	}
	m.Logger = slog.New(tracing.LogHandler(m.Logger.Handler())) // records logged with a span's context name its trace
	role := commandOf(args)
	shutdown, err := tracing.Setup(ctx, cfg.Tracing, role)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	defer func() {
		// flush the buffered spans, bounded: a collector that is gone
		// does not hold the exit
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			m.Logger.Warn("traces not flushed", "err", err)
		}
	}()
	if !serverRoles[role] {
		// a client command is one span, which its API calls continue
		var span trace.Span
		ctx, span = tracing.Start(ctx, "taskflow", role, trace.SpanKindClient)
		defer span.End()
	}
	root := m.Root()
	root.SetArgs(args)
	err = root.ExecuteContext(ctx)
	var ee *ExitError
	if errors.Is(err, config.ErrInvalid) && !errors.As(err, &ee) {
		err = &ExitError{Code: 2, Err: err}
	}
	return err
}

// serverRoles are the commands that run a part of the deployment: their
// spans are the tasks' and requests', not one for the whole process.
var serverRoles = map[string]bool{"api": true, "worker": true, "scheduler": true, "orchestrator": true,
	"service": true, "mcp": true, "dev": true, "": true}

// commandOf is the subcommand args run ("" for none): the role a process's
// traces are named after (service.name taskflow-<role>).
func commandOf(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			if _, ok := commands[a]; ok {
				return a
			}
			return ""
		}
	}
	return ""
}

// ExitError carries a specific exit code out of a subcommand.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}
func (e *ExitError) Unwrap() error { return e.Err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := NewMain()
	if err := m.Run(ctx, os.Args[1:]); err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			if ee.Err != nil {
				fmt.Fprintln(m.Stderr, "taskflow:", ee.Err)
			}
			os.Exit(ee.Code)
		}
		fmt.Fprintln(m.Stderr, "taskflow:", err)
		os.Exit(1)
	}
}
