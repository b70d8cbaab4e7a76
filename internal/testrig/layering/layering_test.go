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
// dashboard and the MCP server. They call internal/frontdoor/service, which applies
// the rules; they never reach the data underneath, neither by an import
// of their own nor through any package they import but the service.
// cmd/taskflow is not listed: it is the composition root (it builds the
// store and every component), and its client commands, in the same
// package main, talk to the API over HTTP (internal/frontend/httpapi's Client).
var frontEnds = []string{"internal/frontend/httpapi", "internal/frontend/webui", "internal/frontend/mcpserver"}

// forbiddenForFrontEnds are what a front end must not reach, directly or
// through another package: the task store, the lifecycle and
// external-service streams, and any Redis client.
var forbiddenForFrontEnds = []string{
	module + "internal/engine/store", module + "internal/external/protocol", module + "internal/engine/eventlog",
	"github.com/redis/", "github.com/alicebob/miniredis", "github.com/gomodule/redigo",
}

// frontDoor is the one way from a front end to the data: internal/frontdoor/service
// applies the rules and holds the store, the streams and the Redis
// client. What a front end reaches through it is the service's business,
// so the walk of a front end's imports does not go past it. Every other
// package a front end imports (identity, stats, clock, task, ...) is
// walked to the end: a package that holds a Redis client or the store is
// a second door, however it is named. So a front end names the
// principal through internal/frontdoor/identity, not internal/frontdoor/auth (which holds
// the sessions' Redis client), the results' types through the service's
// aliases, not internal/external/resultview, and feeds the dashboard's window
// stats.Event values, not lifecycle events.
const frontDoor = module + "internal/frontdoor/service"

// examples are the example services: programs built on the public SDK,
// which the core must not depend on (not even through another package).
var examples = []string{"extsvc/tools"}

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath string
	Imports    []string // direct imports of its non-test files
	Deps       []string // everything it depends on, transitively
}

// reached is a forbidden package a front end reaches, and the packages
// between (none: it imports it itself).
type reached struct {
	pkg string
	via []string
}

// forbiddenReach walks the imports of from breadth first (graph: package
// → its imports), not past the front door nor past a forbidden package,
// and returns each forbidden package it meets once, by its shortest path,
// in the order met.
func forbiddenReach(graph map[string][]string, from string) []reached {
	parent := map[string]string{from: ""}
	queue := []string{from}
	var out []reached
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, imp := range graph[cur] {
			if _, seen := parent[imp]; seen {
				continue
			}
			parent[imp] = cur
			switch {
			case hasPrefix(imp, forbiddenForFrontEnds):
				var via []string
				for p := cur; p != from; p = parent[p] {
					via = append([]string{local(p)}, via...)
				}
				out = append(out, reached{pkg: imp, via: via})
			case imp == frontDoor || strings.HasPrefix(imp, frontDoor+"/"):
			default:
				queue = append(queue, imp)
			}
		}
	}
	return out
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
// package such as internal/frontend/webui/api, were one added, counts as the
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

// violations lists every broken rule of pkgs, one line each. pkgs is the
// import graph: a package's imports that are not in pkgs are not walked.
func violations(pkgs []pkg) []string {
	graph := make(map[string][]string, len(pkgs))
	for _, p := range pkgs {
		graph[p.ImportPath] = p.Imports
	}
	var out []string
	for _, p := range pkgs {
		if isFrontEnd(p.ImportPath) {
			for _, r := range forbiddenReach(graph, p.ImportPath) {
				if len(r.via) == 0 {
					out = append(out, "front end "+local(p.ImportPath)+" imports "+local(r.pkg)+": call internal/frontdoor/service instead")
				} else {
					out = append(out, "front end "+local(p.ImportPath)+" reaches "+local(r.pkg)+" through "+strings.Join(r.via, " → ")+": call internal/frontdoor/service instead")
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
	// -deps: every package the module's depend on, the standard library's
	// and other modules' too, so that the walk from a front end goes
	// through them all
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Deps", module+"...")
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

// TestImportRules walks the module's packages and everything they import.
func TestImportRules(t *testing.T) {
	t.Parallel()
	pkgs := listPackages(t)
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[local(p.ImportPath)] = true
	}
	// the rules have something to bite on
	for _, p := range []string{"internal/frontend/httpapi", "internal/frontdoor/service", "internal/engine/store", "task", "extsvc/tools"} {
		require.True(t, seen[p], "package %s not found: the rules no longer cover the tree", p)
	}
	require.Empty(t, violations(pkgs))
}

// TestViolationsAreFound: the checker reports each kind of breach, for a
// front end that appears later too, and a front end that reaches the
// data through a package other than the service (the MCP server did,
// through internal/external/resultview; both front ends through internal/frontdoor/auth's Redis
// client; the HTTP API through internal/frontend/stats's lifecycle events).
func TestViolationsAreFound(t *testing.T) {
	t.Parallel()
	got := violations([]pkg{
		{ImportPath: module + "internal/frontend/httpapi", Imports: []string{module + "internal/frontdoor/service", module + "internal/engine/store"}},
		{ImportPath: module + "internal/frontend/mcpserver", Imports: []string{"github.com/redis/go-redis/v9"}},
		{ImportPath: module + "internal/frontend/webui", Imports: []string{module + "internal/external/protocol", "net/http"}},
		// the service holds the store and Redis: what it reaches is not
		// the front ends' (httpapi above imports it and is not blamed)
		{ImportPath: module + "internal/frontdoor/service", Imports: []string{module + "internal/external/resultview", module + "internal/engine/store", "github.com/redis/go-redis/v9"},
			Deps: []string{module + "extsvc/param", module + "extsvc/tools"}},
		{ImportPath: module + "internal/engine/worker", Imports: []string{module + "internal/engine/store"}, Deps: []string{module + "internal/engine/store"}},
		{ImportPath: module + "cmd/taskflow", Imports: []string{module + "internal/engine/store"}, Deps: []string{module + "extsvc/tools"}},
		{ImportPath: module + "extsvc/tools", Deps: []string{module + "extsvc"}},
		// transitive: a front end's other imports are walked to the end,
		// through packages of other modules too
		{ImportPath: module + "internal/frontend/mcpserver/tools", Imports: []string{module + "internal/frontdoor/service", module + "internal/external/resultview", "example.com/cache"}},
		{ImportPath: module + "internal/external/resultview", Imports: []string{module + "internal/external/archive", module + "internal/engine/store", "github.com/redis/go-redis/v9"}},
		{ImportPath: module + "internal/external/archive", Imports: []string{module + "internal/engine/eventlog"}},
		{ImportPath: "example.com/cache", Imports: []string{"github.com/gomodule/redigo/redis"}},
		{ImportPath: module + "internal/frontend/webui/api", Imports: []string{module + "internal/frontend/stats", module + "internal/engine/clock"}},
		{ImportPath: module + "internal/frontend/stats", Imports: []string{module + "task", module + "internal/engine/clock"}},
	})
	require.Equal(t, []string{
		"front end internal/frontend/httpapi imports internal/engine/store: call internal/frontdoor/service instead",
		"front end internal/frontend/mcpserver imports github.com/redis/go-redis/v9: call internal/frontdoor/service instead",
		"front end internal/frontend/webui imports internal/external/protocol: call internal/frontdoor/service instead",
		"core package internal/frontdoor/service depends on the example services extsvc/tools",
		"front end internal/frontend/mcpserver/tools reaches internal/engine/store through internal/external/resultview: call internal/frontdoor/service instead",
		"front end internal/frontend/mcpserver/tools reaches github.com/redis/go-redis/v9 through internal/external/resultview: call internal/frontdoor/service instead",
		"front end internal/frontend/mcpserver/tools reaches github.com/gomodule/redigo/redis through example.com/cache: call internal/frontdoor/service instead",
		"front end internal/frontend/mcpserver/tools reaches internal/engine/eventlog through internal/external/resultview → internal/external/archive: call internal/frontdoor/service instead",
	}, got)
}
