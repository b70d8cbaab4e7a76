package tools

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/taskflow/taskflow/extsvc"
)

// MaxExportRows bounds data.export's input.
const MaxExportRows = 100000

type exportParams struct {
	// Rows are JSON objects.
	Rows []map[string]any `json:"rows"`
	// Format is csv, json or jsonl. Default csv.
	Format string `json:"format"`
	// Columns chooses and orders the CSV columns; default: every key seen,
	// sorted.
	Columns []string `json:"columns"`
}

type exportHandler struct{ o Options }

func (h exportHandler) Handle(ctx context.Context, t *extsvc.Task) (json.RawMessage, error) {
	var p exportParams
	if err := t.UnmarshalParams(&p); err != nil {
		return nil, err
	}
	if len(p.Rows) == 0 {
		return nil, invalid("rows: required (a list of objects)")
	}
	if len(p.Rows) > MaxExportRows {
		return nil, invalid("rows: %d exceeds %d", len(p.Rows), MaxExportRows)
	}
	if p.Format == "" {
		p.Format = "csv"
	}
	var out bytes.Buffer
	switch p.Format {
	case "csv":
		cols := p.Columns
		if len(cols) == 0 {
			seen := map[string]bool{}
			for _, r := range p.Rows {
				for k := range r {
					if !seen[k] {
						seen[k] = true
						cols = append(cols, k)
					}
				}
			}
			sort.Strings(cols)
		}
		w := csv.NewWriter(&out)
		_ = w.Write(cols)
		for _, r := range p.Rows {
			rec := make([]string, len(cols))
			for i, c := range cols {
				rec[i] = cell(r[c])
			}
			_ = w.Write(rec)
		}
		w.Flush()
		if err := w.Error(); err != nil {
			return nil, err
		}
	case "json":
		b, err := json.MarshalIndent(p.Rows, "", "  ")
		if err != nil {
			return nil, err
		}
		out.Write(b)
		out.WriteByte('\n')
	case "jsonl":
		enc := json.NewEncoder(&out)
		for _, r := range p.Rows {
			if err := enc.Encode(r); err != nil {
				return nil, err
			}
		}
	default:
		return nil, invalid("format %q: want csv, json or jsonl", p.Format)
	}
	url, _, sum, err := writeOutput(ctx, h.o, t, p.Format, out.Bytes())
	if err != nil {
		return nil, err
	}
	return extsvc.Result(url, fmt.Sprintf("exported %d rows as %s", len(p.Rows), p.Format), map[string]any{
		"rows": len(p.Rows), "format": p.Format, "bytes": out.Len(), "sha256": sum,
	}), nil
}

// cell renders a JSON value in a CSV cell: strings as is, null empty,
// everything else as JSON.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}
