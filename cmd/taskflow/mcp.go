package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/frontend/httpapi"
	"github.com/taskflow/taskflow/internal/frontend/mcpserver"
	"github.com/taskflow/taskflow/internal/platform/app"
	"github.com/taskflow/taskflow/internal/platform/version"
)

// newMCPHandler is the MCP server's streamable HTTP transport over svc;
// close ends its sessions (at shutdown).
func newMCPHandler(svc *service.Service, au *auth.Authenticator, log *slog.Logger) (h http.Handler, close func(), err error) {
	srv, err := mcpserver.New(mcpserver.Config{Service: svc, Auth: au, Version: version.Read().Module, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	h, err = srv.Handler()
	return h, srv.Close, err
}

// mcpMounts serve h at /mcp: POST carries the client's messages, GET opens
// the stream of the server's notifications, DELETE ends the session.
func mcpMounts(h http.Handler) []httpapi.Mount {
	var out []httpapi.Mount
	for _, c := range []struct{ method, summary string }{
		{"POST", "MCP (streamable HTTP): the client's JSON-RPC messages; Authorization: Bearer <session token or admin key> (docs/mcp.md)"},
		{"GET", "MCP (streamable HTTP): the session's stream of server notifications (finished tasks, progress)"},
		{"DELETE", "MCP (streamable HTTP): end the MCP session"},
	} {
		out = append(out, httpapi.Mount{Method: c.method, Path: mcpserver.Path, Access: "public", SelfAuth: true,
			Handler: h, Summary: c.summary, Tag: "mcp"})
	}
	return out
}

func init() {
	register("mcp", func(m *Main) *cobra.Command {
		cfg, envErr := m.config()
		cmd := &cobra.Command{
			Use:   "mcp",
			Short: "Serve the MCP tools over stdio, for a desktop agent (docs/mcp.md)",
			Long: `Speak the Model Context Protocol on stdin/stdout: an agent (Claude Desktop,
any MCP client) gets a tool per task type, get_task_result_tool,
list_user_tasks_tool, cancel_task_tool, wait_for_task_tool and run_plan_tool.
The caller is the session whose token --token or TASKFLOW_TOKEN gives (or the
admin key); without one, a new session is opened at start and kept for the
process's life. Needs REDIS_URL (the deployment's Redis). Logs go to stderr.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if envErr != nil {
					return envErr
				}
				if cfg.RedisURL == "" {
					return &ExitError{Code: 2, Err: errors.New("REDIS_URL is not set: `taskflow mcp` serves the tools of the deployment on that Redis")}
				}
				token := cfg.Token // --token, else TASKFLOW_TOKEN; none: a new session
				ctx := cmd.Context()
				ap, err := app.Open(ctx, cfg, m.Logger)
				if err != nil {
					return err
				}
				defer ap.Close()
				a, err := newAPI(m, ap, false)
				if err != nil {
					return err
				}
				defer a.close()
				var p auth.Principal
				if token != "" {
					if p, err = a.auth.Authenticate(ctx, token); err != nil {
						return &ExitError{Code: 2, Err: fmt.Errorf("--token/TASKFLOW_TOKEN: %w", err)}
					}
				} else {
					sess, err := a.svc.CreateSession(ctx, "mcp-stdio")
					if err != nil {
						return err
					}
					p = auth.Principal{SessionID: sess.ID}
					m.Logger.Info("taskflow mcp: opened a session for this process", "session_id", sess.ID)
				}
				srv, err := mcpserver.New(mcpserver.Config{Service: a.svc, Auth: a.auth, Version: version.Read().Module, Logger: m.Logger})
				if err != nil {
					return err
				}
				runCtx, stop := context.WithCancel(ctx)
				defer stop()
				for _, run := range a.extras.run { // the notification hub (live push)
					go func() { _ = run(runCtx) }()
				}
				return srv.RunStdio(ctx, p, &mcp.IOTransport{Reader: io.NopCloser(m.Stdin), Writer: nopWriteCloser{m.Stdout}})
			},
		}
		cfg.BindFlags(cmd.Flags(), "token")
		return cmd
	})
}

// nopWriteCloser leaves the process's stdout open when the transport closes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
