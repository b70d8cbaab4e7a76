//go:build conformance

package plan_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/ir"
	"github.com/taskflow/taskflow/internal/plan/registry"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestConformance runs the reference engine's compiled plans, with the
// reference's own registry files, on the demo data, and checks our answers
// and errors against the output, error and op rules of docs/plan.md.
// `make conformance` runs it when ../shared/reference/rankd exists.
func TestConformance(t *testing.T) {
	ref := os.Getenv("RANKD_REFERENCE_DIR")
	if ref == "" {
		t.Fatal("RANKD_REFERENCE_DIR is not set: run `make conformance`")
	}
	refReg, err := registry.Load(os.DirFS(filepath.Join(ref, "registry")), "dev")
	require.NoError(t, err, "our loader reads the reference's registry unchanged")

	t.Run("RegistriesAgree", func(t *testing.T) {
		ours, err := registry.Default("dev")
		require.NoError(t, err)
		for id, k := range refReg.Keys {
			o := ours.Keys[id]
			require.NotNil(t, o, "key %d", id)
			require.Equal(t, []any{k.Name, k.Type, k.Nullable, k.Writable()}, []any{o.Name, o.Type, o.Nullable, o.Writable()}, "key %d", id)
		}
		for id, p := range refReg.Params {
			o := ours.Params[id]
			require.NotNil(t, o, "param %d", id)
			require.Equal(t, []any{p.Name, p.Type, p.Nullable}, []any{o.Name, o.Type, o.Nullable}, "param %d", id)
		}
		for id, e := range refReg.Endpoints {
			o := ours.Endpoints[id]
			require.NotNil(t, o, "endpoint %s", id)
			require.Equal(t, []string{e.Name, e.Kind}, []string{o.Name, o.Kind})
		}
		for id, c := range refReg.Capabilities {
			require.Equal(t, c.Status, ours.Capabilities[id].Status, id)
		}
	})

	c, ns := testredis.Client(t)
	prefix := ns + ":"
	_, err = plan.Seed(context.Background(), c, prefix, plan.Demo())
	require.NoError(t, err)
	eng, err := plan.New(plan.Config{Registry: refReg, RedisURL: testredis.URL(), KeyPrefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Close()) })

	followCountries := func(from, to int64) []cand {
		var out []cand
		for id := from; id <= to; id++ {
			out = append(out, cand{id, map[string]any{"country": country(id)}})
		}
		return out
	}
	scored := func(idList []int64, key string, mul float64) []cand {
		var out []cand
		for _, id := range idList {
			f := map[string]any{key: float64(id) * mul}
			if c := country(id); c != "" {
				f["country"] = c
			}
			out = append(out, cand{id, f})
		}
		return out
	}
	us := func(idList ...int64) []cand {
		var out []cand
		for _, id := range idList {
			out = append(out, cand{id, map[string]any{"country": "US"}})
		}
		return out
	}
	reels := scored([]int64{3, 4, 5, 6, 7}, "final_score", 0.2)
	good := map[string]struct {
		params ir.Params
		want   []cand
		line   string
	}{
		"plans/reels_plan_a":          {want: reels, line: `"candidates":[{"id":3,"fields":{"final_score":0.6000000000000001,"country":"US"}},{"id":4,"fields":{"final_score":0.8,"country":"CA"}},{"id":5,"fields":{"final_score":1.0,"country":"US"}},{"id":6,"fields":{"final_score":1.2000000000000002,"country":"CA"}},{"id":7,"fields":{"final_score":1.4000000000000001,"country":"US"}}]`},
		"plans-examples/reels_plan_a": {want: reels},
		"plans/demo":                  {want: reels},
		"plans/concat_plan":           {want: append(followCountries(1, 4), us(1001, 1002, 1003, 1004)...)},
		"plans-examples/concat_plan":  {want: append(followCountries(1, 4), us(1001, 1002, 1003, 1004)...)},
		"plans/regex_plan":            {want: us(1, 3, 5, 7, 9)},
		"plans-examples/regex_plan":   {want: us(1, 3, 5, 7, 9)},
		"plans/regex_demo":            {want: us(1, 3, 5, 7, 9)},
		"plans/regex_param_demo":      {params: ir.Params{2: {Kind: ir.String, Str: "^C"}}, want: followCountries(2, 2)[:0]},
		"plans/string_in_list":        {want: followCountries(1, 10)},
		"plans/null_trace":            {want: followCountries(1, 3)},
		"plans/parallel_sleep_plan":   {want: us(1, 1)},
		"plans-examples/sort_demo":    {want: scored([]int64{7, 6, 5, 4, 3}, "final_score", 0.1)},
		"plans-examples/redis_follow_media": {want: func() []cand {
			var out []cand
			for id := int64(1001); id <= 1006; id++ {
				out = append(out, cand{id, map[string]any{}})
			}
			return out
		}()},
	}
	// regex_param_demo with "^C" keeps the CA users among follow:1.
	for _, id := range []int64{2, 4, 6, 8, 10} {
		g := good["plans/regex_param_demo"]
		g.want = append(g.want, cand{id, map[string]any{"country": "CA"}})
		good["plans/regex_param_demo"] = g
	}
	bad := map[string]string{
		"plans/bad_engine_caps_unsorted":         "capabilities_required must be sorted and unique",
		"plans/bad_engine_ext_not_required":      "is not in capabilities_required",
		"plans/bad_engine_node_ext_not_declared": "is not in capabilities_required",
		"plans/bad_engine_nonempty_payload":      "is not allowed",
		"plans/bad_engine_unknown_cap":           "unsupported capability",
		"plans/bad_in_list":                      "all numbers or all strings",
		"plans/bad_pred_table_shape":             "unknown predicate op",
		"plans/bad_regex_flags":                  "is not a regex flag",
		"plans/bad_trace_type":                   "field 'trace' must be a string",
		"plans/bad_type_fanout":                  "field 'fanout' must be an integer",
		"plans/concat_bad_arity":                 "missing required field 'rhs'",
		"plans/cycle":                            "Plan contains a cycle",
		"plans/extra_param":                      "unknown field 'limit'",
		"plans/large_fanout":                     "field 'fanout' must be between 1 and 10000000",
		"plans/missing_fanout":                   "Node 'n1': Invalid params for op 'core::follow': missing required field 'fanout'",
		"plans/missing_input":                    "Node 'n0' references missing input: nonexistent",
		"plans/missing_pred_id":                  "missing required field 'pred_id'",
		"plans/unknown_pred_id":                  "unknown pred_id 'does_not_exist'",
	}
	files, err := filepath.Glob(filepath.Join(ref, "plans*", "*.plan.json"))
	require.NoError(t, err)
	sort.Strings(files)
	seen := 0
	for _, f := range files {
		rel, _ := filepath.Rel(ref, f)
		name := rel[:len(rel)-len(".plan.json")]
		t.Run(name, func(t *testing.T) {
			c, err := eng.Load(f)
			if want, ok := bad[name]; ok {
				seen++
				mustContain(t, err, want)
				return
			}
			g, ok := good[name]
			require.True(t, ok, "no expected answer written for %s", name)
			seen++
			require.NoError(t, err)
			res, err := eng.Run(context.Background(), c, &plan.Request{RequestID: "conf", UserID: 1, Params: g.params}, plan.RunOptions{})
			require.NoError(t, err)
			require.Equal(t, g.want, decode(t, refReg, res))
			if g.line != "" {
				line := string(plan.AppendOutput(nil, "conf", "E", res.Outputs, refReg))
				require.Equal(t, `{"request_id":"conf","engine_request_id":"E",`+g.line+`}`, line)
			}
		})
	}
	require.Equal(t, len(good)+len(bad), seen, "every expected answer was checked")

	t.Run("RegexParamUnsetFails", func(t *testing.T) {
		c, err := eng.Load(filepath.Join(ref, "plans", "regex_param_demo.plan.json"))
		require.NoError(t, err)
		_, err = eng.Run(context.Background(), c, user(1), plan.RunOptions{})
		mustContain(t, err, "param pattern is null or missing (param_id=2)")
	})
}
