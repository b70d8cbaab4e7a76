package batch_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/plan/batch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func sample() *batch.Batch {
	b := batch.New([]int64{10, 20, 30})
	b = b.WithFloat(2001, &batch.FloatCol{Vals: []float64{1, 0, 3}, Valid: []bool{true, false, true}})
	return b.WithString(3001, &batch.StringCol{Vals: []string{"US", "CA", ""}, Valid: []bool{true, true, false}})
}

func TestRowSetIndex(t *testing.T) {
	t.Parallel()
	all := batch.Of(sample())
	require.Equal(t, 3, all.Len())
	require.Equal(t, []int32{0, 1, 2}, all.Rows())
	sel := all.WithIndex([]int32{2, 0})
	require.Same(t, all.Batch, sel.Batch, "an index vector never copies the columns")
	require.Equal(t, 2, sel.Len())
	require.Equal(t, int32(0), sel.Row(1))
	rows := sel.Rows()
	rows[0] = 1
	require.Equal(t, []int32{2, 0}, sel.Index, "Rows is a copy the caller may change")
}

func TestWithColumnSharesTheRest(t *testing.T) {
	t.Parallel()
	b := sample()
	score := &batch.FloatCol{Vals: []float64{9, 9, 9}, Valid: []bool{true, true, true}}
	nb := b.WithFloat(2002, score)
	require.Same(t, b.Float(2001), nb.Float(2001))
	require.Same(t, b.String(3001), nb.String(3001))
	require.Nil(t, b.Float(2002), "the old batch is not changed")
	require.Equal(t, []int{2001, 2002}, nb.FloatKeys())
	over := nb.WithFloat(2001, score)
	require.Same(t, score, over.Float(2001))
	require.Equal(t, 1.0, nb.Float(2001).Vals[0], "replacing a column leaves the batch it came from alone")
}

func TestConcatUnionsColumnsInOrder(t *testing.T) {
	t.Parallel()
	lhs := batch.Of(sample()).WithIndex([]int32{2, 0})
	rhs := batch.Of(batch.New([]int64{7, 8})).WithIndex([]int32{1})
	out := batch.Concat(lhs, rhs)
	require.Nil(t, out.Index)
	require.Equal(t, []int64{30, 10, 8}, out.Batch.IDs)
	f := out.Batch.Float(2001)
	require.Equal(t, []bool{true, true, false}, f.Valid, "rhs has no 2001: null")
	require.Equal(t, []float64{3, 1}, f.Vals[:2])
	s := out.Batch.String(3001)
	require.Equal(t, []bool{false, true, false}, s.Valid)
	require.Equal(t, "US", s.Vals[1])
	require.Equal(t, 0, batch.Concat(batch.Empty(), batch.Empty()).Len())
}
