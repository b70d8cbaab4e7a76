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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/taskflow/taskflow/internal/config"
	"github.com/taskflow/taskflow/internal/version"
)

// Main holds what every subcommand shares: its streams and logger. Tests
// build one with their own buffers.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Logger *slog.Logger
	Getenv func(string) string
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
// LOG_LEVEL and LOG_FORMAT, when set, replace the logger every command
// uses.
func (m *Main) Run(ctx context.Context, args []string) error {
	if lv, lf := m.Getenv("LOG_LEVEL"), m.Getenv("LOG_FORMAT"); lv != "" || lf != "" {
		l, err := config.NewLogger(strings.ToLower(strings.TrimSpace(lv)), strings.ToLower(strings.TrimSpace(lf)), m.Stderr)
		if err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		m.Logger = l
	}
	root := m.Root()
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
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
