package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// against a Redis Cluster, rueidis's cluster client refreshes its
		// slot map on a goroutine that ends by itself after Close
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}

type result struct {
	code           int
	stdout, stderr string
}

// rankd runs the command with the demo data under a namespace of its own.
func rankd(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	c, ns := testredis.Client(t)
	_, err := plan.Seed(context.Background(), c, ns+":", plan.Demo())
	require.NoError(t, err)
	env := map[string]string{"REDIS_URL": testredis.URL(), "RANKD_KEY_PREFIX": ns + ":"}
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb, func(k string) string { return env[k] })
	return result{code, out.String(), errb.String()}
}

const plans = "../../internal/plan/testdata/plans"

var engineID = regexp.MustCompile(`"engine_request_id":"[0-9a-f-]{36}"`)

func TestSuccessLine(t *testing.T) {
	t.Parallel()
	r := rankd(t, `{"user_id":1,"request_id":"req-1"}`, "--plan_dir", plans, "--plan_name", "ranked_follows")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.Equal(t, `{"request_id":"req-1","engine_request_id":"E","candidates":[`+
		`{"id":3,"fields":{"final_score":0.6000000000000001,"country":"US"}},`+
		`{"id":4,"fields":{"final_score":0.8,"country":"CA"}},`+
		`{"id":5,"fields":{"final_score":1.0,"country":"US"}},`+
		`{"id":6,"fields":{"final_score":1.2000000000000002,"country":"CA"}},`+
		`{"id":7,"fields":{"final_score":1.4000000000000001,"country":"US"}}]}`+"\n",
		engineID.ReplaceAllString(r.stdout, `"engine_request_id":"E"`))
}

func TestGeneratedRequestID(t *testing.T) {
	t.Parallel()
	r := rankd(t, `{"user_id":"1"}`, "--plan", filepath.Join(plans, "simple_viewer.plan.json"))
	require.Equal(t, 0, r.code, r.stderr)
	var out struct {
		RequestID string `json:"request_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.Len(t, out.RequestID, 36)
}

// Without a plan rankd answers nothing made up: it says how to name one.
func TestNoPlanIsAnError(t *testing.T) {
	t.Parallel()
	r := rankd(t, `{"user_id":1,"request_id":"x"}`)
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "no plan: give --plan PATH or --plan-name NAME")
}

// The plans of the repository's plans/ are built in: a named plan runs from
// a directory without a plans/ folder (this test's), and an unknown name
// lists the plans there are.
func TestBuiltInPlans(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("plans")
	require.True(t, os.IsNotExist(err), "the test needs a working directory without plans/")
	r := rankd(t, `{"user_id":1,"request_id":"b"}`, "--plan-name", "complex_dag")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `{"request_id":"b","engine_request_id":"`)
	require.Contains(t, r.stdout, `"candidates":[{"id":`)

	r = rankd(t, `{"user_id":1}`, "--plan-name", "no_such_plan")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "no plan named 'no_such_plan'; the plans built into rankd are: complex_dag, diamond,")

	r = rankd(t, `{"user_id":1}`, "--plan-dir", plans, "--plan-name", "no_such_plan")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "the plans in "+plans+" are: ")
	require.Contains(t, r.stderr, "ranked_follows")
}

// Both spellings of a flag work: the kebab-case one of taskflow's binaries,
// and the reference rankd's snake_case one.
func TestFlagSpellings(t *testing.T) {
	t.Parallel()
	kebab := rankd(t, `{"user_id":1,"request_id":"k"}`, "--plan-dir", plans, "--plan-name", "ranked_follows", "--deadline-ms", "5000")
	snake := rankd(t, `{"user_id":1,"request_id":"k"}`, "--plan_dir", plans, "--plan_name", "ranked_follows", "--deadline_ms", "5000")
	require.Equal(t, 0, kebab.code, kebab.stderr)
	require.Equal(t, engineID.ReplaceAllString(snake.stdout, "E"), engineID.ReplaceAllString(kebab.stdout, "E"))
}

func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	r := rankd(t, "", "--help")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "reads one JSON request on stdin")
	require.Contains(t, r.stdout, "echo '{\"user_id\":1}' | rankd --plan-name complex_dag")
	require.Contains(t, r.stdout, "Built-in plans: complex_dag")
	for _, f := range []string{"--plan-name", "--plan-dir", "--redis-url", "--deadline-ms", "--bench-concurrency", "--redis-conns", "--version"} {
		require.Contains(t, r.stdout, "\n  "+f+" ", f)
	}
	r = rankd(t, "", "--version")
	require.Equal(t, 0, r.code)
	require.Regexp(t, `^rankd \S+ commit \S+`, r.stdout)
}

// --redis-conns is what its help says: a power of two up to 256.
func TestRedisConnsPowerOfTwo(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"0", "3", "12", "512"} {
		r := rankd(t, `{"user_id":1}`, "--plan-dir", plans, "--plan-name", "ranked_follows", "--redis-conns", bad)
		require.Equal(t, 1, r.code, bad)
		require.Contains(t, r.stderr, "--redis-conns "+bad+": must be a power of two from 1 to 256")
	}
	r := rankd(t, `{"user_id":1}`, "--plan-dir", plans, "--plan-name", "ranked_follows", "--redis_conns", "4")
	require.Equal(t, 0, r.code, r.stderr)
}

func TestRequestErrorsOnStdout(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`{`:       `{"error":"Invalid JSON input","detail":`,
		`{"x":1}`: `{"error":"Invalid request","detail":"missing required field: user_id"}`,
		`{"user_id":1,"param_overrides":{"zzz":1}}`:                         `{"error":"Invalid param_overrides","detail":"unknown param 'zzz'"}`,
		`{"user_id":1,"param_overrides":{"weight":"x"}}`:                    `{"error":"Invalid param_overrides","detail":"param 'weight' must be of type float"}`,
		`{"user_id":1,"param_overrides":{"media_age_penalty_weight":null}}`: `{"error":"Invalid param_overrides","detail":"param 'media_age_penalty_weight' is not nullable"}`,
		`{"user_id":0}`: `{"error":"Invalid request","detail":"user_id must be a positive integer or a decimal string, got 0"}`,
		`[]`:            `{"error":"Invalid request","detail":"request must be a JSON object"}`,
	}
	for in, want := range cases {
		r := rankd(t, in, "--plan", filepath.Join(plans, "simple_viewer.plan.json"))
		require.Equal(t, 1, r.code, in)
		require.True(t, strings.HasPrefix(r.stdout, want), "%s: %s", in, r.stdout)
		require.Empty(t, r.stderr)
	}
}

// TestRequestEdgeCases: whole stdout lines for the request forms whose
// answer the reference rankd leaves open; docs/plan.md ("Request
// parsing") records each decision.
func TestRequestEdgeCases(t *testing.T) {
	t.Parallel()
	viewer := filepath.Join(plans, "simple_viewer.plan.json")
	ok := func(id, fields string) string {
		return `{"request_id":"r","engine_request_id":"E","candidates":[{"id":` + id + `,"fields":{` + fields + `}}]}` + "\n"
	}
	bad := func(kind, detail string) string { return `{"error":"` + kind + `","detail":"` + detail + `"}` + "\n" }
	const rule = `user_id must be a positive integer or a decimal string, got `
	cases := []struct {
		name, stdin, want string
		code              int
	}{
		// An integral float is an integer (as params' int accepts one).
		{"IntegralFloat", `{"request_id":"r","user_id":7.0}`, ok("7", `"country":"US"`), 0},
		// Ids are 64-bit, not 32-bit: a user above 2^32 is a user (no hash here).
		{"AboveUint32", `{"request_id":"r","user_id":4294967296}`, ok("4294967296", ``), 0},
		{"DecimalString", `{"request_id":"r","user_id":"123"}`, ok("123", `"country":"CA"`), 0},
		{"Null", `{"request_id":"r","user_id":null}`, bad("Invalid request", "missing required field: user_id"), 1},
		{"Fraction", `{"user_id":1.5}`, bad("Invalid request", rule+"1.5"), 1},
		{"Negative", `{"user_id":-3}`, bad("Invalid request", rule+"-3"), 1},
		{"NotDigits", `{"user_id":"12a"}`, bad("Invalid request", rule+`\"12a\"`), 1},
		{"Bool", `{"user_id":true}`, bad("Invalid request", "user_id must be a positive integer or a decimal string"), 1},
		// A request_id that is not a string is rejected, not replaced.
		{"NumericRequestID", `{"request_id":5,"user_id":1}`, bad("Invalid request", "request_id must be a string"), 1},
		{"NotJSON", `{`, bad("Invalid JSON input", "unexpected end of JSON input"), 1},
		{"ParamsNotObject", `{"user_id":1,"param_overrides":[1]}`, bad("Invalid param_overrides", "param_overrides must be an object"), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rankd(t, tc.stdin, "--plan", viewer)
			require.Equal(t, tc.code, r.code, r.stderr)
			require.Empty(t, r.stderr)
			require.Equal(t, tc.want, engineID.ReplaceAllString(r.stdout, `"engine_request_id":"E"`))
		})
	}
}

// TestFlagErrorsExit1: a bad flag or a stray argument is an error like
// any other: exit 1, nothing on stdout, the reason on stderr.
func TestFlagErrorsExit1(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"UnknownFlag": {"--no_such_flag"},
		"BadNumber":   {"--deadline_ms", "soon"},
		"StrayArg":    {"--plan", "x.plan.json", "extra"},
		"Negative":    {"--deadline_ms", "-1"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := run(context.Background(), args, strings.NewReader(`{"user_id":1}`), &out, &errb, func(string) string { return "" })
			require.Equal(t, 1, code, errb.String())
			require.Empty(t, out.String())
			require.NotEmpty(t, errb.String())
		})
	}
}

func writePlan(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "p.plan.json")
	require.NoError(t, os.WriteFile(p, []byte(src), 0o600))
	return p
}

func TestPlanAndRunErrorsOnStderr(t *testing.T) {
	t.Parallel()
	cycle := writePlan(t, `{"schema_version":1,"plan_name":"c","nodes":[{"node_id":"a","op":"core::take","inputs":["b"],"params":{"count":5}},{"node_id":"b","op":"core::take","inputs":["a"],"params":{"count":5}}],"outputs":["a"]}`)
	slow := writePlan(t, `{"schema_version":1,"plan_name":"slow","nodes":[{"node_id":"s","op":"test::fixed_source","inputs":[],"params":{}},{"node_id":"z","op":"test::sleep","inputs":["s"],"params":{"duration_ms":30000}}],"outputs":["z"]}`)
	spin := writePlan(t, `{"schema_version":1,"plan_name":"spin","nodes":[{"node_id":"s","op":"test::fixed_source","inputs":[],"params":{}},{"node_id":"z","op":"test::busy_cpu","inputs":["s"],"params":{"busy_wait_ms":30000}}],"outputs":["z"]}`)
	const v = `{"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}}`
	planOf := func(nodes, extra string) string {
		return writePlan(t, `{"schema_version":1,"plan_name":"p",`+extra+`"nodes":[`+nodes+`],"outputs":["n1"]}`)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"Cycle", []string{"--plan", cycle}, "Error: Plan contains a cycle\n"},
		// Every kind of validation error: exit 1, the message on stderr, nothing on stdout.
		{"MissingInput", []string{"--plan", planOf(`{"node_id":"n1","op":"core::take","inputs":["nonexistent"],"params":{"count":5}}`, "")},
			"Error: Node 'n1' references missing input: nonexistent\n"},
		{"UnknownOp", []string{"--plan", planOf(`{"node_id":"n1","op":"core::explode","inputs":[],"params":{}}`, "")},
			"Error: Node 'n1': unknown op 'core::explode'\n"},
		{"MissingParam", []string{"--plan", planOf(v+`,{"node_id":"n1","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001"}}`, "")},
			"Error: Node 'n1': Invalid params for op 'core::follow': missing required field 'fanout'\n"},
		{"BadParam", []string{"--plan", planOf(v+`,{"node_id":"n1","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":"ten"}}`, "")},
			"Error: Node 'n1': Invalid params for op 'core::follow': field 'fanout' must be an integer\n"},
		{"BadPredTable", []string{"--plan", planOf(v+`,{"node_id":"n1","op":"core::filter","inputs":["v"],"params":{"pred_id":"p"}}`, `"pred_table":{"p":{"op":"wat"}},`)},
			"Error: pred_table.p: unknown predicate op \"wat\"\n"},
		{"BadExprTable", []string{"--plan", planOf(v+`,{"node_id":"n1","op":"core::vm","inputs":["v"],"params":{"expr_id":"e","out_key":2001}}`, `"expr_table":{"e":{"op":"div","a":{"op":"const_null"},"b":{"op":"const_null"}}},`)},
			"Error: expr_table.e: unknown expression op \"div\"\n"},
		{"UnsupportedCapability", []string{"--plan", planOf(`{"node_id":"n1","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}}`, `"capabilities_required":["cap.does.not.exist.v1"],`)},
			"Error: unsupported capability: cap.does.not.exist.v1\n"},
		{"NodeFails", []string{"--plan", planOf(`{"node_id":"s","op":"test::fixed_source","inputs":[],"params":{}},{"node_id":"n1","op":"test::sleep","inputs":["s"],"params":{"duration_ms":1,"fail_after_sleep":true}}`, "")},
			"Error: Node 'n1' (test::sleep) failed: sleep: failed after sleeping (fail_after_sleep)\n"},
		// A failed run prints "Error: <message>"; the message names the node
		// and op, then the op's own words (docs/plan.md).
		{"VMNullIntoNonNullable", []string{"--plan", planOf(v+`,{"node_id":"n1","op":"core::vm","inputs":["v"],"params":{"expr_id":"e","out_key":2001}}`, `"expr_table":{"e":{"op":"key_ref","key_id":1001}},`)},
			"Error: Node 'n1' (core::vm) failed: vm: null written to non-nullable key 'final_score' (row id 1)\n"},
		{"VMNonFinite", []string{"--plan", planOf(v+`,{"node_id":"n1","op":"core::vm","inputs":["v"],"params":{"expr_id":"e","out_key":2001}}`, `"expr_table":{"e":{"op":"mul","a":{"op":"const_number","value":1e308},"b":{"op":"const_number","value":10}}},`)},
			"Error: Node 'n1' (core::vm) failed: vm: non-finite result +Inf for key 'final_score' (row id 1)\n"},
		{"RegexParamUnset", []string{"--plan_dir", plans, "--plan_name", "regex_param_country"},
			"Error: Node 'by_pattern' (core::filter) failed: evaluation failed: regex: param pattern is null or missing (param_id=2)\n"},
		{"Deadline", []string{"--plan", slow, "--deadline_ms", "30"}, "Error: Request deadline exceeded\n"},
		// The deadline passing during a CPU node is that node's timeout
		// (docs/plan.md, "The deadline during a CPU node").
		{"DeadlineDuringCPUNode", []string{"--plan", spin, "--deadline_ms", "30"}, "Error: Node execution timeout\n"},
		{"NodeTimeoutCPUNode", []string{"--plan", spin, "--node_timeout_ms", "30"}, "Error: Node execution timeout\n"},
		{"NodeTimeout", []string{"--plan", slow, "--node_timeout_ms", "30"}, "Error: Node execution timeout\n"},
		{"MissingFile", []string{"--plan", "/nonexistent.plan.json"}, "Error: read plan: open /nonexistent.plan.json: no such file or directory\n"},
		{"BadPlanName", []string{"--plan_name", "../x"}, "Error: Invalid plan_name '../x'. Plan names must match [A-Za-z0-9_]+ only.\n"},
		{"BothPlanFlags", []string{"--plan", cycle, "--plan_name", "x"}, "Error: Cannot specify both --plan and --plan_name\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rankd(t, `{"user_id":1}`, tc.args...)
			require.Equal(t, 1, r.code)
			require.Empty(t, r.stdout)
			require.Equal(t, tc.want, r.stderr)
		})
	}
}

// A plan whose data is not where rankd reads answers as the reference
// does (no candidates), and says on stderr which Redis it read and that
// nothing was there; a run on loaded data keeps stderr empty.
func TestWarnsWhenThePlansDataIsAbsent(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	env := map[string]string{"REDIS_URL": testredis.URL(), "RANKD_KEY_PREFIX": ns + ":nothing-here:"}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--plan-name", "complex_dag"}, strings.NewReader(`{"user_id":1}`), &out, &errb, func(k string) string { return env[k] })
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), `"candidates":[]`)
	require.Contains(t, errb.String(), "rankd: plan complex_dag reads "+testredis.URL())
	require.Contains(t, errb.String(), `(key prefix "`+ns+`:nothing-here:")`)
	require.Contains(t, errb.String(), "rankd: warning: the plan's 2 Redis read(s) found no data")

	r := rankd(t, `{"user_id":1}`, "--plan-name", "complex_dag")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, `"candidates":[]`)
	require.Empty(t, r.stderr)

	// the benchmark checks first: a benchmark of empty reads measures nothing
	errb.Reset()
	out.Reset()
	code = run(context.Background(), []string{"--plan-name", "complex_dag", "--bench", "5", "--bench-concurrency", "1"}, strings.NewReader(""), &out, &errb, func(k string) string { return env[k] })
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, errb.String(), "rankd: warning: the plan's 2 Redis read(s) found no data")
}

func TestTrace(t *testing.T) {
	t.Parallel()
	r := rankd(t, `{"user_id":1}`, "--plan", filepath.Join(plans, "complex_dag.plan.json"), "--trace")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "critical path 2 Redis round trip(s), data from "+testredis.URL())
	// The reference's reads: the viewer's and the follows' countries too.
	all := rankd(t, `{"user_id":1}`, "--plan", filepath.Join(plans, "complex_dag.plan.json"), "--trace", "--read_dead_columns")
	require.Equal(t, 0, all.code, all.stderr)
	require.Contains(t, all.stderr, "critical path 4 Redis round trip(s)")
	require.Equal(t, r.stdout[strings.Index(r.stdout, `"candidates"`):], all.stdout[strings.Index(all.stdout, `"candidates"`):])
	// One row per node: node op kind place start_us end_us rows_in rows_out rtt.
	type row struct {
		op, kind, place          string
		start, end, in, out, rtt int
	}
	rows := map[string]row{}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	require.Equal(t, []string{"node", "op", "kind", "place", "start_us", "end_us", "rows_in", "rows_out", "rtt"}, strings.Fields(lines[1]))
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		require.Len(t, f, 9, l)
		n := make([]int, 5)
		for i := range n {
			v, err := strconv.Atoi(f[4+i])
			require.NoError(t, err, l)
			n[i] = v
		}
		require.LessOrEqual(t, n[0], n[1], "a node ends after it starts: %s", l)
		rows[f[0]] = row{f[1], f[2], f[3], n[0], n[1], n[2], n[3], n[4]}
	}
	require.Len(t, rows, 10)
	want := map[string]struct {
		op, kind string
		in, out  int
	}{
		"v": {"core::viewer", "IO", 0, 1}, "follow": {"core::follow", "IO", 1, 10}, "recs": {"core::recommendation", "IO", 1, 10},
		"media_f": {"core::media", "IO", 10, 6}, "media_r": {"core::media", "IO", 10, 0},
		"vm_f": {"core::vm", "CPU", 6, 6}, "vm_r": {"core::vm", "CPU", 0, 0}, "merge": {"core::concat", "CPU", 6, 6},
		"sort": {"core::sort", "CPU", 6, 6}, "take": {"core::take", "CPU", 6, 6},
	}
	for id, w := range want {
		g := rows[id]
		require.Equal(t, []any{w.op, w.kind, w.in, w.out}, []any{g.op, g.kind, g.in, g.out}, id)
		if w.kind == "IO" {
			require.Equal(t, "io", g.place, id)
		} else {
			require.Contains(t, []string{"inline", "pool", "fused"}, g.place, id)
		}
	}
	// The timeline respects the DAG: a node starts after its inputs end.
	for node, deps := range map[string][]string{"follow": {"v"}, "recs": {"v"}, "media_f": {"follow"}, "media_r": {"recs"},
		"vm_f": {"media_f"}, "vm_r": {"media_r"}, "merge": {"vm_f", "vm_r"}, "sort": {"merge"}, "take": {"sort"}} {
		for _, d := range deps {
			require.GreaterOrEqual(t, rows[node].start, rows[d].end, "%s starts after %s ends", node, d)
		}
	}
	require.Equal(t, 1, rows["follow"].rtt, "one pipelined round trip for the follow list")
}

// TestTraceShowsFailure: a failed run still prints its timeline, with the
// failing node's error.
func TestTraceShowsFailure(t *testing.T) {
	t.Parallel()
	p := writePlan(t, `{"schema_version":1,"plan_name":"boom","nodes":[{"node_id":"s","op":"test::fixed_source","inputs":[],"params":{"row_count":3}},{"node_id":"z","op":"test::sleep","inputs":["s"],"params":{"duration_ms":1,"fail_after_sleep":true}}],"outputs":["z"]}`)
	r := rankd(t, `{"user_id":1}`, "--plan", p, "--trace")
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	require.Regexp(t, `(?m)^s\s+test::fixed_source\s+IO\s+io\s+\d+\s+\d+\s+0\s+3\s+0$`, r.stderr)
	require.Regexp(t, `(?m)^z\s+test::sleep\s+.*error: `, r.stderr)
	require.True(t, strings.HasSuffix(r.stderr, "\n") && strings.Contains(r.stderr, "\nError: "), r.stderr)
}

// TestRedisAddressOverride: REDIS_URL, and --redis_url over it, point
// every redis endpoint at another Redis without editing the registry
// files: with the registry's ep_0001 on a dead port, the plan still runs.
func TestRedisAddressOverride(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, err := filepath.Glob("../../registry/*.toml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if filepath.Base(f) == "endpoints.dev.toml" {
			require.Contains(t, string(b), "port = 6379")
			b = []byte(strings.ReplaceAll(string(b), "port = 6379", "port = 1"))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600))
	}
	c, ns := testredis.Client(t)
	_, err = plan.Seed(context.Background(), c, ns+":", plan.Demo())
	require.NoError(t, err)
	simple := filepath.Join(plans, "viewer_filter.plan.json")
	runWith := func(env map[string]string, args ...string) result {
		env["RANKD_KEY_PREFIX"] = ns + ":"
		var out, errb bytes.Buffer
		args = append([]string{"--registry_dir", dir, "--plan", simple, "--deadline_ms", "5000"}, args...)
		code := run(context.Background(), args, strings.NewReader(`{"user_id":123,"request_id":"o"}`), &out, &errb, func(k string) string { return env[k] })
		return result{code, out.String(), errb.String()}
	}
	const answer = `"candidates":[{"id":123,"fields":{"country":"CA"}}]}` + "\n"

	r := runWith(map[string]string{})
	require.Equal(t, 1, r.code, "the registry's own address is dead: %s", r.stdout)
	require.Contains(t, r.stderr, "127.0.0.1:1")

	r = runWith(map[string]string{"REDIS_URL": testredis.URL()})
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, strings.HasSuffix(r.stdout, answer), r.stdout)

	r = runWith(map[string]string{"REDIS_URL": "redis://127.0.0.1:1/0"}, "--redis_url", testredis.URL())
	require.Equal(t, 0, r.code, "--redis_url wins over REDIS_URL: %s", r.stderr)
	require.True(t, strings.HasSuffix(r.stdout, answer), r.stdout)

	r = runWith(map[string]string{"REDIS_URL": testredis.URL()}, "--redis_url", "redis://127.0.0.1:1/0")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "127.0.0.1:1")
}

func TestBench(t *testing.T) {
	t.Parallel()
	r := rankd(t, "", "--plan", filepath.Join(plans, "complex_dag.plan.json"), "--bench", "20", "--bench_concurrency", "2", "--bench_warmup", "2")
	require.Equal(t, 0, r.code, r.stderr)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	for _, k := range []string{"plan", "iterations", "concurrency", "total_ms", "throughput_rps", "avg_us", "p50_us", "p99_us", "min_us", "max_us"} {
		require.Contains(t, out, k)
	}
	require.Equal(t, "complex_dag", out["plan"])
	require.EqualValues(t, 20, out["iterations"])
	require.EqualValues(t, 2, out["critical_round_trips"], "viewer and hydration reads are dead in complex_dag")
	require.LessOrEqual(t, out["min_us"].(float64), out["p50_us"].(float64))
	require.LessOrEqual(t, out["p50_us"].(float64), out["max_us"].(float64))
}

// TestManifestIsCurrent keeps registry/tasks.toml what the catalog prints.
func TestManifestIsCurrent(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--print-task-manifest"}, strings.NewReader(""), &out, &errb, func(string) string { return "" })
	require.Equal(t, 0, code)
	want, err := os.ReadFile("../../registry/tasks.toml")
	require.NoError(t, err)
	require.Equal(t, string(want), out.String(), "regenerate: go run ./cmd/rankd --print-task-manifest > registry/tasks.toml")
}
