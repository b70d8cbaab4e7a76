package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/planapi"
	shipped "github.com/taskflow/taskflow/plans"
)

func TestPlanRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxBody: 4096})
	s := b.session()
	r := b.do("POST", "/api/v1/plans/follows/execute", s.Token, map[string]any{"user_id": 1, "request_id": "r1"})
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, "r1", r.body["request_id"])
	require.Contains(t, r.body, "candidates")

	long := strings.Repeat("p", 300)
	for _, tc := range []struct {
		name, path string
		status     int
		code       string
	}{
		{"FileSystemTooLong", "/api/v1/plans/" + long + "/execute", 400, "invalid_plan_name"},
		{"JustTooLong", "/api/v1/plans/" + strings.Repeat("p", planapi.MaxNameLen+1) + "/execute", 400, "invalid_plan_name"},
		{"Longest", "/api/v1/plans/" + strings.Repeat("p", planapi.MaxNameLen) + "/execute", 404, "plan_not_found"},
		{"Dots", "/api/v1/plans/..%2Ffollows/execute", 400, "invalid_plan_name"},
		{"Space", "/api/v1/plans/fol%20lows/execute", 400, "invalid_plan_name"},
		{"Unicode", "/api/v1/plans/f%C3%B6llows/execute", 400, "invalid_plan_name"},
		{"Nul", "/api/v1/plans/f%00/execute", 400, "invalid_plan_name"},
		{"Unknown", "/api/v1/plans/nothere/execute", 404, "plan_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.with(t).do("POST", tc.path, s.Token, map[string]any{"user_id": 1})
			require.Equal(t, tc.status, r.code, string(r.raw))
			require.Equal(t, tc.code, r.errCode())
			require.Equal(t, "name", r.errField())
			require.NotContains(t, string(r.raw), long, "the name is not echoed whole")
		})
	}

	r = b.do("POST", "/api/v1/plans/follows/execute", s.Token, map[string]any{"user_id": 1, "nope": 1})
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "nope", r.errField())
	r = b.do("POST", "/api/v1/plans/follows/execute", s.Token, `{"user_id":1,"request_id":"`+strings.Repeat("x", 5000)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, r.code)
	require.Equal(t, "body_too_large", r.errCode())
	r = b.do("GET", "/api/v1/plans/follows/execute", s.Token, nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.code)
	require.Equal(t, "POST", r.hdr.Get("Allow"))
	require.Equal(t, http.StatusUnauthorized, b.do("POST", "/api/v1/plans/follows/execute", "", map[string]any{"user_id": 1}).code)
}

// TestPlanTaskCheckedAtSubmit: a plan task whose run could only fail (bad
// or unknown plan name, bad request fields) is refused at submit with the
// params field, by the same name rule as the route.
func TestPlanTaskCheckedAtSubmit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.session()
	for _, tc := range []struct {
		name   string
		params any
		field  string
	}{
		{"LongName", map[string]any{"plan_name": strings.Repeat("p", 300), "user_id": 1}, "params.plan_name"},
		{"OddName", map[string]any{"plan_name": "../etc/passwd", "user_id": 1}, "params.plan_name"},
		{"UnknownPlan", map[string]any{"plan_name": "nothere", "user_id": 1}, "params.plan_name"},
		{"NoName", map[string]any{"user_id": 1}, "params.plan_name"},
		{"NoUser", map[string]any{"plan_name": "follows"}, "params.user_id"},
		{"UnknownField", map[string]any{"plan_name": "follows", "user_id": 1, "deadline": 5}, "params.deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.with(t).do("POST", "/api/v1/tasks", s.Token, map[string]any{"task_type": "plan", "params": tc.params})
			require.Equal(t, http.StatusUnprocessableEntity, r.code, string(r.raw))
			require.Equal(t, tc.field, r.errField(), string(r.raw))
		})
	}
	r := b.do("POST", "/api/v1/tasks", s.Token, map[string]any{"task_type": "plan", "params": map[string]any{"plan_name": "follows", "user_id": 1}})
	require.Equal(t, http.StatusCreated, r.code, string(r.raw))
}

// TestWrongMethodOnLiteralPath: a literal path asked with a method it does
// not serve is a 405 with Allow, not a wildcard route's 404 (GET
// /api/v1/tasks/summarize is not a task named "summarize").
func TestWrongMethodOnLiteralPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.session()
	for _, tc := range []struct{ method, path, allow string }{
		{"GET", "/api/v1/tasks/summarize", "POST"},
		{"DELETE", "/api/v1/tasks/summarize/", "POST"},
		{"GET", "/api/v1/tasks/requeue-orphaned", "POST"},
		{"DELETE", "/api/v1/sessions", "GET, POST"},
	} {
		r := b.do(tc.method, tc.path, s.Token, nil)
		require.Equal(t, http.StatusMethodNotAllowed, r.code, "%s %s: %s", tc.method, tc.path, r.raw)
		require.Equal(t, tc.allow, r.hdr.Get("Allow"), "%s %s", tc.method, tc.path)
		require.Equal(t, "method_not_allowed", r.errCode())
	}
	// the wildcard still serves every other id
	r := b.do("GET", "/api/v1/tasks/summarizer", s.Token, nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "task_not_found", r.errCode())
}

// FuzzPlanRoute runs plans of arbitrary names: the answer is a run, or a
// 400/404 naming the name, never a 5xx (a name never reaches the file
// system unchecked).
func FuzzPlanRoute(f *testing.F) {
	for _, s := range []string{"follows", "", "..", "a.b", strings.Repeat("x", 255), strings.Repeat("y", 4096), "f%00", "ö", "a/b", "follows ", "CON", "_"} {
		f.Add(s)
	}
	b := setup(f)
	f.Fuzz(func(t *testing.T, name string) {
		b := b.with(t)
		r := b.do("POST", "/api/v1/plans/"+url.PathEscape(name)+"/execute", adminKey, `{"user_id":1}`)
		switch r.code {
		case http.StatusOK:
			require.Equal(t, "follows", name)
		case http.StatusBadRequest, http.StatusNotFound:
			require.Contains(t, []string{"name", ""}, r.errField(), "%q → %s", name, r.raw)
		case http.StatusMethodNotAllowed: // a name with "/" routes elsewhere
		default:
			t.Fatalf("%q → %d %s", name, r.code, r.raw)
		}
	})
}

// brokenPlan has a cycle: it parses but does not compile.
const brokenPlan = `{"schema_version":1,"plan_name":"broken","nodes":[
 {"node_id":"a","op":"core::take","inputs":["b"],"params":{"count":1}},
 {"node_id":"b","op":"core::take","inputs":["a"],"params":{"count":1}}],"outputs":["a"]}`

// backwards is testPlan with its nodes written after the nodes that read
// them: the graph still lists each node after its dependencies.
const backwards = `{"schema_version":1,"plan_name":"backwards","nodes":[
 {"node_id":"f","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":3}},
 {"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}}],"outputs":["f"]}`

// withShippedPlans puts the plans built into the binary into the bundle's
// plan directory beside follows, with brokenPlan, backwards and a file
// whose name no request could use; it returns the names a list should show.
func withShippedPlans(t *testing.T, b *testBundle) []string {
	t.Helper()
	names, err := shipped.Names(shipped.FS())
	require.NoError(t, err)
	for _, n := range names {
		data, err := fs.ReadFile(shipped.FS(), n+shipped.Suffix)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(b.plans, n+shipped.Suffix), data, 0o600))
	}
	for name, src := range map[string]string{"broken": brokenPlan, "backwards": backwards, "not-a-name": testPlan} {
		require.NoError(t, os.WriteFile(filepath.Join(b.plans, name+shipped.Suffix), []byte(src), 0o600))
	}
	want := append(names, "follows", "broken", "backwards")
	sort.Strings(want)
	return want
}

// shippedPlan parses the repository's plans/<name>.plan.json.
func shippedPlan(t *testing.T, name string) *plan.Plan {
	t.Helper()
	data, err := fs.ReadFile(shipped.FS(), name+shipped.Suffix)
	require.NoError(t, err)
	p, err := plan.Parse(data, name)
	require.NoError(t, err)
	return p
}

// TestPlanList: GET /api/v1/plans lists every plan of the directory by
// name with its counts, a plan that does not compile with its error, and
// leaves out a file no request could name.
func TestPlanList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	want := withShippedPlans(t, b)
	s := b.session()
	r := b.do("GET", "/api/v1/plans", s.Token, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	conforms(t, b, "PlanList", r.body)
	var got []string
	byName := map[string]map[string]any{}
	for _, x := range r.body["plans"].([]any) {
		m := x.(map[string]any)
		got = append(got, m["name"].(string))
		byName[m["name"].(string)] = m
	}
	require.Equal(t, want, got, "sorted by name")
	require.Contains(t, got, "complex_dag")
	dag := shippedPlan(t, "complex_dag")
	require.Equal(t, map[string]any{"name": "complex_dag", "nodes": float64(len(dag.Nodes)), "outputs": float64(len(dag.Outputs))}, byName["complex_dag"])
	require.Equal(t, map[string]any{"name": "follows", "nodes": 2.0, "outputs": 1.0}, byName["follows"])
	require.Len(t, byName["broken"], 2, "name and error, no counts: %v", byName["broken"])
	require.Contains(t, byName["broken"]["error"], "Plan contains a cycle")

	require.Equal(t, http.StatusOK, b.do("GET", "/api/v1/plans", adminKey, nil).code)
	require.Equal(t, http.StatusUnauthorized, b.do("GET", "/api/v1/plans", "", nil).code)
	r = b.do("GET", "/api/v1/plans?x=1", s.Token, nil)
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "x", r.errField())
	r = b.do("POST", "/api/v1/plans", s.Token, nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.code)
	require.Equal(t, "GET", r.hdr.Get("Allow"))
}

// TestPlanGraph: GET /api/v1/plans/{name} is the plan file's DAG: every
// node with its op, its kind, the nodes it reads (inputs, then node
// references) and whether it is an output, each after its dependencies.
func TestPlanGraph(t *testing.T) {
	t.Parallel()
	b := setup(t)
	withShippedPlans(t, b)
	s := b.session()
	cat := plan.NewCatalog()
	for _, name := range []string{"complex_dag", "diamond", "parallel_fanout", "mixed_pipeline"} {
		r := b.do("GET", "/api/v1/plans/"+name, s.Token, nil)
		require.Equal(t, http.StatusOK, r.code, string(r.raw))
		conforms(t, b, "PlanGraph", r.body)
		require.Equal(t, name, r.body["name"])

		// what the file says, with the op catalog for kinds and node references
		p := shippedPlan(t, name)
		type node struct {
			Op, Kind string
			Deps     []string
			Output   bool
		}
		want, wantOrder, endpoints := map[string]node{}, []string{}, map[string]bool{}
		for _, ns := range p.Nodes {
			op, _ := cat.Lookup(ns.Op)
			require.NotNil(t, op, ns.Op)
			n := node{Op: op.Name, Kind: op.Kind.String(), Deps: append([]string{}, ns.Inputs...), Output: slices.Contains(p.Outputs, ns.ID)}
			for _, ps := range op.Params {
				var ref string
				if ps.Type == plan.PNodeRef && json.Unmarshal(ns.Params[ps.Name], &ref) == nil {
					n.Deps = append(n.Deps, ref)
				}
			}
			var ep string
			if json.Unmarshal(ns.Params["endpoint"], &ep) == nil {
				endpoints[ep] = true
			}
			want[ns.ID], wantOrder = n, append(wantOrder, ns.ID)
		}
		got, gotOrder, seen := map[string]node{}, []string{}, map[string]bool{}
		for _, x := range r.body["nodes"].([]any) {
			m := x.(map[string]any)
			n := node{Op: m["op"].(string), Kind: m["kind"].(string), Output: m["output"].(bool), Deps: []string{}}
			for _, d := range m["deps"].([]any) {
				require.True(t, seen[d.(string)], "%s: %s is listed before %s, which it reads", name, m["id"], d)
				n.Deps = append(n.Deps, d.(string))
			}
			seen[m["id"].(string)] = true
			got[m["id"].(string)], gotOrder = n, append(gotOrder, m["id"].(string))
		}
		require.Equal(t, want, got, name)
		require.Equal(t, wantOrder, gotOrder, "%s: the DSL writes nodes in order; the graph keeps it", name)
		var outs []string
		for _, o := range r.body["outputs"].([]any) {
			outs = append(outs, o.(string))
		}
		require.Equal(t, p.Outputs, outs, name)
		var eps []string
		for _, e := range r.body["endpoints"].([]any) {
			require.True(t, endpoints[e.(string)], "%s: endpoint %s", name, e)
			eps = append(eps, e.(string))
		}
		require.Len(t, eps, len(endpoints), name)
	}

	// a hand-written plan whose nodes come before their inputs
	r := b.do("GET", "/api/v1/plans/backwards", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.JSONEq(t, `{"name":"backwards","nodes":[
		{"id":"v","op":"core::viewer","kind":"IO","deps":[],"output":false},
		{"id":"f","op":"core::follow","kind":"IO","deps":["v"],"output":true}],
		"outputs":["f"],"endpoints":["ep_0001"]}`, string(r.raw))

	for _, tc := range []struct {
		path        string
		status      int
		code, field string
	}{
		{"/api/v1/plans/nothere", 404, "plan_not_found", "name"},
		{"/api/v1/plans/" + strings.Repeat("p", 300), 400, "invalid_plan_name", "name"},
		{"/api/v1/plans/..%2Ffollows", 400, "invalid_plan_name", "name"},
		{"/api/v1/plans/not-a-name", 400, "invalid_plan_name", "name"},
		{"/api/v1/plans/broken", 500, "plan_invalid", ""},
		{"/api/v1/plans/follows?trace=1", 400, "unknown_parameter", "trace"},
	} {
		r := b.do("GET", tc.path, s.Token, nil)
		require.Equal(t, tc.status, r.code, "%s: %s", tc.path, r.raw)
		require.Equal(t, tc.code, r.errCode(), tc.path)
		require.Equal(t, tc.field, r.errField(), tc.path)
	}
	require.Equal(t, http.StatusUnauthorized, b.do("GET", "/api/v1/plans/complex_dag", "", nil).code)
}

// TestPlanExecuteTrace: ?trace=1 adds the run's timeline (one line per
// node, in microseconds) and its wall time to the same answer; without it
// the answer has neither.
func TestPlanExecuteTrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	withShippedPlans(t, b)
	_, err := plan.Seed(context.Background(), b.st.Client(), b.ns+":", plan.Demo())
	require.NoError(t, err)
	s := b.session()
	body := map[string]any{"user_id": 1, "request_id": "tr"}
	dag := shippedPlan(t, "complex_dag")

	plain := b.do("POST", "/api/v1/plans/complex_dag/execute", s.Token, body)
	require.Equal(t, http.StatusOK, plain.code, string(plain.raw))
	conforms(t, b, "PlanRun", plain.body)
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	require.Equal(t, []string{"candidates", "engine_request_id", "request_id"}, keys(plain.body), "no trace asked: rankd's line alone")
	require.NotEmpty(t, plain.body["candidates"], "the demo data gives user 1 candidates")

	r := b.do("POST", "/api/v1/plans/complex_dag/execute?trace=1", s.Token, body)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	conforms(t, b, "PlanRun", r.body)
	require.Equal(t, plain.body["request_id"], r.body["request_id"])
	require.Equal(t, plain.body["candidates"], r.body["candidates"])
	require.True(t, strings.HasPrefix(string(r.raw), `{"request_id":"tr","engine_request_id":`), "rankd's line first: %.80s", r.raw)
	trace := r.body["trace"].([]any)
	require.Len(t, trace, len(dag.Nodes), "every node ran")
	elapsed := r.body["elapsed_us"].(float64)
	ops := map[string]string{}
	for _, n := range dag.Nodes {
		op, _ := plan.NewCatalog().Lookup(n.Op)
		ops[n.ID] = op.Name
	}
	seen := map[string]bool{}
	for _, x := range trace {
		l := x.(map[string]any)
		id := l["node_id"].(string)
		require.False(t, seen[id], "one line per node: %s twice", id)
		seen[id] = true
		require.Equal(t, ops[id], l["op"], id)
		start, end := l["start_us"].(float64), l["end_us"].(float64)
		require.Equal(t, float64(int64(start)), start, "whole microseconds")
		require.GreaterOrEqual(t, end, start, id)
		require.LessOrEqual(t, end, elapsed, "%s ends within the run", id)
		require.Less(t, elapsed, 30e6, "microseconds, not nanoseconds: a run takes well under 30 s")
		require.NotContains(t, l, "error", id)
	}
	require.Greater(t, elapsed, 0.0)

	for _, off := range []string{"?trace=0", "?trace=false", "?trace="} {
		r := b.do("POST", "/api/v1/plans/complex_dag/execute"+off, s.Token, body)
		require.Equal(t, http.StatusOK, r.code, string(r.raw))
		require.Equal(t, keys(plain.body), keys(r.body), off)
	}
	for q, field := range map[string]string{"?trace=yes": "trace", "?trace=1&trace=0": "trace", "?tracing=1": "tracing"} {
		r := b.do("POST", "/api/v1/plans/complex_dag/execute"+q, s.Token, body)
		require.Equal(t, http.StatusBadRequest, r.code, "%s: %s", q, r.raw)
		require.Equal(t, field, r.errField(), q)
	}
	// a traced run that fails answers the error, as an untraced one does
	r = b.do("POST", "/api/v1/plans/nothere/execute?trace=1", s.Token, body)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "plan_not_found", r.errCode())
}

// TestPlanRoutesDocumented: the plan routes are in /openapi.json with the
// schemas their answers are checked against above.
func TestPlanRoutesDocumented(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do("GET", "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.code)
	paths := r.body["paths"].(map[string]any)
	for path, want := range map[string]string{
		"/api/v1/plans get": "PlanList", "/api/v1/plans/{name} get": "PlanGraph", "/api/v1/plans/{name}/execute post": "PlanRun",
	} {
		p, m, _ := strings.Cut(path, " ")
		op := paths[p].(map[string]any)[m].(map[string]any)
		raw, err := json.Marshal(op["responses"].(map[string]any)["200"])
		require.NoError(t, err)
		require.Contains(t, string(raw), "#/components/schemas/"+want, path)
	}
	raw, err := json.Marshal(paths["/api/v1/plans/{name}/execute"].(map[string]any)["post"].(map[string]any)["parameters"])
	require.NoError(t, err)
	require.Contains(t, string(raw), `"name":"trace"`)
}

// conforms checks a decoded answer against the component schema name of
// /openapi.json: the types, the required keys, the enums, and no key the
// schema does not declare (a generated client would not know it).
func conforms(t *testing.T, b *testBundle, name string, v any) {
	t.Helper()
	doc := b.do("GET", "/openapi.json", "", nil)
	schemas := doc.body["components"].(map[string]any)["schemas"].(map[string]any)
	require.NoError(t, schemaErr(schemas, map[string]any{"$ref": "#/components/schemas/" + name}, v, name))
}

func schemaErr(schemas, s map[string]any, v any, at string) error {
	if r, ok := s["$ref"].(string); ok {
		target, ok := schemas[strings.TrimPrefix(r, "#/components/schemas/")].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: dangling %s", at, r)
		}
		return schemaErr(schemas, target, v, at)
	}
	if all, ok := s["allOf"].([]any); ok { // one object: the keys of every schema of all
		if v == nil && s["nullable"] == true {
			return nil
		}
		merged := map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{}}
		for _, a := range all {
			m := a.(map[string]any)
			if r, ok := m["$ref"].(string); ok {
				m, _ = schemas[strings.TrimPrefix(r, "#/components/schemas/")].(map[string]any)
			}
			for k, p := range m["properties"].(map[string]any) {
				merged["properties"].(map[string]any)[k] = p
			}
			req, _ := m["required"].([]any)
			merged["required"] = append(merged["required"].([]any), req...)
		}
		return schemaErr(schemas, merged, v, at)
	}
	if alts, ok := s["oneOf"].([]any); ok {
		for _, a := range alts {
			if schemaErr(schemas, a.(map[string]any), v, at) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: %v matches none of oneOf", at, v)
	}
	if v == nil {
		if s["nullable"] == true {
			return nil
		}
		return fmt.Errorf("%s: null", at)
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		return fmt.Errorf("%s: %v not in %v", at, v, enum)
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an object", at, v)
		}
		req, _ := s["required"].([]any)
		for _, k := range req {
			if _, ok := m[k.(string)]; !ok {
				return fmt.Errorf("%s: required %s missing", at, k)
			}
		}
		props, _ := s["properties"].(map[string]any)
		extra, _ := s["additionalProperties"].(map[string]any)
		for k, x := range m {
			var sub map[string]any
			if p, ok := props[k].(map[string]any); ok {
				sub = p
			} else if extra != nil {
				sub = extra
			} else if props != nil {
				return fmt.Errorf("%s: key %s is not in the schema", at, k)
			} else {
				continue
			}
			if err := schemaErr(schemas, sub, x, at+"."+k); err != nil {
				return err
			}
		}
	case "array":
		xs, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an array", at, v)
		}
		items, _ := s["items"].(map[string]any)
		for i, x := range xs {
			if err := schemaErr(schemas, items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %T, want a string", at, v)
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: %v, want an integer", at, v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: %T, want a number", at, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %T, want a boolean", at, v)
		}
	}
	return nil
}
