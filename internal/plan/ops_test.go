package plan_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/ir"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

// withMaybeKey registers a nullable float key "maybe" (5001) and a string
// key "label" (5002) for tests that need null values in a column.
func withMaybeKey(c *plan.Config) {
	reg, err := registry.Default("dev")
	if err != nil {
		panic(err)
	}
	for _, k := range []*registry.Key{
		{ID: 5001, Name: "maybe", Type: registry.TypeFloat, Nullable: true},
	} {
		reg.Keys[k.ID], reg.KeysByName[k.Name] = k, k
	}
	c.Registry = reg
}

func (b *bundle) runErr(t *testing.T, src string, req *plan.Request) ([]cand, error) {
	t.Helper()
	p, err := plan.Parse([]byte(src), "inline")
	require.NoError(t, err)
	c, err := b.eng.Compile(p)
	require.NoError(t, err)
	res, err := b.eng.Run(context.Background(), c, req, plan.RunOptions{})
	if err != nil {
		return nil, err
	}
	return decode(t, b.eng.Registry(), res), nil
}

func planOf(nodes, tables string) string {
	if tables != "" {
		tables = "," + tables
	}
	return fmt.Sprintf(`{"schema_version":1,"plan_name":"t","nodes":[%s],"outputs":["out"]%s}`, nodes, tables)
}

func TestIOOps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, b.rdb.RPush(ctx, b.prefix+"follow:77", "5", "x", "6", "1.5", "7").Err())

	t.Run("ViewerWithoutHash", func(t *testing.T) {
		got, err := b.runErr(t, planOf(`{"node_id":"out","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}}`, ""), user(99999))
		require.NoError(t, err)
		require.Equal(t, []cand{{ID: 99999, Fields: map[string]any{}}}, got, "country null when the hash is absent")
	})
	t.Run("FollowFanoutTruncates", func(t *testing.T) {
		got, err := b.runErr(t, planOf(`{"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
		 {"node_id":"out","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":3}}`, ""), user(1))
		require.NoError(t, err)
		require.Equal(t, []cand{{1, map[string]any{"country": "US"}}, {2, map[string]any{"country": "CA"}}, {3, map[string]any{"country": "US"}}}, got)
	})
	t.Run("FollowSkipsNonIntegers", func(t *testing.T) {
		got, err := b.runErr(t, planOf(`{"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
		 {"node_id":"out","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":100}}`, ""), user(77))
		require.NoError(t, err)
		require.Equal(t, []int64{5, 6, 7}, ids(got))
	})
	t.Run("FollowOverEveryInputRow", func(t *testing.T) {
		// follow of follow: rows of follow:1's users, in input order, then each list.
		got, err := b.runErr(t, planOf(`{"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
		 {"node_id":"f","op":"core::recommendation","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":2}},
		 {"node_id":"out","op":"core::media","inputs":["f"],"params":{"endpoint":"ep_0001","fanout":10}}`, ""), user(1))
		require.NoError(t, err)
		require.Empty(t, got, "recommendation:1's ids 1001, 1002 have no media lists")
	})
	t.Run("RecommendationWithoutUserHashes", func(t *testing.T) {
		got, err := b.runErr(t, planOf(`{"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
		 {"node_id":"out","op":"core::recommendation","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":10}}`, ""), user(123))
		require.NoError(t, err)
		require.Equal(t, seq(1021, 1025), ids(got))
		for _, c := range got {
			require.Empty(t, c.Fields, "users 1021.. have no hash")
		}
	})
	t.Run("MediaIsIDsOnly", func(t *testing.T) {
		got, err := b.runErr(t, planOf(`{"node_id":"s","op":"test::fixed_source","inputs":[],"params":{"row_count":12}},
		 {"node_id":"out","op":"core::media","inputs":["s"],"params":{"endpoint":"ep_0001","fanout":2}}`, ""), user(1))
		require.NoError(t, err)
		require.Equal(t, []int64{1001, 1002, 1004, 1005, 1101, 1102, 1104, 1105}, ids(got))
		for _, c := range got {
			require.Empty(t, c.Fields)
		}
	})
	t.Run("SleepIsIdentityOrFails", func(t *testing.T) {
		got, err := b.runErr(t, planOf(`{"node_id":"s","op":"test::fixed_source","inputs":[],"params":{"row_count":3}},
		 {"node_id":"out","op":"test::sleep","inputs":["s"],"params":{"duration_ms":1}}`, ""), user(1))
		require.NoError(t, err)
		require.Equal(t, seq(1, 3), ids(got))
		_, err = b.runErr(t, planOf(`{"node_id":"s","op":"test::fixed_source","inputs":[],"params":{}},
		 {"node_id":"out","op":"test::sleep","inputs":["s"],"params":{"duration_ms":1,"fail_after_sleep":true}}`, ""), user(1))
		mustContain(t, err, "fail_after_sleep")
	})
	t.Run("FixedSource", func(t *testing.T) {
		got, err := b.runErr(t, planOf(`{"node_id":"out","op":"test::fixed_source","inputs":[],"params":{}}`, ""), user(1))
		require.NoError(t, err)
		require.Equal(t, []int64{1}, ids(got), "row_count defaults to 1")
		got, err = b.runErr(t, planOf(`{"node_id":"out","op":"test::fixed_source","inputs":[],"params":{"row_count":0}}`, ""), user(1))
		require.NoError(t, err)
		require.Empty(t, got)
	})
	t.Run("BusyCPUIsIdentity", func(t *testing.T) {
		got, err := b.runErr(t, planOf(`{"node_id":"s","op":"test::fixed_source","inputs":[],"params":{"row_count":2}},
		 {"node_id":"out","op":"test::busy_cpu","inputs":["s"],"params":{"busy_wait_ms":2}}`, ""), user(1))
		require.NoError(t, err)
		require.Equal(t, seq(1, 2), ids(got))
	})
}

// src4 is fixed_source(4) → vm maybe = id for ids 1,2 and null for 3,4
// (concat with rows lacking the column), as node "nulls".
const src4 = `{"node_id":"a","op":"test::fixed_source","inputs":[],"params":{"row_count":2}},
 {"node_id":"va","op":"core::vm","inputs":["a"],"params":{"expr_id":"id","out_key":5001}},
 {"node_id":"b","op":"test::fixed_source","inputs":[],"params":{"row_count":4}},
 {"node_id":"bb","op":"core::filter","inputs":["b"],"params":{"pred_id":"gt2"}},
 {"node_id":"nulls","op":"core::concat","inputs":["va"],"params":{"rhs":"bb"}}`

const src4Tables = `"expr_table":{"id":{"op":"key_ref","key_id":1},
 "maybe":{"op":"key_ref","key_id":5001},
 "null":{"op":"const_null"},
 "huge":{"op":"mul","a":{"op":"const_number","value":1e308},"b":{"op":"const_number","value":10}},
 "neg":{"op":"neg","x":{"op":"key_ref","key_id":1}},
 "zero_or_one":{"op":"coalesce","a":{"op":"mul","a":{"op":"key_ref","key_id":5001},"b":{"op":"const_number","value":0}},"b":{"op":"const_number","value":1}}},
 "pred_table":{"gt2":{"op":"cmp","cmp":">","a":{"op":"key_ref","key_id":1},"b":{"op":"const_number","value":2}},
 "has":{"op":"not_null","x":{"op":"key_ref","key_id":5001}},
 "odd":{"op":"in","lhs":{"op":"key_ref","key_id":1},"list":[1,3,5,7,9]}}`

func TestCPUOps(t *testing.T) {
	t.Parallel()
	b := setup(t, withMaybeKey)
	run := func(t *testing.T, nodes string, req *plan.Request) ([]cand, error) {
		return b.runErr(t, planOf(src4+","+nodes, src4Tables), req)
	}
	t.Run("VMWritesActiveRows", func(t *testing.T) {
		got, err := run(t, `{"node_id":"f","op":"core::filter","inputs":["nulls"],"params":{"pred_id":"has"}},
		 {"node_id":"out","op":"core::vm","inputs":["f"],"params":{"expr_id":"maybe","out_key":2001}}`, user(1))
		require.NoError(t, err, "null rows are inactive, so the non-nullable key is fine")
		require.Equal(t, []cand{{1, map[string]any{"final_score": 1.0, "maybe": 1.0}}, {2, map[string]any{"final_score": 2.0, "maybe": 2.0}}}, got)
	})
	t.Run("VMNullIntoNonNullableFails", func(t *testing.T) {
		_, err := run(t, `{"node_id":"out","op":"core::vm","inputs":["nulls"],"params":{"expr_id":"maybe","out_key":2001}}`, user(1))
		mustContain(t, err, "null written to non-nullable key 'final_score'")
		require.ErrorIs(t, err, ir.ErrEval, "the plan's computation failed, not Redis: 422 over HTTP, no task retry")
	})
	t.Run("VMNullIntoNullableKey", func(t *testing.T) {
		got, err := run(t, `{"node_id":"out","op":"core::vm","inputs":["nulls"],"params":{"expr_id":"null","out_key":5001}}`, user(1))
		require.NoError(t, err)
		for _, c := range got {
			require.Empty(t, c.Fields)
		}
	})
	t.Run("VMNonFiniteFails", func(t *testing.T) {
		_, err := run(t, `{"node_id":"out","op":"core::vm","inputs":["nulls"],"params":{"expr_id":"huge","out_key":2001}}`, user(1))
		mustContain(t, err, "non-finite")
		require.ErrorIs(t, err, ir.ErrEval)
	})
	t.Run("VMDoesNotChangeItsInput", func(t *testing.T) {
		// Diamond: one branch overwrites maybe, the other still sees the old values.
		got, err := run(t, `{"node_id":"w","op":"core::vm","inputs":["va"],"params":{"expr_id":"neg","out_key":5001}},
		 {"node_id":"out","op":"core::concat","inputs":["va"],"params":{"rhs":"w"}}`, user(1))
		require.NoError(t, err)
		var vals []any
		for _, c := range got {
			vals = append(vals, c.Fields["maybe"])
		}
		require.Equal(t, []any{1.0, 2.0, -1.0, -2.0}, vals)
	})
	t.Run("FilterKeepsOrder", func(t *testing.T) {
		got, err := run(t, `{"node_id":"s","op":"core::sort","inputs":["b"],"params":{"by":1,"order":"desc"}},
		 {"node_id":"out","op":"core::filter","inputs":["s"],"params":{"pred_id":"odd"}}`, user(1))
		require.NoError(t, err)
		require.Equal(t, []int64{3, 1}, ids(got))
	})
	t.Run("SortNullsLastAscAndDesc", func(t *testing.T) {
		// nulls: ids 1,2 (maybe 1,2) then 3,4 (null).
		for order, want := range map[string][]int64{"asc": {1, 2, 3, 4}, "desc": {2, 1, 3, 4}} {
			got, err := run(t, fmt.Sprintf(`{"node_id":"out","op":"core::sort","inputs":["nulls"],"params":{"by":5001,"order":%q}}`, order), user(1))
			require.NoError(t, err)
			require.Equal(t, want, ids(got), order)
		}
	})
	t.Run("SortIsStable", func(t *testing.T) {
		// Two copies of 1..2 with equal keys: ties keep their input order,
		// which the maybe column (set on the first copy only) reveals.
		got, err := run(t, `{"node_id":"c","op":"core::concat","inputs":["va"],"params":{"rhs":"a"}},
		 {"node_id":"out","op":"core::sort","inputs":["c"],"params":{"by":1,"order":"desc"}}`, user(1))
		require.NoError(t, err)
		require.Equal(t, []cand{{2, map[string]any{"maybe": 2.0}}, {2, map[string]any{}}, {1, map[string]any{"maybe": 1.0}}, {1, map[string]any{}}}, got)
	})
	t.Run("SortNullsFirstInInput", func(t *testing.T) {
		// Rows 3,4 (maybe null) come before 1,2 (maybe 1,2): nulls still
		// sort last, in their input order, both ways.
		for order, want := range map[string][]int64{"asc": {1, 2, 3, 4}, "desc": {2, 1, 3, 4}} {
			got, err := run(t, fmt.Sprintf(`{"node_id":"c","op":"core::concat","inputs":["bb"],"params":{"rhs":"va"}},
			 {"node_id":"out","op":"core::sort","inputs":["c"],"params":{"by":5001,"order":%q}}`, order), user(1))
			require.NoError(t, err)
			require.Equal(t, want, ids(got), order)
		}
	})
	t.Run("SortTiesOnEqualFloats", func(t *testing.T) {
		// Input order 4,3,2,1 with final_score 1,1,0,0 (ids 1,2 have maybe,
		// so maybe*0 = 0; 3,4 fall back to 1): equal floats keep their
		// input order in both directions.
		for order, want := range map[string][]int64{"asc": {2, 1, 4, 3}, "desc": {4, 3, 2, 1}} {
			got, err := run(t, fmt.Sprintf(`{"node_id":"rev","op":"core::sort","inputs":["nulls"],"params":{"by":1,"order":"desc"}},
			 {"node_id":"score","op":"core::vm","inputs":["rev"],"params":{"expr_id":"zero_or_one","out_key":2001}},
			 {"node_id":"out","op":"core::sort","inputs":["score"],"params":{"by":2001,"order":%q}}`, order), user(1))
			require.NoError(t, err)
			require.Equal(t, want, ids(got), order)
			for _, c := range got {
				require.Equal(t, map[bool]float64{true: 0, false: 1}[c.ID <= 2], c.Fields["final_score"], "id %d", c.ID)
			}
		}
	})
	t.Run("SortByStringKey", func(t *testing.T) {
		got, err := b.runErr(t, planOf(`{"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
		 {"node_id":"f","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":4}},
		 {"node_id":"out","op":"sort","inputs":["f"],"params":{"key":3001}}`, ""), user(1))
		require.NoError(t, err)
		require.Equal(t, []int64{2, 4, 1, 3}, ids(got), "CA before US, stable within")
	})
	t.Run("SortByStringKeyNullsLast", func(t *testing.T) {
		// follow:123 = 1..5 (countries US/CA), recommendation:123 = 1021..1025
		// (no hash: null country). Both orders put the nulls last, in input order.
		for order, want := range map[string][]int64{
			"asc":  {2, 4, 1, 3, 5, 1021, 1022, 1023, 1024, 1025},
			"desc": {1, 3, 5, 2, 4, 1021, 1022, 1023, 1024, 1025},
		} {
			got, err := b.runErr(t, planOf(`{"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
			 {"node_id":"r","op":"core::recommendation","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":10}},
			 {"node_id":"f","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":10}},
			 {"node_id":"c","op":"core::concat","inputs":["r"],"params":{"rhs":"f"}},
			 {"node_id":"out","op":"core::sort","inputs":["c"],"params":{"by":3001,"order":"`+order+`"}}`, ""), user(123))
			require.NoError(t, err)
			require.Equal(t, want, ids(got), order)
		}
	})
	t.Run("SortByMissingColumnKeepsOrder", func(t *testing.T) {
		got, err := run(t, `{"node_id":"out","op":"core::sort","inputs":["b"],"params":{"by":2001,"order":"desc"}}`, user(1))
		require.NoError(t, err)
		require.Equal(t, seq(1, 4), ids(got))
	})
	t.Run("Take", func(t *testing.T) {
		got, err := run(t, `{"node_id":"out","op":"core::take","inputs":["nulls"],"params":{"count":3}}`, user(1))
		require.NoError(t, err)
		require.Equal(t, []int64{1, 2, 3}, ids(got))
		got, err = run(t, `{"node_id":"out","op":"core::take","inputs":["nulls"],"params":{"count":100}}`, user(1))
		require.NoError(t, err)
		require.Equal(t, []int64{1, 2, 3, 4}, ids(got))
		got, err = run(t, `{"node_id":"s","op":"core::sort","inputs":["nulls"],"params":{"by":1,"order":"desc"}},
		 {"node_id":"out","op":"core::take","inputs":["s"],"params":{"count":2}}`, user(1))
		require.NoError(t, err)
		require.Equal(t, []int64{4, 3}, ids(got))
	})
	t.Run("ConcatUnionsColumns", func(t *testing.T) {
		got, err := run(t, `{"node_id":"out","op":"core::take","inputs":["nulls"],"params":{"count":4}}`, user(1))
		require.NoError(t, err)
		require.Equal(t, []cand{{1, map[string]any{"maybe": 1.0}}, {2, map[string]any{"maybe": 2.0}}, {3, map[string]any{}}, {4, map[string]any{}}}, got)
	})
}
