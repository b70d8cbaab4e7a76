package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/extsvc/tools"
	"github.com/taskflow/taskflow/internal/engine/cron"
	"github.com/taskflow/taskflow/internal/engine/depend"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/follower"
	"github.com/taskflow/taskflow/internal/external/handoff"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/platform/config"
	"github.com/taskflow/taskflow/internal/platform/rungroup"
	"github.com/taskflow/taskflow/task"
)

func init() { register("orchestrator", newOrchestratorCommand) }

// externalTypes are the task types external services perform: the
// configuration's (TASKFLOW_EXTERNAL_TYPES), else the example services'
// (text.wordcount among them, also the Node example's).
func externalTypes(m *Main) []string {
	cfg, _ := m.config() // a list is always read; other variables' errors stop the commands that run parts
	if cfg.External.Types != nil {
		return cfg.External.Types
	}
	var out []string
	for _, n := range tools.Names() {
		out = append(out, tools.Catalog[n].Types...)
	}
	sort.Strings(out)
	return out
}

// registerExternal makes the dispatcher the handler of every external task
// type on mux (newTaskMux calls it), bounded by the configuration's
// in-flight bound (TASKFLOW_EXTERNAL_INFLIGHT).
// Without Redis (a process that only lists the types) the handlers are
// placeholders that never run.
func registerExternal(m *Main, r taskflow.Registrar, d taskDeps) error {
	types := externalTypes(m)
	if l, ok := r.(interface{ Types() []string }); ok {
		for _, t := range types {
			if slices.Contains(l.Types(), t) {
				return fmt.Errorf("TASKFLOW_EXTERNAL_TYPES: %q is already an in-process task type", t)
			}
		}
	}
	if d.Redis == nil {
		for _, t := range types {
			r.Handle(t, taskflow.HandlerFunc(func(context.Context, *task.Task) (json.RawMessage, error) {
				return nil, errors.New("external task type: dispatched by workers only")
			}))
		}
		return nil
	}
	cfg, err := m.config()
	if err != nil {
		return err
	}
	st := d.Store
	if st == nil {
		return errors.New("external task types: the dispatcher needs the process's store")
	}
	disp := dispatch.New(st, dispatch.Config{DefaultTimeout: d.DefaultTimeout, Logger: m.Logger, InFlight: cfg.External.InFlight})
	for _, t := range types {
		r.Handle(t, disp)
	}
	return nil
}

// openResults builds the result retrieval (get_task_result
// and list_user_tasks) the service layer answers with. With a
// DATABASE_URL, results that have left Redis are read back from the
// archive; the returned func closes it.
func openResults(st *store.Store, cfg config.Config) (*resultview.Results, *archive.Archive, func(), error) {
	var arc *archive.Archive
	closeFn := func() {}
	if cfg.DatabaseURL != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if arc, err = archive.Open(ctx, archive.Config{DatabaseURL: cfg.DatabaseURL, Schema: cfg.ArchiveSchema}); err != nil {
			return nil, nil, nil, err
		}
		closeFn = arc.Close
	}
	return resultview.New(st, resultview.Config{Archive: arc, ArtifactDir: cfg.ArtifactDir}), arc, closeFn, nil
}

// externalMetrics are the external path's series on one /metrics registry:
// the outcomes applied (internal/external/outcome), the followers' gaps
// (internal/external/follower), the notifications' delivery latency
// (internal/external/notify) and the streams' lag, pending entries and DLQ size,
// read at scrape (internal/external/protocol). Both the API and the orchestrator
// export all of them, each counting what its process does.
type externalMetrics struct {
	outcomes *outcome.Metrics
	gaps     *follower.Metrics
	delivery *notify.DeliveryMetrics
}

func newExternalMetrics(reg prometheus.Registerer, rdb redis.UniversalClient, ns keyspace.Namespace) (*externalMetrics, error) {
	var m externalMetrics
	var err error
	if m.outcomes, err = outcome.NewMetrics(reg); err != nil {
		return nil, err
	}
	if m.gaps, err = follower.NewMetrics(reg); err != nil {
		return nil, err
	}
	if m.delivery, err = notify.NewDeliveryMetrics(reg); err != nil {
		return nil, err
	}
	if err := reg.Register(protocol.NewCollector(rdb, protocol.NewKeys(ns))); err != nil {
		return nil, err
	}
	return &m, nil
}

// runOrchestrator runs the agent side until ctx ends (also used by
// `taskflow dev`): the outcome consumer (agent-group), the handoff
// watcher, cron, dependency releases, the archiver (when DATABASE_URL is
// set) and the in-process notifier, as one group: the first to stop, or
// the end of ctx, stops them all. mt counts the outcomes it applies and
// the followers' gaps (nil: none are counted).
//
// It works on the process's one store (a.Store) and configuration
// (a.Config): the transitions it applies (failures of external tasks,
// cron firings, dependency releases) follow the same MAX_TASK_AGE,
// MAX_RETRIES and retry ratios as the workers'.
func runOrchestrator(ctx context.Context, m *Main, a *app.App, consumer string, mt *externalMetrics) error {
	rdb, st, cfg := a.Redis, a.Store, a.Config
	note, err := notify.New(rdb, notify.Config{Namespace: st.Namespace()})
	if err != nil {
		return err
	}
	var arc *archive.Archive
	if cfg.DatabaseURL != "" {
		if arc, err = archive.Open(ctx, archive.Config{DatabaseURL: cfg.DatabaseURL, Schema: cfg.ArchiveSchema}); err != nil {
			return err
		}
		defer arc.Close()
	} else {
		m.Logger.Warn("DATABASE_URL is not set: finished tasks are not archived (results live 24 h in Redis)")
	}
	types, err := taskTypes(m, nil, rdb, st.Namespace())
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	oc := outcome.Config{Consumer: consumer, Logger: m.Logger, Backoff: cfg.External.Backoff, Types: types}
	if mt != nil {
		oc.Observe = mt.outcomes.Observe
	}
	o, err := outcome.New(st, note, arc, oc)
	if err != nil {
		return err
	}
	// The attempts handed off to the services: timeouts, dead services,
	// cancels.
	w, err := handoff.New(st, note, arc, handoff.Config{Logger: m.Logger})
	if err != nil {
		return err
	}
	g := rungroup.New(ctx)
	g.Start("outcome consumer", o.Run)
	g.Start("handoff watcher", w.Run)
	// Recurring schedules fire from every orchestrator: each due time
	// creates one task whatever the number of processes.
	g.Start("cron", cron.New(st, cron.Config{Logger: m.Logger}).Run)
	// Tasks waiting for others are released (or cancelled) as their
	// dependencies finish.
	g.Start("dependency releases", depend.New(st, depend.Config{Logger: m.Logger}).Run)
	// Every finished task, in-process ones too, goes to the archive.
	if arc != nil {
		ar := follower.NewArchiver(st, arc, m.Logger)
		if mt != nil {
			ar.OnGap(mt.gaps.Gap("archiver"))
		}
		g.Start("archiver", ar.Run)
	}
	// Sessions hear of their in-process tasks' ends as of external ones'
	// (the outcome consumer announces those).
	nt := follower.NewInProcessNotifier(st, note, follower.NoticeConfig{
		Types: types, Since: processStart, Logger: m.Logger})
	if mt != nil {
		nt.OnGap(mt.gaps.Gap("notifier"))
	}
	g.Start("in-process notifier", nt.Run)
	return g.Wait()
}

// processStart is where the in-process notifier's first run starts (no
// cursor saved yet): tasks that finished before this process started are
// not announced. `taskflow dev` serves requests only after it.
var processStart = time.Now()

func newOrchestratorCommand(m *Main) *cobra.Command {
	cfg, envErr := m.config()
	var consumer string
	cmd := &cobra.Command{
		Use:   "orchestrator",
		Short: "Apply external services' outcomes (consumer group agent-group): results, notifications, archive",
		Long: "Consumes agent:stream:task.completed / .failed / .timeout / .progress in the consumer group agent-group\n" +
			"and applies each event through the store's transitions, then caches the result, notifies the session\n" +
			"and archives the task (DATABASE_URL). Run any number of them. Workers dispatch the external types\n" +
			"(TASKFLOW_EXTERNAL_TYPES).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if envErr != nil {
				return &ExitError{Code: 2, Err: envErr}
			}
			if cfg.RedisURL == "" {
				return &ExitError{Code: 2, Err: errors.New("orchestrator: REDIS_URL (or --redis-url) is required")}
			}
			a, err := app.Open(cmd.Context(), cfg, m.Logger)
			if err != nil {
				return &ExitError{Code: 2, Err: fmt.Errorf("orchestrator: %w", err)}
			}
			defer a.Close()
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			if cfg.MetricsAddr != "" {
				ln, err := net.Listen("tcp", cfg.MetricsAddr)
				if err != nil {
					return &ExitError{Code: 2, Err: fmt.Errorf("orchestrator: --metrics-addr: %w", err)}
				}
				mux := http.NewServeMux()
				mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
				srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
				go func() { _ = srv.Serve(ln) }()
				defer srv.Close()
				fmt.Fprintf(m.Stdout, "metrics on http://%s/metrics\n", ln.Addr())
			}
			mt, err := newExternalMetrics(reg, a.Redis, a.Store.Namespace())
			if err != nil {
				return err
			}
			return runOrchestrator(cmd.Context(), m, a, consumer, mt)
		},
	}
	f := cmd.Flags()
	cfg.BindFlags(f, "redis-url", "namespace", "metrics-addr")
	f.StringVar(&consumer, "consumer", "", "consumer name in agent-group (default agent-<host>-<pid>)")
	return cmd
}
