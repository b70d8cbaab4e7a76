// Package version says which build of taskflow is running: the module
// version and the commit, from the Go build information (stamped by
// `go build` in a git checkout, or `go install module@version`), or from
// -ldflags "-X github.com/taskflow/taskflow/internal/platform/version.commit=<sha>"
// where the build had no VCS information (make build sets it).
package version

import (
	"runtime/debug"
	"strings"
)

// commit is set at link time when the build information has none.
var commit string

// Info is what a binary knows of its own build.
type Info struct {
	// Module is the main module's version: a tag such as v1.2.0 when
	// installed with `go install module@version`, "(devel)" in a checkout.
	Module string
	// Commit is the VCS revision ("" when unknown); Modified says the tree
	// had uncommitted changes.
	Commit   string
	Modified bool
	// Go is the toolchain that built the binary.
	Go string
}

// Read returns the running binary's Info.
func Read() Info {
	in := Info{Module: "(devel)", Commit: commit}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	in.Go = bi.GoVersion
	if v := bi.Main.Version; v != "" {
		in.Module = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is one line for `NAME --version`: "taskflow (devel) commit 1a2b3c4d5e6f go1.26.8".
func (in Info) String() string {
	var b strings.Builder
	b.WriteString(in.Module)
	if in.Commit != "" {
		c := in.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		b.WriteString(" commit " + c)
		if in.Modified {
			b.WriteString(" (modified)")
		}
	} else {
		b.WriteString(" commit unknown")
	}
	if in.Go != "" {
		b.WriteString(" " + in.Go)
	}
	return b.String()
}
