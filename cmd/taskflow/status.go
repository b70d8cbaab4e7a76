package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func init() {
	register("status", func(m *Main) *cobra.Command {
		var asJSON bool
		cmd := &cobra.Command{
			Use:               "status [TASK_ID]",
			Short:             "Show queue depths and tasks per state, or one task's state",
			Args:              cobra.MaximumNArgs(1),
			ValidArgsFunction: completeTaskIDs(m),
		}
		cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
		return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, args []string) error {
			if len(args) == 1 {
				var raw json.RawMessage
				if err := c.do(ctx, "GET", "/api/v1/tasks/"+args[0], nil, &raw); err != nil {
					return err
				}
				if asJSON {
					_, err := fmt.Fprintln(m.Stdout, string(raw))
					return err
				}
				var t taskDoc
				if err := json.Unmarshal(raw, &t); err != nil {
					return err
				}
				w := tabwriter.NewWriter(m.Stdout, 0, 2, 2, ' ', 0)
				fmt.Fprintf(w, "task\t%s\ntype\t%s\nstate\t%s\nretries\t%d/%d\ncreated\t%s\nupdated\t%s\n",
					t.ID, t.Type, t.shownState(), t.RetryCount, t.MaxRetries, t.CreatedAt.Format("2006-01-02 15:04:05.000"), t.UpdatedAt.Format("2006-01-02 15:04:05.000"))
				if t.LastError != "" {
					fmt.Fprintf(w, "last error\t%s: %s\n", t.ErrorType, t.LastError)
				}
				if t.WaitingFor != nil {
					fmt.Fprintf(w, "waiting\t%s\n", t.WaitingFor.Message)
				}
				if len(t.Result) > 0 && string(t.Result) != "null" {
					fmt.Fprintf(w, "result\t%s\n", short(string(t.Result), 200))
				}
				return w.Flush()
			}
			var qs struct {
				Queues     map[string]int64 `json:"queues"`
				States     map[string]int64 `json:"states"`
				RetryRatio float64          `json:"retry_ratio"`
				Pressure   string           `json:"pressure"`
			}
			var raw json.RawMessage
			if err := c.do(ctx, "GET", "/api/v1/queues/status", nil, &raw); err != nil {
				return err
			}
			if asJSON {
				_, err := fmt.Fprintln(m.Stdout, string(raw))
				return err
			}
			if err := json.Unmarshal(raw, &qs); err != nil {
				return err
			}
			w := tabwriter.NewWriter(m.Stdout, 0, 2, 2, ' ', 0)
			fmt.Fprintln(w, "QUEUE\tDEPTH")
			for _, q := range []string{"primary", "retry", "scheduled", "dlq"} {
				fmt.Fprintf(w, "%s\t%d\n", q, qs.Queues[q])
			}
			fmt.Fprintln(w, "\nSTATE\tTASKS")
			states := make([]string, 0, len(qs.States))
			for s := range qs.States {
				states = append(states, s)
			}
			sort.Strings(states)
			for _, s := range states {
				fmt.Fprintf(w, "%s\t%d\n", s, qs.States[s])
			}
			fmt.Fprintf(w, "\nretry ratio\t%.2f (%s)\n", qs.RetryRatio, qs.Pressure)
			// the named queues, once a deployment uses more than the
			// default one or pauses something (operator)
			var qraw json.RawMessage
			if err := c.do(ctx, "GET", "/api/v1/queues", nil, &qraw); err == nil {
				var ql queueListDoc
				if json.Unmarshal(qraw, &ql) == nil && (len(ql.Queues) > 1 || len(ql.PausedTaskTypes) > 0 || (len(ql.Queues) == 1 && ql.Queues[0].Paused)) {
					fmt.Fprintln(w)
					printQueues(w, ql)
				}
			}
			// the external services, and the workers when the token may
			// see them (the admin)
			var sraw json.RawMessage
			if err := c.do(ctx, "GET", "/api/v1/services", nil, &sraw); err == nil {
				if sv, err := decodeServices(sraw); err == nil {
					fmt.Fprintln(w)
					printServices(w, sv)
				}
			}
			var wraw json.RawMessage
			if err := c.do(ctx, "GET", "/api/v1/workers", nil, &wraw); err == nil {
				if ws, err := decodeWorkers(wraw); err == nil {
					fmt.Fprintln(w)
					printWorkers(w, ws)
				}
			}
			return w.Flush()
		})
	})
}
