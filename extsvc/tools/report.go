package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/taskflow/taskflow/extsvc"
)

// reportParams are report.generate's params (example plus the
// data the report is about).
type reportParams struct {
	Title   string `json:"title"`
	Quarter string `json:"quarter"`
	Year    int    `json:"year"`
	// Format is md, html, csv or pdf. Default md.
	Format string `json:"format"`
	// Data maps a metric name to its values in the quarter (e.g. one per
	// month or per week).
	Data map[string][]float64 `json:"data"`
}

type metricRow struct {
	Name                     string
	N                        int
	Total, Mean, Min, Max    float64
	FirstToLastChangePercent float64
}

type reportHandler struct{ o Options }

func (h reportHandler) Handle(ctx context.Context, t *extsvc.Task) (json.RawMessage, error) {
	var p reportParams
	if err := t.UnmarshalParams(&p); err != nil {
		return nil, err
	}
	p.Quarter = strings.ToUpper(strings.TrimSpace(p.Quarter))
	switch p.Quarter {
	case "Q1", "Q2", "Q3", "Q4":
	default:
		return nil, invalid("quarter %q: want Q1, Q2, Q3 or Q4", p.Quarter)
	}
	if p.Year < 1900 || p.Year > 2200 {
		return nil, invalid("year %d: want 1900–2200", p.Year)
	}
	if p.Format == "" {
		p.Format = "md"
	}
	p.Format = strings.ToLower(p.Format)
	if p.Title == "" {
		p.Title = fmt.Sprintf("%s %d report", p.Quarter, p.Year)
	}
	if len(p.Title) > 200 {
		return nil, invalid("title longer than 200 characters")
	}
	rows := make([]metricRow, 0, len(p.Data))
	for name, vals := range p.Data {
		if len(vals) == 0 {
			continue
		}
		r := metricRow{Name: name, N: len(vals), Min: math.Inf(1), Max: math.Inf(-1)}
		for _, v := range vals {
			r.Total += v
			r.Min = math.Min(r.Min, v)
			r.Max = math.Max(r.Max, v)
		}
		r.Mean = r.Total / float64(r.N)
		if vals[0] != 0 {
			r.FirstToLastChangePercent = (vals[len(vals)-1] - vals[0]) / math.Abs(vals[0]) * 100
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, extsvc.Fail("INSUFFICIENT_DATA", fmt.Sprintf("Not enough data for %s %d", p.Quarter, p.Year), false)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	if err := t.Progress(ctx, 50, "metrics computed", 0); err != nil {
		return nil, extsvc.Fail("SERVICE_UNAVAILABLE", "progress: "+err.Error(), true)
	}
	generated := time.Now().UTC().Format(time.RFC3339)
	var out []byte
	switch p.Format {
	case "md":
		out = reportMarkdown(p, rows, generated)
	case "html":
		out = reportHTML(p, rows, generated)
	case "csv":
		out = reportCSV(rows)
	case "pdf":
		out = reportPDF(p, rows, generated)
	default:
		return nil, invalid("format %q: want md, html, csv or pdf", p.Format)
	}
	url, _, sum, err := writeOutput(ctx, h.o, t, p.Format, out)
	if err != nil {
		return nil, err
	}
	noun := "metrics"
	if len(rows) == 1 {
		noun = "metric"
	}
	return extsvc.Result(url, fmt.Sprintf("%s: %d %s", p.Title, len(rows), noun), map[string]any{
		"format": p.Format, "bytes": len(out), "sha256": sum, "metrics": len(rows),
	}), nil
}

func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

func reportMarkdown(p reportParams, rows []metricRow, generated string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\nPeriod: %s %d · generated %s\n\n", p.Title, p.Quarter, p.Year, generated)
	b.WriteString("| metric | values | total | mean | min | max | change % |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", strings.ReplaceAll(r.Name, "|", "\\|"), r.N,
			f2(r.Total), f2(r.Mean), f2(r.Min), f2(r.Max), f2(r.FirstToLastChangePercent))
	}
	return b.Bytes()
}

func reportHTML(p reportParams, rows []metricRow, generated string) []byte {
	var b bytes.Buffer
	e := html.EscapeString
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head><body>\n<h1>%s</h1>\n<p>Period: %s %d · generated %s</p>\n",
		e(p.Title), e(p.Title), p.Quarter, p.Year, generated)
	b.WriteString("<table>\n<tr><th>metric</th><th>values</th><th>total</th><th>mean</th><th>min</th><th>max</th><th>change %</th></tr>\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			e(r.Name), r.N, f2(r.Total), f2(r.Mean), f2(r.Min), f2(r.Max), f2(r.FirstToLastChangePercent))
	}
	b.WriteString("</table>\n</body></html>\n")
	return b.Bytes()
}

func reportCSV(rows []metricRow) []byte {
	var b bytes.Buffer
	b.WriteString("metric,values,total,mean,min,max,change_percent\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%d,%s,%s,%s,%s,%s\n", csvField(r.Name), r.N, f2(r.Total), f2(r.Mean), f2(r.Min), f2(r.Max), f2(r.FirstToLastChangePercent))
	}
	return b.Bytes()
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// reportPDF writes a one-page PDF 1.4 with the report as text lines in
// Helvetica (the standard font every reader has).
func reportPDF(p reportParams, rows []metricRow, generated string) []byte {
	lines := []string{p.Title, fmt.Sprintf("Period: %s %d - generated %s", p.Quarter, p.Year, generated), ""}
	lines = append(lines, "metric | values | total | mean | min | max | change %")
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%s | %d | %s | %s | %s | %s | %s", r.Name, r.N, f2(r.Total), f2(r.Mean), f2(r.Min), f2(r.Max), f2(r.FirstToLastChangePercent)))
	}
	if len(lines) > 48 {
		lines = append(lines[:47], fmt.Sprintf("... %d more metrics", len(lines)-47))
	}
	var content bytes.Buffer
	content.WriteString("BT /F1 11 Tf 50 790 Td 14 TL\n")
	for _, l := range lines {
		fmt.Fprintf(&content, "(%s) Tj T*\n", pdfEscape(l))
	}
	content.WriteString("ET\n")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", content.Len(), content.String()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// pdfEscape keeps printable ASCII (other runes become '?') and escapes the
// string delimiters.
func pdfEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '(' || r == ')' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 32 && r < 127:
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}
