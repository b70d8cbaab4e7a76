package tools

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/taskflow/taskflow/extsvc"
)

// MaxCSVBytes bounds data.analyze's input.
const MaxCSVBytes = 10 << 20

type analyzeParams struct {
	// CSV is the data, with a header row.
	CSV string `json:"csv"`
	// Delimiter is one character; default ",".
	Delimiter string `json:"delimiter"`
}

// ColumnStats are the statistics of one CSV column. Numeric statistics are
// set when every non-empty value parses as a number.
type ColumnStats struct {
	Name     string   `json:"name"`
	Count    int      `json:"count"`
	Empty    int      `json:"empty"`
	Numeric  bool     `json:"numeric"`
	Sum      *float64 `json:"sum,omitempty"`
	Mean     *float64 `json:"mean,omitempty"`
	Median   *float64 `json:"median,omitempty"`
	Min      *float64 `json:"min,omitempty"`
	Max      *float64 `json:"max,omitempty"`
	StdDev   *float64 `json:"stddev,omitempty"`
	Distinct int      `json:"distinct"`
	Top      string   `json:"top,omitempty"`
	TopCount int      `json:"top_count,omitempty"`
}

// Stats are data.analyze's output.
type Stats struct {
	Rows    int           `json:"rows"`
	Columns []ColumnStats `json:"columns"`
}

// Analyze computes the statistics of a CSV with a header row.
func Analyze(data string, delim rune) (*Stats, error) {
	r := csv.NewReader(strings.NewReader(data))
	r.Comma = delim
	r.FieldsPerRecord = 0
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("empty CSV: a header row is required")
	}
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	cols := make([][]string, len(header))
	rows := 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err)
		}
		rows++
		for i := range cols {
			cols[i] = append(cols[i], rec[i])
		}
	}
	st := &Stats{Rows: rows}
	for i, name := range header {
		st.Columns = append(st.Columns, columnStats(name, cols[i]))
	}
	return st, nil
}

func columnStats(name string, vals []string) ColumnStats {
	c := ColumnStats{Name: name}
	counts := map[string]int{}
	var nums []float64
	numeric := true
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if v == "" {
			c.Empty++
			continue
		}
		c.Count++
		counts[v]++
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			numeric = false
		} else {
			nums = append(nums, f)
		}
	}
	c.Distinct = len(counts)
	for v, n := range counts {
		if n > c.TopCount || n == c.TopCount && v < c.Top {
			c.Top, c.TopCount = v, n
		}
	}
	if numeric && len(nums) > 0 {
		c.Numeric = true
		sort.Float64s(nums)
		var sum float64
		for _, f := range nums {
			sum += f
		}
		mean := sum / float64(len(nums))
		var ss float64
		for _, f := range nums {
			ss += (f - mean) * (f - mean)
		}
		sd := math.Sqrt(ss / float64(len(nums)))
		med := nums[len(nums)/2]
		if len(nums)%2 == 0 {
			med = (nums[len(nums)/2-1] + nums[len(nums)/2]) / 2
		}
		mn, mx := nums[0], nums[len(nums)-1]
		c.Sum, c.Mean, c.Median, c.Min, c.Max, c.StdDev = &sum, &mean, &med, &mn, &mx, &sd
	}
	return c
}

type analyzeHandler struct{ o Options }

func (h analyzeHandler) Handle(ctx context.Context, t *extsvc.Task) (json.RawMessage, error) {
	var p analyzeParams
	if err := t.UnmarshalParams(&p); err != nil {
		return nil, err
	}
	if p.CSV == "" {
		return nil, invalid("csv: required (the data, with a header row)")
	}
	if len(p.CSV) > MaxCSVBytes {
		return nil, invalid("csv: %d bytes exceeds %d", len(p.CSV), MaxCSVBytes)
	}
	delim := ','
	if p.Delimiter != "" {
		r, n := utf8.DecodeRuneInString(p.Delimiter)
		if n != len(p.Delimiter) || r == '"' || r == '\n' || r == '\r' {
			return nil, invalid("delimiter %q: want one character other than a quote or newline", p.Delimiter)
		}
		delim = r
	}
	st, err := Analyze(p.CSV, delim)
	if err != nil {
		return nil, invalid("%v", err)
	}
	out, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	url, _, sum, err := writeOutput(ctx, h.o, t, "json", out)
	if err != nil {
		return nil, err
	}
	numeric := 0
	for _, c := range st.Columns {
		if c.Numeric {
			numeric++
		}
	}
	return extsvc.Result(url, fmt.Sprintf("%d rows, %d columns (%d numeric)", st.Rows, len(st.Columns), numeric),
		map[string]any{"rows": st.Rows, "columns": len(st.Columns), "numeric_columns": numeric, "sha256": sum, "stats": st}), nil
}
