package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func init() { register("healthcheck", newHealthcheckCommand) }

// newHealthcheckCommand is `taskflow healthcheck`: a container's health
// probe where the image has no shell or curl (the image is FROM scratch).
// It asks an API process's /live (or --path) and exits 0 on a 200, 1
// otherwise, saying why on stderr.
func newHealthcheckCommand(m *Main) *cobra.Command {
	var url, path string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when the API at --url answers 200 on --path (/live; /ready also checks Redis): a container's probe",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !strings.HasPrefix(path, "/") {
				return &ExitError{Code: 2, Err: fmt.Errorf("--path %q: must start with /", path)}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(url, "/")+path, nil)
			if err != nil {
				return &ExitError{Code: 2, Err: fmt.Errorf("--url %q: %w", url, err)}
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return &ExitError{Code: 1, Err: fmt.Errorf("healthcheck: %w", err)}
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return &ExitError{Code: 1, Err: fmt.Errorf("healthcheck: GET %s%s answered %s", url, path, res.Status)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:8080", "the API process to ask")
	cmd.Flags().StringVar(&path, "path", "/live", "what to ask: /live (the process serves) or /ready (and reaches Redis)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	return cmd
}
