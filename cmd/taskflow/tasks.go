package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func init() {
	register("tasks", func(m *Main) *cobra.Command {
		var status, taskType, sortBy, order string
		var limit, page int
		var asJSON bool
		cmd := &cobra.Command{
			Use:   "tasks",
			Short: "List tasks (the admin sees all, a session its own)",
			Args:  cobra.NoArgs,
		}
		cmd.Flags().StringVar(&status, "status", "", "only this state (PENDING, ACTIVE, COMPLETED, FAILED, DLQ, TIMEOUT, CANCELLED)")
		cmd.Flags().StringVar(&taskType, "type", "", "only this task type")
		cmd.Flags().IntVar(&limit, "limit", 20, "page size")
		cmd.Flags().IntVar(&page, "page", 1, "page number")
		cmd.Flags().StringVar(&sortBy, "sort-by", "", "created_at or updated_at")
		cmd.Flags().StringVar(&order, "order", "", "asc or desc")
		cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
		_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(stateNames(), cobra.ShellCompDirectiveNoFileComp))
		_ = cmd.RegisterFlagCompletionFunc("type", completeTaskTypes(m))
		_ = cmd.RegisterFlagCompletionFunc("sort-by", cobra.FixedCompletions([]string{"created_at", "updated_at"}, cobra.ShellCompDirectiveNoFileComp))
		_ = cmd.RegisterFlagCompletionFunc("order", cobra.FixedCompletions([]string{"asc", "desc"}, cobra.ShellCompDirectiveNoFileComp))
		return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, _ []string) error {
			if limit < 1 {
				return fmt.Errorf("--limit %d: must be at least 1", limit)
			}
			if page < 1 {
				return fmt.Errorf("--page %d: must be at least 1", page)
			}
			q := url.Values{"summary": {"true"}, "page_size": {strconv.Itoa(limit)}, "page": {strconv.Itoa(page)}}
			for k, v := range map[string]string{"status": status, "task_type": taskType, "sort_by": sortBy, "sort_order": order} {
				if v != "" {
					q.Set(k, v)
				}
			}
			var raw json.RawMessage
			if err := c.do(ctx, "GET", "/api/v1/tasks?"+q.Encode(), nil, &raw); err != nil {
				return err
			}
			if asJSON {
				_, err := fmt.Fprintln(m.Stdout, string(raw))
				return err
			}
			var out struct {
				Tasks []taskDoc `json:"tasks"`
				Total int64     `json:"total"`
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				return err
			}
			return printTasks(m, out.Tasks, out.Total)
		})
	})
}

func printTasks(m *Main, ts []taskDoc, total int64) error {
	w := tabwriter.NewWriter(m.Stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(w, "TASK_ID\tTYPE\tSTATE\tRETRIES\tUPDATED\tLAST ERROR")
	for _, t := range ts {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\t%s\t%s\n", t.ID, t.Type, t.shownState(), t.RetryCount, t.MaxRetries,
			t.UpdatedAt.Format("01-02 15:04:05"), short(t.LastError, 60))
	}
	fmt.Fprintf(w, "(%d of %d)\n", len(ts), total)
	return w.Flush()
}
