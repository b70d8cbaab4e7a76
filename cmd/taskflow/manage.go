package main

// The client commands that cover the rest of the API: cancel, delete,
// schedules, workers, breakers and notifications. Each is one request (or a
// few) through apiClient; what the API refuses comes back as its message.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func init() {
	register("cancel", newCancelCommand)
	register("delete", newDeleteCommand)
	register("workers", newWorkersCommand)
	register("breaker", newBreakerCommand)
	register("schedules", newSchedulesCommand)
	register("services", newServicesCommand)
	register("notifications", newNotificationsCommand)
}

// newCancelCommand is `taskflow cancel TASK_ID [--wait]`.
func newCancelCommand(m *Main) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:               "cancel TASK_ID",
		Short:             "Cancel a PENDING or ACTIVE task (a running handler is told to stop); --wait until it has",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTaskIDs(m),
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until a running task has stopped (at most 30 s)")
	return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, args []string) error {
		id := args[0]
		var out struct {
			Outcome string `json:"outcome"`
		}
		if err := c.do(ctx, "POST", "/api/v1/tasks/"+url.PathEscape(id)+"/cancel", nil, &out); err != nil {
			return err
		}
		if out.Outcome != "requested" {
			_, err := fmt.Fprintf(m.Stdout, "%s %s\n", id, out.Outcome)
			return err
		}
		if !wait {
			_, err := fmt.Fprintf(m.Stdout, "%s cancel requested: its worker is told to stop (taskflow status %s)\n", id, id)
			return err
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			var t taskDoc
			if err := c.do(ctx, "GET", "/api/v1/tasks/"+url.PathEscape(id), nil, &t); err != nil {
				return err
			}
			if t.State != "ACTIVE" && t.State != "PENDING" {
				_, err := fmt.Fprintf(m.Stdout, "%s %s\n", id, strings.ToLower(t.State))
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s is still %s 30 s after the cancel request (its handler does not stop)", id, t.State)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

// newDeleteCommand is `taskflow delete TASK_ID`.
func newDeleteCommand(m *Main) *cobra.Command {
	cmd := &cobra.Command{
		Use:               "delete TASK_ID",
		Short:             "Delete a task that is not running (its hash, queue entries and result)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTaskIDs(m),
	}
	return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, args []string) error {
		if err := c.do(ctx, "DELETE", "/api/v1/tasks/"+url.PathEscape(args[0]), nil, nil); err != nil {
			return err
		}
		_, err := fmt.Fprintf(m.Stdout, "%s deleted\n", args[0])
		return err
	})
}

// newWorkersCommand is `taskflow workers [--json]`.
func newWorkersCommand(m *Main) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List the live workers and their circuit breakers (admin)",
		Args:  cobra.NoArgs,
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, _ []string) error {
		var raw json.RawMessage
		if err := c.do(ctx, "GET", "/api/v1/workers", nil, &raw); err != nil {
			return err
		}
		if asJSON {
			_, err := fmt.Fprintln(m.Stdout, string(raw))
			return err
		}
		ws, err := decodeWorkers(raw)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(m.Stdout, 0, 2, 2, ' ', 0)
		printWorkers(w, ws)
		return w.Flush()
	})
}

// newBreakerCommand is `taskflow breaker open|reset [DEPENDENCY] [--for SECONDS]`.
func newBreakerCommand(m *Main) *cobra.Command {
	var forSec float64
	cmd := &cobra.Command{
		Use:       "breaker open|reset [DEPENDENCY]",
		Short:     "Open or reset a dependency's circuit breaker on every worker (admin; no DEPENDENCY = all)",
		Args:      cobra.RangeArgs(1, 2),
		ValidArgs: []string{"open", "reset"},
	}
	cmd.Flags().Float64Var(&forSec, "for", 0, "open: seconds the breaker stays open (0 = until a reset)")
	return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, args []string) error {
		if forSec < 0 {
			return fmt.Errorf("--for %v: must not be negative", forSec)
		}
		body := map[string]any{}
		if len(args) == 2 {
			body["dependency"] = args[1]
		}
		var path string
		switch args[0] {
		case "open":
			path = "/api/v1/workers/open-circuit-breaker"
			if forSec > 0 {
				body["duration_seconds"] = forSec
			}
		case "reset":
			path = "/api/v1/workers/reset-circuit-breaker"
			if cmd.Flags().Changed("for") {
				return fmt.Errorf("--for: only `breaker open` takes a duration")
			}
		default:
			return fmt.Errorf("%q: the first argument is open or reset", args[0])
		}
		var raw json.RawMessage
		if err := c.do(ctx, "POST", path, body, &raw); err != nil {
			return err
		}
		_, err := fmt.Fprintln(m.Stdout, string(raw))
		return err
	})
}

// newServicesCommand is `taskflow services [--json]`.
func newServicesCommand(m *Main) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "services",
		Short: "List the external services and whether a live one takes each external task type",
		Args:  cobra.NoArgs,
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, _ []string) error {
		var raw json.RawMessage
		if err := c.do(ctx, "GET", "/api/v1/services", nil, &raw); err != nil {
			return err
		}
		if asJSON {
			_, err := fmt.Fprintln(m.Stdout, string(raw))
			return err
		}
		sv, err := decodeServices(raw)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(m.Stdout, 0, 2, 2, ' ', 0)
		printServices(w, sv)
		return w.Flush()
	})
}

// newNotificationsCommand is `taskflow notifications [--follow]`: a poll of
// the session's notifications, repeated while following.
func newNotificationsCommand(m *Main) *cobra.Command {
	var follow, keepUnread, asJSON bool
	var after string
	var limit int
	cmd := &cobra.Command{
		Use:   "notifications",
		Short: "Show the session's notifications (needs a session token); --follow keeps waiting for new ones",
		Args:  cobra.NoArgs,
	}
	f := cmd.Flags()
	f.BoolVar(&follow, "follow", false, "keep polling for new notifications until interrupted")
	f.BoolVar(&keepUnread, "keep-unread", false, "do not mark what is shown as read")
	f.StringVar(&after, "after", "", "start after this notification id (0 = from the start); default: the unread ones")
	f.IntVar(&limit, "limit", 50, "most notifications per request (1-1000)")
	f.BoolVar(&asJSON, "json", false, "print each notification as a JSON line")
	return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, _ []string) error {
		if limit < 1 || limit > 1000 {
			return fmt.Errorf("--limit %d: must be from 1 to 1000", limit)
		}
		for {
			q := url.Values{"limit": {strconv.Itoa(limit)}, "mark_read": {strconv.FormatBool(!keepUnread)}}
			if after != "" {
				q.Set("after", after)
			}
			var out struct {
				Notifications []json.RawMessage `json:"notifications"`
				Cursor        string            `json:"cursor"`
			}
			if err := c.do(ctx, "GET", "/api/v1/notifications?"+q.Encode(), nil, &out); err != nil {
				return err
			}
			for _, raw := range out.Notifications {
				if err := printNotification(m, raw, asJSON); err != nil {
					return err
				}
			}
			if out.Cursor != "" {
				after = out.Cursor
			}
			if !follow {
				if len(out.Notifications) == 0 && !asJSON {
					fmt.Fprintln(m.Stderr, "no unread notifications")
				}
				return nil
			}
			if len(out.Notifications) < limit {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(time.Second):
				}
			}
		}
	})
}

// printNotification writes one notification: its JSON, or a line with its
// time, type, task and message.
func printNotification(m *Main, raw json.RawMessage, asJSON bool) error {
	if asJSON {
		_, err := fmt.Fprintln(m.Stdout, string(raw))
		return err
	}
	var n struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		TaskID    string `json:"task_id"`
		Message   string `json:"message"`
		Timestamp string `json:"timestamp"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return fmt.Errorf("unexpected notification %s: %w", raw, err)
	}
	_, err := fmt.Fprintf(m.Stdout, "%s  %-16s %s  %s\n", n.Timestamp, n.Type, n.TaskID, n.Message)
	return err
}

type workerDoc struct {
	ID            string            `json:"worker_id"`
	Host          string            `json:"host"`
	Concurrency   int               `json:"concurrency"`
	InFlight      int               `json:"in_flight"`
	HeartbeatAge  float64           `json:"heartbeat_age_seconds"`
	TaskTypes     []string          `json:"task_types"`
	Breakers      map[string]string `json:"circuit_breakers"`
	LastHeartbeat time.Time         `json:"last_heartbeat"`
}

func decodeWorkers(raw json.RawMessage) ([]workerDoc, error) {
	var out struct {
		Workers []workerDoc `json:"workers"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("unexpected answer from GET /api/v1/workers: %w", err)
	}
	return out.Workers, nil
}

func printWorkers(w *tabwriter.Writer, ws []workerDoc) {
	fmt.Fprintln(w, "WORKER\tHOST\tBUSY\tHEARTBEAT\tBREAKERS")
	for _, x := range ws {
		var br []string
		for dep, st := range x.Breakers {
			br = append(br, dep+"="+st)
		}
		sortStrings(br)
		fmt.Fprintf(w, "%s\t%s\t%d/%d\t%.1fs ago\t%s\n", x.ID, x.Host, x.InFlight, x.Concurrency, x.HeartbeatAge, strings.Join(br, " "))
	}
	if len(ws) == 0 {
		fmt.Fprintln(w, "(no live worker: start `taskflow worker` or `taskflow dev`)")
	}
}

func newSchedulesCommand(m *Main) *cobra.Command {
	root := &cobra.Command{
		Use:   "schedules",
		Short: "List, create, show and delete recurring tasks (cron)",
	}
	var asJSON bool
	list := &cobra.Command{Use: "list", Short: "List the schedules (a session sees its own)", Args: cobra.NoArgs}
	list.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
	root.AddCommand(clientCommand(m, list, func(ctx context.Context, c *apiClient, _ []string) error {
		var raw json.RawMessage
		if err := c.do(ctx, "GET", "/api/v1/schedules", nil, &raw); err != nil {
			return err
		}
		if asJSON {
			_, err := fmt.Fprintln(m.Stdout, string(raw))
			return err
		}
		var out struct {
			Schedules []struct {
				ID        string    `json:"schedule_id"`
				Cron      string    `json:"cron"`
				TaskType  string    `json:"task_type"`
				NextRunAt time.Time `json:"next_run_at"`
			} `json:"schedules"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return err
		}
		w := tabwriter.NewWriter(m.Stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(w, "SCHEDULE\tCRON\tTASK TYPE\tNEXT RUN (UTC)")
		for _, s := range out.Schedules {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.ID, s.Cron, s.TaskType, s.NextRunAt.UTC().Format("2006-01-02 15:04:05"))
		}
		fmt.Fprintf(w, "(%d)\n", len(out.Schedules))
		return w.Flush()
	}))

	var id, cronExpr, taskType, params, content, priority string
	var timeout int
	create := &cobra.Command{
		Use:   "create --cron EXPR --type TYPE",
		Short: "Create a schedule: one task of TYPE at every due time of the cron expression (UTC)",
		Args:  cobra.NoArgs,
		Example: `  taskflow schedules create --id nightly --cron '0 3 * * *' --type noop
  taskflow schedules create --cron '@every 30s' --type summarize --content 'Some text. More text.'`,
	}
	cf := create.Flags()
	cf.StringVar(&id, "id", "", "schedule id (1-64 of A-Z a-z 0-9 _ -; default a UUID)")
	cf.StringVar(&cronExpr, "cron", "", "5-field cron expression (minute hour day month weekday) or @hourly, @daily, @every 30s")
	cf.StringVar(&taskType, "type", "", "task type of the tasks it creates")
	cf.StringVar(&params, "params", "", "params of the tasks, a JSON object")
	cf.StringVar(&content, "content", "", "content of the tasks (summarize needs it)")
	cf.StringVar(&priority, "priority", "", "high, normal or low")
	cf.IntVar(&timeout, "timeout", 0, "attempt timeout of the tasks, whole seconds (1-86400; default the server's)")
	_ = create.RegisterFlagCompletionFunc("type", completeTaskTypes(m))
	_ = create.RegisterFlagCompletionFunc("priority", cobra.FixedCompletions([]string{"high", "normal", "low"}, cobra.ShellCompDirectiveNoFileComp))
	root.AddCommand(clientCommand(m, create, func(ctx context.Context, c *apiClient, _ []string) error {
		if cronExpr == "" {
			return fmt.Errorf("--cron is required (e.g. --cron '0 3 * * *')")
		}
		if taskType == "" {
			return fmt.Errorf("--type is required (the task type of the tasks it creates)")
		}
		body := map[string]any{"cron": cronExpr, "task_type": taskType}
		if id != "" {
			body["id"] = id
		}
		if params != "" {
			var p json.RawMessage
			if err := json.Unmarshal([]byte(params), &p); err != nil {
				return fmt.Errorf("--params: not JSON: %w", err)
			}
			body["params"] = p
		}
		if content != "" {
			body["content"] = content
		}
		if priority != "" {
			body["priority"] = priority
		}
		if create.Flags().Changed("timeout") {
			if timeout < 1 {
				return fmt.Errorf("--timeout %d: must be at least 1 second", timeout)
			}
			body["timeout"] = timeout
		}
		var out struct {
			ID        string    `json:"schedule_id"`
			NextRunAt time.Time `json:"next_run_at"`
		}
		if err := c.do(ctx, "POST", "/api/v1/schedules", body, &out); err != nil {
			return err
		}
		_, err := fmt.Fprintf(m.Stdout, "schedule %s created; next run %s UTC\n", out.ID, out.NextRunAt.UTC().Format("2006-01-02 15:04:05"))
		return err
	}))

	show := &cobra.Command{Use: "show SCHEDULE_ID", Short: "Show one schedule as JSON", Args: cobra.ExactArgs(1),
		ValidArgsFunction: completeScheduleIDs(m)}
	root.AddCommand(clientCommand(m, show, func(ctx context.Context, c *apiClient, args []string) error {
		var raw json.RawMessage
		if err := c.do(ctx, "GET", "/api/v1/schedules/"+url.PathEscape(args[0]), nil, &raw); err != nil {
			return err
		}
		_, err := fmt.Fprintln(m.Stdout, string(raw))
		return err
	}))

	del := &cobra.Command{Use: "delete SCHEDULE_ID", Short: "Delete a schedule (the tasks it created stay)", Args: cobra.ExactArgs(1),
		ValidArgsFunction: completeScheduleIDs(m)}
	root.AddCommand(clientCommand(m, del, func(ctx context.Context, c *apiClient, args []string) error {
		if err := c.do(ctx, "DELETE", "/api/v1/schedules/"+url.PathEscape(args[0]), nil, nil); err != nil {
			return err
		}
		_, err := fmt.Fprintf(m.Stdout, "schedule %s deleted\n", args[0])
		return err
	}))
	return root
}

type servicesDoc struct {
	Services []struct {
		Name          string     `json:"name"`
		Types         []string   `json:"task_types"`
		Online        bool       `json:"online"`
		LastHeartbeat *time.Time `json:"last_heartbeat"`
	} `json:"services"`
	ExternalTypes []struct {
		TaskType string   `json:"task_type"`
		Online   bool     `json:"online"`
		Services []string `json:"services"`
	} `json:"external_types"`
}

func decodeServices(raw json.RawMessage) (servicesDoc, error) {
	var out servicesDoc
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("unexpected answer from GET /api/v1/services: %w", err)
	}
	return out, nil
}

func printServices(w *tabwriter.Writer, sv servicesDoc) {
	fmt.Fprintln(w, "EXTERNAL TYPE\tSERVICE")
	for _, t := range sv.ExternalTypes {
		who := strings.Join(t.Services, ", ")
		if !t.Online {
			who = "none running: its tasks wait (taskflow service NAME, or taskflow dev --services)"
		}
		fmt.Fprintf(w, "%s\t%s\n", t.TaskType, who)
	}
}
