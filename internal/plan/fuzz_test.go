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

// FuzzPlan: any bytes as a plan file either fail with ErrPlan or compile.
// The seed corpus is every plan in testdata plus a few broken ones.
func FuzzPlan(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "plans", "*.json"))
	require.NoError(f, err)
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
