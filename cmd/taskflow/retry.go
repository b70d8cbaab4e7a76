package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

func init() {
	register("retry", func(m *Main) *cobra.Command {
		cmd := &cobra.Command{
			Use:               "retry TASK_ID",
			Short:             "Retry a FAILED or DLQ task (it goes to the retry queue with retry_count 0)",
			Args:              cobra.ExactArgs(1),
			ValidArgsFunction: completeTaskIDs(m),
		}
		return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, args []string) error {
			var out struct {
				TaskID string `json:"task_id"`
				State  string `json:"state"`
			}
			if err := c.do(ctx, "POST", "/api/v1/tasks/"+args[0]+"/retry", nil, &out); err != nil {
				return err
			}
			_, err := fmt.Fprintf(m.Stdout, "%s %s\n", out.TaskID, out.State)
			return err
		})
	})
}
