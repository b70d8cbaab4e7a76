package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/taskflow/taskflow/internal/platform/version"
)

func init() {
	register("version", func(m *Main) *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "Print the taskflow version: module version, commit, Go toolchain",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				_, err := fmt.Fprintln(m.Stdout, "taskflow", version.Read())
				return err
			},
		}
	})
}
