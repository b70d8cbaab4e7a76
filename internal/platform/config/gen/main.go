// Command gen writes the configuration table of internal/platform/config into
// README.md, between its config-table markers:
//
//	go run ./internal/platform/config/gen            (from the repository's root)
//	go generate ./internal/platform/config           (the same, through go:generate)
//
// internal/platform/config's tests fail while README.md's table differs.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/taskflow/taskflow/internal/platform/config"
)

func main() {
	readme := flag.String("readme", "", "the README to update (default: README.md of the module's root)")
	flag.Parse()
	if *readme == "" {
		*readme = findReadme()
	}
	if err := run(*readme); err != nil {
		fmt.Fprintln(os.Stderr, "config/gen:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := config.ReplaceTable(old)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(old, out) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}

// findReadme is README.md beside go.mod, from here upwards.
func findReadme() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "README.md")
		}
		if filepath.Dir(d) == d {
			return "README.md"
		}
	}
}
