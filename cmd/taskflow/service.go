package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/extsvc/tools"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
)

func init() { register("service", newServiceCommand) }

// newServiceCommand runs one of the example external services
// (extsvc/tools) against REDIS_URL until interrupted.
func newServiceCommand(m *Main) *cobra.Command {
	// Only settings without parse rules concern a service (Redis,
	// namespace, output and artifact directories): the others' errors are
	// for the commands that read them.
	cfg, _ := m.config()
	var (
		consumer    string
		concurrency int
	)
	cmd := &cobra.Command{
		Use:   "service NAME",
		Short: "Run an example external service (" + strings.Join(tools.Names(), ", ") + ") over Redis Streams",
		Long: "Runs one of the example services: it takes its task types from agent:stream:task.create\n" +
			"through the consumer group NAME-service-group and publishes task.completed / task.failed.\n" +
			"Services: " + strings.Join(tools.Names(), ", ") + ".",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, ok := tools.Catalog[args[0]]
			if !ok {
				return &ExitError{Code: 2, Err: fmt.Errorf("service: unknown service %q (want one of %s)", args[0], strings.Join(tools.Names(), ", "))}
			}
			if cfg.RedisURL == "" {
				return &ExitError{Code: 2, Err: errors.New("service: REDIS_URL (or --redis-url) is required")}
			}
			rdb, err := redisconn.Open(cmd.Context(), cfg.RedisURL, redisconn.Options{NoPing: true})
			if err != nil {
				return &ExitError{Code: 2, Err: fmt.Errorf("service: REDIS_URL: %w", err)}
			}
			defer rdb.Close()
			svc, err := extsvc.New(rdb, extsvc.Config{Name: spec.Service, Namespace: cfg.Namespace, Consumer: consumer,
				Concurrency: concurrency, Logger: m.Logger, ArtifactDir: cfg.ArtifactDir})
			if err != nil {
				return &ExitError{Code: 2, Err: err}
			}
			spec.Register(svc, tools.Options{OutputDir: cfg.OutputDir})
			fmt.Fprintf(m.Stdout, "%s (%s) consuming %s as %s; output in %s\n", spec.Service, strings.Join(spec.Types, ", "),
				"agent:stream:task.create", svc.Consumer(), tools.Options{OutputDir: cfg.OutputDir}.WithDefaults().OutputDir)
			return svc.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	cfg.BindFlags(f, "redis-url", "namespace", "output-dir")
	f.StringVar(&consumer, "consumer", "", "consumer name in the group (default NAME-worker-<host>-<pid>)")
	f.IntVar(&concurrency, "concurrency", 5, "tasks run at once")
	return cmd
}
