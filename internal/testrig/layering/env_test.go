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

// The environment is read in one place, internal/platform/config's table: every
// setting has its variable, flag, default, documentation and rule there,
// and the README's table is generated from it. A Getenv anywhere else in
// production code is a setting the table does not know. (Main's Getenv
// field is passed to app.Load, never called.)
func TestOnlyTheConfigTableReadsTheEnvironment(t *testing.T) {
	allowed := map[string]bool{"internal/platform/config": true,
		// test rigs: where the tests' Redis and PostgreSQL are
		// (TASKFLOW_TEST_REDIS_URL, TASKFLOW_TEST_DATABASE_URL)
		"internal/testrig/testredis": true, "internal/testrig/externaltest": true}
	reads := map[string]bool{"Getenv": true, "getenv": true, "LookupEnv": true, "Environ": true}
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
		if dir := filepath.ToSlash(filepath.Dir(rel)); allowed[dir] || strings.HasPrefix(dir, "internal/platform/config/") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name := ""
			switch fn := c.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			if reads[name] {
				found = append(found, filepath.ToSlash(rel)+":"+fset.Position(c.Pos()).String()[len(path)+1:])
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Fatalf("the environment is read outside internal/platform/config's table (add the setting to config.Settings and take it from the Config):\n%s", strings.Join(found, "\n"))
	}
}
