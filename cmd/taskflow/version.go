package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func init() {
	register("version", func(m *Main) *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "Print the taskflow version",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				_, err := fmt.Fprintln(m.Stdout, "taskflow", version)
				return err
			},
		}
	})
}
