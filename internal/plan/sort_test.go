package plan_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSortStringKeyNullsLast: rows without the string column (media rows
// have no country) sort after the others in both orders, and keep their
// input order among themselves, as do equal strings.
func TestSortStringKeyNullsLast(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// media:1 = 1001..1003 (no country) first, then follow:1's first four
	// (1 US, 2 CA, 3 US, 4 CA).
	for order, want := range map[string][]int64{
		"asc":  {2, 4, 1, 3, 1001, 1002, 1003},
		"desc": {1, 3, 2, 4, 1001, 1002, 1003},
	} {
		got, err := b.runErr(t, planOf(viewerNode+`,
		 {"node_id":"m","op":"core::media","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":3}},
		 {"node_id":"f","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":4}},
		 {"node_id":"c","op":"core::concat","inputs":["m"],"params":{"rhs":"f"}},
		 {"node_id":"out","op":"core::sort","inputs":["c"],"params":{"by":3001,"order":`+fmt.Sprintf("%q", order)+`}}`, ""), user(1))
		require.NoError(t, err)
		require.Equal(t, want, ids(got), order)
		for _, c := range got[4:] {
			require.NotContains(t, c.Fields, "country", "media rows have no country")
		}
	}
}
