package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

func init() {
	register("dlq", func(m *Main) *cobra.Command {
		var limit, offset int
		var asJSON bool
		cmd := &cobra.Command{
			Use:   "dlq",
			Short: "List the dead-letter queue, newest first (admin)",
			Args:  cobra.NoArgs,
		}
		cmd.Flags().IntVar(&limit, "limit", 20, "entries to show")
		cmd.Flags().IntVar(&offset, "offset", 0, "entries to skip")
		cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")
		return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, _ []string) error {
			q := url.Values{"limit": {strconv.Itoa(limit)}, "offset": {strconv.Itoa(offset)}}
			var raw json.RawMessage
			if err := c.do(ctx, "GET", "/api/v1/queues/dlq?"+q.Encode(), nil, &raw); err != nil {
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
