package plan_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

// seedPlans are FuzzPlan's seeds from testdata: every plan of
// testdata/plans and testdata/every_op.plan.json, which uses every op (and
// alias forms), every expression and predicate operator, every comparison,
// capabilities and extensions.
func seedPlans(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "plans", "*.json"))
	require.NoError(t, err)
	return append(files, filepath.Join("testdata", "every_op.plan.json"))
}

// TestFuzzSeedsCompile keeps FuzzPlan's seeds valid plans, so that the
// fuzzer starts from plans that reach every op and operator's compiler.
func TestFuzzSeedsCompile(t *testing.T) {
	t.Parallel()
	reg, err := registry.Default("dev")
	require.NoError(t, err)
	for _, p := range seedPlans(t) {
		_, err := plan.Load(p, reg, plan.NewCatalog())
		require.NoError(t, err, p)
	}
}

// FuzzPlan: any bytes as a plan file either fail with ErrPlan or compile.
// The seed corpus is seedPlans plus a few broken ones.
func FuzzPlan(f *testing.F) {
	files := seedPlans(f)
	for _, p := range files {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
	}
	for _, s := range []string{`{}`, `[`, `{"schema_version":1,"plan_name":"x","nodes":[{"node_id":"a","op":"core::take","inputs":["a"],"params":{"count":1}}],"outputs":["a"]}`,
		`{"schema_version":1,"plan_name":"x","nodes":[null],"outputs":[]}`, `{"schema_version":1.5}`} {
		f.Add([]byte(s))
	}
	reg, err := registry.Default("dev")
	require.NoError(f, err)
	cat := plan.NewCatalog()
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := plan.Parse(data, "fuzz")
		if err != nil {
			if !errors.Is(err, plan.ErrPlan) {
				t.Fatalf("parse error without ErrPlan: %v", err)
			}
			return
		}
		c, err := plan.Compile(p, reg, cat)
		if err != nil {
			if !errors.Is(err, plan.ErrPlan) {
				t.Fatalf("compile error without ErrPlan: %v", err)
			}
			return
		}
		if len(c.Nodes) != len(p.Nodes) {
			t.Fatalf("compiled %d nodes of %d", len(c.Nodes), len(p.Nodes))
		}
	})
}
