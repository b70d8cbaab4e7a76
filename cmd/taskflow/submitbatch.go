package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// batchMax is the most tasks one POST /api/v1/tasks/batch carries.
const batchMax = 1000

// batchLine is one task of a --batch input and the line it came from.
type batchLine struct {
	line int
	task json.RawMessage
}

// parseBatchLines reads JSON lines: each non-blank line one JSON object
// (a POST /api/v1/tasks body). It returns the tasks with their line
// numbers, and an error naming every line that is not an object (at most
// the first 20), so nothing is sent from a file with a typo.
func parseBatchLines(r io.Reader) ([]batchLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []batchLine
	var bad []string
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
			if len(bad) < 20 {
				msg := "not a JSON object"
				if err != nil {
					msg += ": " + err.Error()
				}
				bad = append(bad, fmt.Sprintf("line %d: %s", n, msg))
			}
			continue
		}
		out = append(out, batchLine{line: n, task: append(json.RawMessage(nil), b...)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	if len(bad) > 0 {
		return nil, errors.New(strings.Join(bad, "\n"))
	}
	if len(out) == 0 {
		return nil, errors.New("no tasks: every line is blank")
	}
	return out, nil
}

// batchItem is one result of POST /api/v1/tasks/batch.
type batchItem struct {
	Index  int    `json:"index"`
	Status string `json:"status"`
	TaskID string `json:"task_id"`
	State  string `json:"state"`
	Error  *struct {
		Code, Message, Field string
	} `json:"error"`
}

// submitBatch submits the JSON lines of src (a file, or - for stdin) in
// requests of up to batchMax tasks and prints one line per task. With
// idemKey, request i carries the key "idemKey" (the first) or
// "idemKey#i", so the whole command can be run again safely.
func submitBatch(ctx context.Context, m *Main, c *apiClient, src, idemKey string) error {
	var r io.Reader = m.Stdin
	name := "stdin"
	if src != "-" {
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		r, name = f, src
	}
	lines, err := parseBatchLines(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	refused := 0
	for start, req := 0, 0; start < len(lines); start, req = start+batchMax, req+1 {
		chunk := lines[start:min(start+batchMax, len(lines))]
		tasks := make([]json.RawMessage, len(chunk))
		for i, l := range chunk {
			tasks[i] = l.task
		}
		var hdr http.Header
		if idemKey != "" {
			k := idemKey
			if req > 0 {
				k += "#" + strconv.Itoa(req)
			}
			hdr = http.Header{"Idempotency-Key": {k}}
		}
		raw, _, err := c.sendWith(ctx, "POST", "/api/v1/tasks/batch", map[string]any{"tasks": tasks}, hdr)
		if err != nil {
			var ae *APIError
			if errors.As(err, &ae) && strings.HasPrefix(ae.Field, "tasks[") {
				ae.Field = lineField(ae.Field, chunk)
			}
			return fmt.Errorf("%s: lines %d-%d: %w", name, chunk[0].line, chunk[len(chunk)-1].line, err)
		}
		var res struct {
			Results []batchItem `json:"results"`
		}
		if err := json.Unmarshal(raw, &res); err != nil || len(res.Results) != len(chunk) {
			return fmt.Errorf("%s: unexpected answer to a batch of %d: %s", name, len(chunk), short(string(raw), 200))
		}
		for _, it := range res.Results {
			if it.Index < 0 || it.Index >= len(chunk) {
				return fmt.Errorf("%s: unexpected answer: item %d of a batch of %d", name, it.Index, len(chunk))
			}
			line := chunk[it.Index].line
			if it.Status == "invalid" && it.Error != nil {
				refused++
				field := it.Error.Field
				if _, f, ok := strings.Cut(field, "]."); ok {
					field = f
				} else if strings.HasPrefix(field, "tasks[") {
					field = ""
				}
				msg := it.Error.Message
				if field != "" {
					msg = field + ": " + msg
				}
				fmt.Fprintf(m.Stdout, "%d\tinvalid\t%s\n", line, msg)
				fmt.Fprintf(m.Stderr, "%s:%d: %s (%s)\n", name, line, msg, it.Error.Code)
				continue
			}
			fmt.Fprintf(m.Stdout, "%d\t%s\t%s\n", line, it.Status, it.TaskID)
		}
	}
	if refused > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("%s: %d of %d lines refused", name, refused, len(lines))}
	}
	return nil
}

// lineField rewrites "tasks[i].x" as "line N: x" for the chunk.
func lineField(field string, chunk []batchLine) string {
	rest := strings.TrimPrefix(field, "tasks[")
	num, tail, ok := strings.Cut(rest, "]")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || i >= len(chunk) {
		return field
	}
	return fmt.Sprintf("line %d%s", chunk[i].line, tail)
}
