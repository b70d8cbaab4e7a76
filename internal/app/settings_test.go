package app_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/app"
)

// readmeRows reads the README's configuration table: the variables cell
// (backticked names joined by " / ") and the default cell of each row.
func readmeRows(t *testing.T) [][2]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	s := string(b)
	i := strings.Index(s, "\n## Configuration\n")
	require.GreaterOrEqual(t, i, 0, "README has a Configuration section")
	var rows [][2]string
	for _, line := range strings.Split(s[i+1:], "\n")[1:] {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, " | ")
		require.GreaterOrEqual(t, len(cells), 3, line)
		rows = append(rows, [2]string{strings.TrimPrefix(cells[0], "| "), cells[1]})
	}
	return rows
}

// The README's configuration table is the Go table, row for row: the same
// variables in the same order, the same default text.
func TestReadmeTableIsTheSettingsTable(t *testing.T) {
	rows := readmeRows(t)
	require.Len(t, rows, len(app.Settings), "one README row per setting")
	for i, st := range app.Settings {
		vars := "`" + strings.Join(st.Vars, "` / `") + "`"
		require.Equal(t, vars, rows[i][0], "row %d", i+1)
		require.Equal(t, st.Default, rows[i][1], "default of %s", vars)
	}
}

// Each default the table states as one value is the one the code applies.
func TestSettingsDefaultsAreTheCodes(t *testing.T) {
	cfg, err := app.Load(func(string) string { return "" })
	require.NoError(t, err)
	n := 0
	for _, st := range app.Settings {
		if st.Effective == nil {
			continue
		}
		n++
		require.Equal(t, st.Default, "`"+st.Effective(cfg)+"`", "default of %v", st.Vars)
	}
	require.Greater(t, n, 25)
}

// Every variable the code reads is in the table (and so in the README).
func TestEveryVariableIsDocumented(t *testing.T) {
	known := map[string]bool{}
	for _, st := range app.Settings {
		for _, v := range st.Vars {
			known[v] = true
		}
	}
	// variables read by tests or tools only, not settings of the product
	notSettings := map[string]bool{"TASKFLOW_TEST_REDIS_URL": true, "TASKFLOW_TEST_DATABASE_URL": true,
		"RANKD_REFERENCE_DIR": true, "CI": true}
	read := regexp.MustCompile(`(?:[gG]etenv|serviceEnvOr\(m,)\(?\s*"([A-Z][A-Z0-9_]+)"|Env\w*\s*=\s*"([A-Z][A-Z0-9_]+)"`)
	missing := map[string]bool{}
	for _, root := range []string{"../../cmd", "../../internal", "../../extsvc"} {
		require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range read.FindAllStringSubmatch(string(b), -1) {
				v := m[1] + m[2]
				if !known[v] && !notSettings[v] {
					missing[v+" ("+path+")"] = true
				}
			}
			return nil
		}))
	}
	var out []string
	for v := range missing {
		out = append(out, v)
	}
	sort.Strings(out)
	require.Empty(t, out, "variables the code reads that the configuration table does not list")
}
