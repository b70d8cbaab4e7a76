package plan_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/ir"
)

// TestSpecExamples runs six examples, written as plans in
// testdata/plans, against the demo data; expected answers follow from the
// data and the op rules.
func TestSpecExamples(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("SimpleViewer", func(t *testing.T) {
		got := b.run(t, b.load(t, "simple_viewer"), user(1), plan.RunOptions{})
		require.Equal(t, []cand{{ID: 1, Fields: map[string]any{"country": "US"}}}, got)
	})
	t.Run("ViewerFilter", func(t *testing.T) {
		c := b.load(t, "viewer_filter")
		require.Empty(t, b.run(t, c, user(1), plan.RunOptions{}), "id 1 is not > 5")
		require.Equal(t, []int64{123}, ids(b.run(t, c, user(123), plan.RunOptions{})))
	})
	t.Run("ParallelFanout", func(t *testing.T) {
		got := b.run(t, b.load(t, "parallel_fanout"), user(1), plan.RunOptions{})
		require.Equal(t, append(seq(1, 10), seq(1001, 1010)...), ids(got))
		for _, c := range got {
			require.Equal(t, country(c.ID), c.Fields["country"], "id %d", c.ID)
		}
	})
	t.Run("MixedPipeline", func(t *testing.T) {
		c := b.load(t, "mixed_pipeline")
		got := b.run(t, c, user(1), plan.RunOptions{})
		// score = id * 0.5 >= 0.5 keeps all of 1..10; sorted by score desc.
		require.Equal(t, []int64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, ids(got))
		for _, g := range got {
			require.Equal(t, float64(g.ID)*0.5, g.Fields["score"])
		}
		// P.weight = 0.1: only ids with id*0.1 >= 0.5 remain.
		req := &plan.Request{UserID: 1, Params: ir.Params{4: {Kind: ir.Number, Num: 0.1}}}
		got = b.run(t, c, req, plan.RunOptions{})
		var want []int64
		for id := int64(10); id >= 1; id-- {
			if float64(id)*0.1 >= 0.5 {
				want = append(want, id)
			}
		}
		require.Equal(t, want, ids(got))
	})
	t.Run("Diamond", func(t *testing.T) {
		got := b.run(t, b.load(t, "diamond"), user(1), plan.RunOptions{})
		require.Equal(t, append(seq(1, 10), seq(1001, 1010)...), ids(got))
	})
	t.Run("ComplexDAG", func(t *testing.T) {
		c := b.load(t, "complex_dag")
		res, err := b.eng.Run(t.Context(), c, user(1), plan.RunOptions{Deadline: 5e9, Trace: true})
		require.NoError(t, err)
		got := decode(t, b.reg, res)
		// follow:1 = 1..10; only media:1 and media:2 exist → 1001..1006;
		// recommendation:1's ids have no media. score = id*0.1, desc.
		require.Equal(t, []int64{1006, 1005, 1004, 1003, 1002, 1001}, ids(got))
		for _, g := range got {
			require.Equal(t, float64(g.ID)*0.1, g.Fields["score"])
			require.NotContains(t, g.Fields, "country", "media rows are ids only")
		}
		// viewer (0: only follow and recommendation read it) + follow
		// (LRANGE; no hydration: only media reads it) + media (1).
		require.Equal(t, 2, res.CriticalRoundTrips)
		require.Len(t, res.Trace, 10)
	})
	t.Run("RankedFollowsMatchesReelsPlanA", func(t *testing.T) {
		got := b.run(t, b.load(t, "ranked_follows"), user(1), plan.RunOptions{})
		// final_score = id*0.2 >= 0.6 → ids 3..7 after take(5).
		require.Equal(t, []int64{3, 4, 5, 6, 7}, ids(got))
		line := string(plan.AppendCandidates(nil, mustRun(t, b, "ranked_follows").Outputs, b.reg))
		require.Contains(t, line, `{"id":3,"fields":{"final_score":0.6000000000000001,"country":"US"}}`)
		require.Contains(t, line, `{"id":5,"fields":{"final_score":1.0,"country":"US"}}`)
	})
}

func mustRun(t *testing.T, b *bundle, name string) *plan.Result {
	t.Helper()
	res, err := b.eng.Run(t.Context(), b.load(t, name), user(1), plan.RunOptions{})
	require.NoError(t, err)
	return res
}

// TestDSLPlansMatchExamples: the DSL's compiled plans/*.plan.json (what
// rankd --plan_name and the API serve) give the same answers as the
// hand-written examples above, for users with and without data and with
// P.weight set.
func TestDSLPlansMatchExamples(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, name := range []string{"simple_viewer", "viewer_filter", "parallel_fanout", "mixed_pipeline", "diamond", "complex_dag"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsl, err := b.eng.Load(filepath.Join("..", "..", "plans", name+".plan.json"))
			require.NoError(t, err)
			require.Equal(t, name, dsl.Name)
			ours := b.load(t, name)
			for _, req := range []*plan.Request{user(1), user(123), user(99999),
				{UserID: 1, Params: ir.Params{4: {Kind: ir.Number, Num: 0.07}}}} {
				want := b.run(t, ours, req, plan.RunOptions{})
				require.Equal(t, want, b.run(t, dsl, req, plan.RunOptions{}), "user %d", req.UserID)
			}
		})
	}
}
