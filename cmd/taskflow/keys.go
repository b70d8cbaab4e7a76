package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func init() {
	register("keys", newKeysCommand)
	register("audit", newAuditCommand)
}

type keyDoc struct {
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
	Key       string    `json:"key"`
}

// newKeysCommand is `taskflow keys create|list|revoke`: named API keys
// with a role (the admin role's; TASKFLOW_TOKEN an admin key).
func newKeysCommand(m *Main) *cobra.Command {
	root := &cobra.Command{Use: "keys", Short: "Named API keys with a role: admin, operator (acts, no keys), viewer (reads)", Args: cobra.NoArgs}
	var role string
	create := &cobra.Command{Use: "create NAME --role admin|operator|viewer", Short: "Create a key; prints it once, on stdout", Args: cobra.ExactArgs(1)}
	create.Flags().StringVar(&role, "role", "", "admin, operator or viewer")
	_ = create.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"admin", "operator", "viewer"}, cobra.ShellCompDirectiveNoFileComp))
	root.AddCommand(clientCommand(m, create, func(ctx context.Context, c *apiClient, args []string) error {
		if role == "" {
			return fmt.Errorf("--role: required (admin, operator or viewer)")
		}
		var k keyDoc
		if err := c.do(ctx, "POST", "/api/v1/keys", map[string]string{"name": args[0], "role": role}, &k); err != nil {
			return err
		}
		fmt.Fprintf(m.Stderr, "key %s (%s) created; it is shown this once: keep it\n", k.Name, k.Role)
		_, err := fmt.Fprintln(m.Stdout, k.Key)
		return err
	}))
	list := &cobra.Command{Use: "list", Short: "List the keys (never the keys themselves)", Args: cobra.NoArgs}
	root.AddCommand(clientCommand(m, list, func(ctx context.Context, c *apiClient, _ []string) error {
		var out struct {
			Keys []keyDoc `json:"keys"`
		}
		if err := c.do(ctx, "GET", "/api/v1/keys", nil, &out); err != nil {
			return err
		}
		w := tabwriter.NewWriter(m.Stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tROLE\tCREATED\tBY")
		for _, k := range out.Keys {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", k.Name, k.Role, k.CreatedAt.Local().Format("2006-01-02 15:04"), k.CreatedBy)
		}
		if len(out.Keys) == 0 {
			fmt.Fprintln(w, "(no named keys: taskflow keys create NAME --role viewer)")
		}
		return w.Flush()
	}))
	revoke := &cobra.Command{Use: "revoke NAME", Short: "Revoke a key (refused within 10 s everywhere)", Args: cobra.ExactArgs(1)}
	root.AddCommand(clientCommand(m, revoke, func(ctx context.Context, c *apiClient, args []string) error {
		var k keyDoc
		if err := c.do(ctx, "DELETE", "/api/v1/keys/"+url.PathEscape(args[0]), nil, &k); err != nil {
			return err
		}
		_, err := fmt.Fprintf(m.Stdout, "revoked %s (%s)\n", k.Name, k.Role)
		return err
	}))
	return root
}

// newAuditCommand is `taskflow audit`: the audit trail, newest first.
func newAuditCommand(m *Main) *cobra.Command {
	var actor, before string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{Use: "audit", Short: "The audit trail: changes made with the admin key or named keys, newest first", Args: cobra.NoArgs}
	cmd.Flags().StringVar(&actor, "actor", "", "only this key's (or admin's) changes")
	cmd.Flags().StringVar(&before, "before", "", "older than this entry id (the next page)")
	cmd.Flags().IntVar(&limit, "limit", 50, "entries (1-1000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return clientCommand(m, cmd, func(ctx context.Context, c *apiClient, _ []string) error {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if actor != "" {
			q.Set("actor", actor)
		}
		if before != "" {
			q.Set("before", before)
		}
		var raw json.RawMessage
		if err := c.do(ctx, "GET", "/api/v1/audit?"+q.Encode(), nil, &raw); err != nil {
			return err
		}
		if asJSON {
			_, err := fmt.Fprintln(m.Stdout, string(raw))
			return err
		}
		var page struct {
			Entries []struct {
				At     time.Time `json:"at"`
				Actor  string    `json:"actor"`
				Role   string    `json:"role"`
				Action string    `json:"action"`
				Target string    `json:"target"`
			} `json:"entries"`
			Next string `json:"next"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("unexpected answer from GET /api/v1/audit: %w", err)
		}
		w := tabwriter.NewWriter(m.Stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(w, "AT\tACTOR\tROLE\tACTION\tTARGET")
		for _, e := range page.Entries {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", e.At.Local().Format("2006-01-02 15:04:05"), e.Actor, e.Role, e.Action, e.Target)
		}
		if page.Next != "" {
			fmt.Fprintf(w, "(more: --before %s)\n", page.Next)
		}
		return w.Flush()
	})
}
