package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func init() { register("session", newSessionCommand) }

// newSessionCommand is `taskflow session new`: a session of its own for
// a script or a person, its token on stdout alone so that
// `export TASKFLOW_TOKEN=$(taskflow session new)` is the whole step.
func newSessionCommand(m *Main) *cobra.Command {
	root := &cobra.Command{
		Use:   "session",
		Short: "Open a session (a token that sees only its own tasks and gets their notifications)",
		Args:  cobra.NoArgs,
	}
	var asJSON bool
	create := &cobra.Command{
		Use:   "new",
		Short: "Open a session and print its token (export TASKFLOW_TOKEN=$(taskflow session new))",
		Args:  cobra.NoArgs,
	}
	create.Flags().BoolVar(&asJSON, "json", false, "print the whole answer (token, session_id, expires_at) as JSON")
	root.AddCommand(clientCommand(m, create, func(ctx context.Context, c *apiClient, _ []string) error {
		var raw json.RawMessage
		if err := c.do(ctx, "POST", "/api/v1/sessions", nil, &raw); err != nil {
			return err
		}
		if asJSON {
			_, err := fmt.Fprintln(m.Stdout, string(raw))
			return err
		}
		var s struct {
			Token     string    `json:"token"`
			SessionID string    `json:"session_id"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		if err := json.Unmarshal(raw, &s); err != nil || s.Token == "" {
			return fmt.Errorf("unexpected answer from POST /api/v1/sessions: %s", raw)
		}
		fmt.Fprintf(m.Stderr, "session %s, until %s\n", s.SessionID, s.ExpiresAt.Local().Format("2006-01-02 15:04"))
		_, err := fmt.Fprintln(m.Stdout, s.Token)
		return err
	}))
	return root
}
