// Package plans holds the named plans that ship with taskflow: each
// <name>.plan.json is compiled by the DSL from the <name>.plan.ts beside it
// (make plans; make plans-check fails when they differ). They are embedded
// so that rankd and the API find them from any working directory.
package plans

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.plan.json
var files embed.FS

// FS is the embedded plan folder: <name>.plan.json at its root.
func FS() fs.FS { return files }

// Suffix ends every plan file's name.
const Suffix = ".plan.json"

// Names lists the plans in fsys (its root's *.plan.json), sorted.
func Names(fsys fs.FS) ([]string, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, Suffix) {
			out = append(out, strings.TrimSuffix(n, Suffix))
		}
	}
	sort.Strings(out)
	return out, nil
}
