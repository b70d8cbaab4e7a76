package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// The composition root builds the process's one task store: no other
// production code calls store.New, so no component can carry a store of
// its own with another configuration (the orchestrator's used to ignore
// MAX_TASK_AGE and MAX_RETRIES that way). The benchmark tool builds its
// own in a namespace of its own.
func TestOnlyTheCompositionRootBuildsAStore(t *testing.T) {
	allowed := map[string]bool{"internal/platform/app": true, "cmd/taskflow-bench": true,
		"internal/testrig/externaltest": true} // a test rig: each test's deployment in a namespace of its own
	root := "../../.."
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "node_modules" || n == ".git" || n == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		dir := filepath.ToSlash(filepath.Dir(rel))
		if dir == "internal/engine/store" || allowed[dir] {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		storeName := ""
		for _, im := range f.Imports {
			if strings.Trim(im.Path.Value, `"`) == module+"internal/engine/store" {
				storeName = "store"
				if im.Name != nil {
					storeName = im.Name.Name
				}
			}
		}
		if storeName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "New" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == storeName {
						found = append(found, rel)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Fatalf("store.New outside the composition root (internal/platform/app): %v", found)
	}
}
