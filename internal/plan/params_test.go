package plan_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIntegralFloatIsAnInt: an int param accepts an integral float (3.0,
// 2e0), and the value is the integer's (docs/plan.md, "Plans").
func TestIntegralFloatIsAnInt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got, err := b.runErr(t, planOf(viewerNode+`,
	 {"node_id":"f","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":3.0}},
	 {"node_id":"out","op":"core::take","inputs":["f"],"params":{"count":2e0}}`, ""), user(1))
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, ids(got), "follow:1's first 3, then the first 2 of them")
	got, err = b.runErr(t, planOf(`{"node_id":"out","op":"test::fixed_source","inputs":[],"params":{"row_count":4.0}}`, ""), user(1))
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4}, ids(got))
}
