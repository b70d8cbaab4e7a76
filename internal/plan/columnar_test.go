package plan_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
)

// TestFilterSortTakeShareTheBatch: filter, sort and take only make index
// vectors: their output is the very batch vm made (no column copied),
// seen through a different index, and vm's own output is left as it was.
func TestFilterSortTakeShareTheBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.compile(t, `{"schema_version":1,"plan_name":"share","nodes":[
	 {"node_id":"src","op":"test::fixed_source","inputs":[],"params":{"row_count":6}},
	 {"node_id":"w","op":"core::vm","inputs":["src"],"params":{"expr_id":"neg","out_key":2001}},
	 {"node_id":"f","op":"core::filter","inputs":["w"],"params":{"pred_id":"small"}},
	 {"node_id":"s","op":"core::sort","inputs":["f"],"params":{"by":2001,"order":"asc"}},
	 {"node_id":"t","op":"core::take","inputs":["s"],"params":{"count":3}}],
	 "expr_table":{"neg":{"op":"neg","x":{"op":"key_ref","key_id":1}}},
	 "pred_table":{"small":{"op":"cmp","cmp":"<","a":{"op":"key_ref","key_id":1},"b":{"op":"const_number","value":5}}},
	 "outputs":["w","t"]}`)
	res, err := b.eng.Run(context.Background(), c, user(1), plan.RunOptions{})
	require.NoError(t, err)
	w, top := res.Outputs[0], res.Outputs[1]
	require.Same(t, w.Batch, top.Batch, "filter, sort and take share vm's batch")
	require.Nil(t, w.Index, "vm's output is every row, untouched by the sort after it")
	// ids 1..4 pass id < 5; by -id ascending: 4, 3, 2, 1; first 3.
	require.Equal(t, []int32{3, 2, 1}, top.Index)
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 4, 3, 2}, ids(decode(t, b.reg, res)))
}
