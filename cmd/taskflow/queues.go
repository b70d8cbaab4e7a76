package main

// The commands of named queues, pauses and limits (issue 26): queues,
// pause, resume, limits. Each is one request through apiClient.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func init() {
	register("queues", newQueuesCommand)
	register("pause", func(m *Main) *cobra.Command { return newPauseCommand(m, true) })
	register("resume", func(m *Main) *cobra.Command { return newPauseCommand(m, false) })
	register("limits", newLimitsCommand)
}

type queueDoc struct {
	Name    string `json:"name"`
	Paused  bool   `json:"paused"`
	Pending struct {
		High   int64 `json:"high"`
		Normal int64 `json:"normal"`
		Low    int64 `json:"low"`
	} `json:"pending"`
	Retry            int64      `json:"retry"`
	Scheduled        int64      `json:"scheduled"`
	Active           int64      `json:"active"`
	CompletedPerMin  float64    `json:"completed_per_min"`
	OldestPendingAge float64    `json:"oldest_pending_age"`
	Limits           []limitDoc `json:"limits"`
}

type limitDoc struct {
	Scope string `json:"scope"`
	Name  string `json:"name"`
	Rate  *struct {
		Limit int     `json:"limit"`
		Per   float64 `json:"per"`
	} `json:"rate"`
	Concurrency *int `json:"concurrency"`
}

func (l limitDoc) String() string {
	s := ""
	if l.Rate != nil {
		s = fmt.Sprintf("%d per %gs", l.Rate.Limit, l.Rate.Per)
	}
	if l.Concurrency != nil {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%d at once", *l.Concurrency)
	}
	return s
}

// newQueuesCommand is `taskflow queues [NAME] [--json]`.
func newQueuesCommand(m *Main) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "queues [NAME]",
		Short: "List the named queues (or show one): waiting by priority, retry, running, completed/min, oldest wait, pause, limits (operator)",
		Args:  cobra.MaximumNArgs(1),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, args []string) error {
		path := "/api/v1/queues"
		if len(args) == 1 {
			path += "/" + url.PathEscape(args[0])
		}
		var raw json.RawMessage
		if err := c.do(ctx, "GET", path, nil, &raw); err != nil {
			return err
		}
		if asJSON {
			_, err := fmt.Fprintln(m.Stdout, string(raw))
			return err
		}
		var out queueListDoc
		if len(args) == 1 {
			var q queueDoc
			if err := json.Unmarshal(raw, &q); err != nil {
				return err
			}
			out.Queues = []queueDoc{q}
		} else if err := json.Unmarshal(raw, &out); err != nil {
			return err
		}
		w := tabwriter.NewWriter(m.Stdout, 0, 2, 2, ' ', 0)
		printQueues(w, out)
		return w.Flush()
	})
}

// queueListDoc is GET /api/v1/queues.
type queueListDoc struct {
	Queues          []queueDoc       `json:"queues"`
	PausedTaskTypes []string         `json:"paused_task_types"`
	Parked          map[string]int64 `json:"parked"`
}

// printQueues writes the named queues' table (taskflow queues, status).
func printQueues(w *tabwriter.Writer, out queueListDoc) {
	fmt.Fprintln(w, "QUEUE\tSTATE\tHIGH\tNORMAL\tLOW\tRETRY\tSCHEDULED\tRUNNING\tDONE/MIN\tOLDEST WAIT\tLIMITS")
	for _, q := range out.Queues {
		state := "running"
		if q.Paused {
			state = "PAUSED"
		}
		lim := ""
		for i, l := range q.Limits {
			if i > 0 {
				lim += "; "
			}
			lim += l.String()
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1fs\t%s\n", q.Name, state, q.Pending.High, q.Pending.Normal,
			q.Pending.Low, q.Retry, q.Scheduled, q.Active, q.CompletedPerMin, q.OldestPendingAge, lim)
	}
	if len(out.PausedTaskTypes) > 0 {
		fmt.Fprintf(w, "paused task types: %v\n", out.PausedTaskTypes)
	}
	for scope, n := range out.Parked {
		fmt.Fprintf(w, "held back (%s): %d\n", scope, n)
	}
}

// newPauseCommand is `taskflow pause|resume queue NAME` and
// `taskflow pause|resume task-type TYPE`.
func newPauseCommand(m *Main, pause bool) *cobra.Command {
	verb, short := "pause", "Pause a queue or a task type fleet-wide: nothing of it starts once this answers; waiting tasks keep their order (operator)"
	if !pause {
		verb, short = "resume", "Resume a paused queue or task type (operator)"
	}
	cmd := &cobra.Command{
		Use:       verb + " queue|task-type NAME",
		Short:     short,
		Args:      cobra.ExactArgs(2),
		ValidArgs: []string{"queue", "task-type"},
		Example:   "  taskflow " + verb + " queue emails\n  taskflow " + verb + " task-type report.generate",
	}
	return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, args []string) error {
		var path string
		switch args[0] {
		case "queue":
			path = "/api/v1/queues/" + url.PathEscape(args[1]) + "/" + verb
		case "task-type", "type":
			path = "/api/v1/task-types/" + url.PathEscape(args[1]) + "/" + verb
		default:
			return fmt.Errorf("%s %q: give queue NAME or task-type TYPE", verb, args[0])
		}
		if err := c.do(ctx, "POST", path, nil, nil); err != nil {
			return err
		}
		_, err := fmt.Fprintf(m.Stdout, "%s %s %sd\n", args[0], args[1], verb)
		return err
	})
}

// newLimitsCommand is `taskflow limits [list|set|delete]`.
func newLimitsCommand(m *Main) *cobra.Command {
	root := &cobra.Command{
		Use:   "limits",
		Short: "List, set and delete fleet-wide limits: a rate and/or a concurrency per task type, queue or limit key (operator)",
	}
	var asJSON bool
	list := &cobra.Command{Use: "list", Short: "List the limits", Args: cobra.NoArgs}
	list.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	root.AddCommand(clientCommand(m, list, func(ctx context.Context, c *apiClient, _ []string) error {
		var raw json.RawMessage
		if err := c.do(ctx, "GET", "/api/v1/limits", nil, &raw); err != nil {
			return err
		}
		if asJSON {
			_, err := fmt.Fprintln(m.Stdout, string(raw))
			return err
		}
		var out struct {
			Limits []limitDoc `json:"limits"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return err
		}
		w := tabwriter.NewWriter(m.Stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(w, "SCOPE\tNAME\tLIMIT")
		for _, l := range out.Limits {
			fmt.Fprintf(w, "%s\t%s\t%s\n", l.Scope, l.Name, l)
		}
		fmt.Fprintf(w, "(%d)\n", len(out.Limits))
		return w.Flush()
	}))

	var rate, concurrency int
	var per float64
	set := &cobra.Command{
		Use:   "set task_type|queue|key NAME [--rate N --per SECONDS] [--concurrency N]",
		Short: "Create or replace a limit; it applies at once on every worker",
		Args:  cobra.ExactArgs(2),
		Example: `  taskflow limits set task_type summarize --rate 60 --per 60
  taskflow limits set key '*' --concurrency 2        # every tenant at most 2 at once
  taskflow limits set queue bulk --concurrency 10`,
	}
	set.Flags().IntVar(&rate, "rate", 0, "at most this many starts per --per seconds")
	set.Flags().Float64Var(&per, "per", 1, "the rate's interval in seconds")
	set.Flags().IntVar(&concurrency, "concurrency", 0, "at most this many running at once")
	root.AddCommand(clientCommand(m, set, func(ctx context.Context, c *apiClient, args []string) error {
		body := map[string]any{"scope": args[0], "name": args[1]}
		if set.Flags().Changed("rate") {
			body["rate"] = map[string]any{"limit": rate, "per": per}
		}
		if set.Flags().Changed("concurrency") {
			body["concurrency"] = concurrency
		}
		if !set.Flags().Changed("rate") && !set.Flags().Changed("concurrency") {
			return errors.New("give --rate (with --per), --concurrency or both")
		}
		var out limitDoc
		if err := c.do(ctx, "PUT", "/api/v1/limits", body, &out); err != nil {
			return err
		}
		_, err := fmt.Fprintf(m.Stdout, "%s %s: %s\n", out.Scope, out.Name, out)
		return err
	}))

	del := &cobra.Command{Use: "delete task_type|queue|key NAME", Short: "Remove a limit; the tasks it held back go", Args: cobra.ExactArgs(2)}
	root.AddCommand(clientCommand(m, del, func(ctx context.Context, c *apiClient, args []string) error {
		var out struct {
			Deleted bool `json:"deleted"`
		}
		if err := c.do(ctx, "DELETE", "/api/v1/limits/"+url.PathEscape(args[0])+"/"+url.PathEscape(args[1]), nil, &out); err != nil {
			return err
		}
		what := "limit removed"
		if !out.Deleted {
			what = "no such limit"
		}
		_, err := fmt.Fprintf(m.Stdout, "%s %s: %s\n", args[0], strconv.Quote(args[1]), what)
		return err
	}))
	return root
}
