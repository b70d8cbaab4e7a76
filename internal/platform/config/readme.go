package config

import (
	"bytes"
	"errors"
	"strings"
)

// The markers around the generated table in README.md.
const (
	TableBegin = "<!-- config-table:begin (generated from internal/platform/config's Settings by `go run ./internal/platform/config/gen`; edit the table there) -->"
	TableEnd   = "<!-- config-table:end -->"
)

// Markdown is the README's configuration table: one row per setting, in
// the table's order.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| variable | flag | default | meaning |\n|---|---|---|---|\n")
	for _, s := range Settings {
		flag := ""
		if s.Flag != "" {
			flag = "`--" + s.Flag + "`"
		}
		def := s.DefaultDoc
		if s.Default != "" {
			def = strings.TrimSpace("`" + s.Default + "` " + s.DefaultDoc)
		}
		b.WriteString("| `" + s.Env + "` | " + flag + " | " + def + " | " + s.Doc + " |\n")
	}
	return b.String()
}

// ReplaceTable returns readme with the text between its table markers
// replaced by Markdown.
func ReplaceTable(readme []byte) ([]byte, error) {
	i := bytes.Index(readme, []byte(TableBegin))
	j := bytes.Index(readme, []byte(TableEnd))
	if i < 0 || j < i {
		return nil, errors.New("config: README.md has no " + TableBegin + " … " + TableEnd)
	}
	var out bytes.Buffer
	out.Write(readme[:i+len(TableBegin)])
	out.WriteString("\n")
	out.WriteString(Markdown())
	out.Write(readme[j:])
	return out.Bytes(), nil
}
