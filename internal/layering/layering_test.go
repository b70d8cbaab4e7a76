package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/taskflow/taskflow/"

// frontEnds are the packages that serve users: the HTTP API, the web
// dashboard and the MCP server. They call internal/service, which applies
// the rules; they never reach the data underneath. cmd/taskflow is not
// listed: it is the composition root (it builds the store and every
// component), and its client commands, in the same package main, talk to
// the API over HTTP (internal/httpapi's Client).
var frontEnds = []string{"internal/httpapi", "internal/webui", "internal/mcpserver"}

// forbiddenForFrontEnds are what a front end must not import directly:
// the task store, the lifecycle and external-service streams, and any
// Redis client.
var forbiddenForFrontEnds = []string{
	module + "internal/store", module + "internal/stream", module + "internal/lifecycle",
	"github.com/redis/", "github.com/alicebob/miniredis", "github.com/gomodule/redigo",
}

// examples are the example services: programs built on the public SDK,
// which the core must not depend on (not even through another package).
var examples = []string{"extsvc/tools"}

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath string
	Imports    []string // direct imports of its non-test files
	Deps       []string // everything it depends on, transitively
}

func hasPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") || (strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
			return true
		}
	}
	return false
}

func local(path string) string { return strings.TrimPrefix(path, module) }

// isFrontEnd: a package whose path is a front end or under one (a
// package such as internal/webui/api, were one added, counts as the
// dashboard's).
func isFrontEnd(path string) bool {
	for _, f := range frontEnds {
		if p := local(path); p == f || strings.HasPrefix(p, f) {
			return true
		}
	}
	return false
}

// isCore: every internal package that is not a front end, and the SDK.
func isCore(path string) bool {
	p := local(path)
	if p == path || isFrontEnd(path) || hasPrefix(p, examples) {
		return false
	}
	return strings.HasPrefix(p, "internal/") || p == "extsvc" || strings.HasPrefix(p, "extsvc/")
}

// violations lists every broken rule of pkgs, one line each.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		if isFrontEnd(p.ImportPath) {
			for _, imp := range p.Imports {
				if hasPrefix(imp, forbiddenForFrontEnds) {
					out = append(out, "front end "+local(p.ImportPath)+" imports "+local(imp)+": call internal/service instead")
				}
			}
		}
		if isCore(p.ImportPath) {
			for _, dep := range p.Deps {
				if hasPrefix(local(dep), examples) {
					out = append(out, "core package "+local(p.ImportPath)+" depends on the example services "+local(dep))
				}
			}
		}
	}
	return out
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportRules walks the module's packages and their imports.
func TestImportRules(t *testing.T) {
	t.Parallel()
	pkgs := listPackages(t)
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[local(p.ImportPath)] = true
	}
	// the rules have something to bite on
	for _, p := range []string{"internal/httpapi", "internal/service", "internal/store", "task", "extsvc/tools"} {
		require.True(t, seen[p], "package %s not found: the rules no longer cover the tree", p)
	}
	require.Empty(t, violations(pkgs))
}

// TestViolationsAreFound: the checker reports each kind of breach, for a
// front end that appears later too.
func TestViolationsAreFound(t *testing.T) {
	t.Parallel()
	got := violations([]pkg{
		{ImportPath: module + "internal/httpapi", Imports: []string{module + "internal/service", module + "internal/store"}},
		{ImportPath: module + "internal/mcpserver", Imports: []string{"github.com/redis/go-redis/v9"}},
		{ImportPath: module + "internal/webui", Imports: []string{module + "internal/stream", "net/http"}},
		{ImportPath: module + "internal/service", Deps: []string{module + "extsvc/param", module + "extsvc/tools"}},
		{ImportPath: module + "internal/worker", Imports: []string{module + "internal/store"}, Deps: []string{module + "internal/store"}},
		{ImportPath: module + "cmd/taskflow", Imports: []string{module + "internal/store"}, Deps: []string{module + "extsvc/tools"}},
		{ImportPath: module + "extsvc/tools", Deps: []string{module + "extsvc"}},
	})
	require.Equal(t, []string{
		"front end internal/httpapi imports internal/store: call internal/service instead",
		"front end internal/mcpserver imports github.com/redis/go-redis/v9: call internal/service instead",
		"front end internal/webui imports internal/stream: call internal/service instead",
		"core package internal/service depends on the example services extsvc/tools",
	}, got)
}
