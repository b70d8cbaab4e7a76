// Package tools holds the example external services of tools:
// report.generate (generate_report_tool), data.analyze (analyze_data_tool),
// document.process (process_document_tool), data.export (export_data_tool)
// and text.wordcount (wordcount_text_tool, also served by the Node example).
// Each returns the original result object {file_url, summary, metadata};
// all but the word count write a real output file. `taskflow service NAME`
// runs them.
package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/taskflow/taskflow/extsvc"
)

// Options configures the example services.
type Options struct {
	// OutputDir is where output files are written, one subdirectory per
	// task type (TASKFLOW_OUTPUT_DIR). Default "taskflow-output".
	OutputDir string
}

// WithDefaults returns o with unset fields defaulted.
func (o Options) WithDefaults() Options {
	if o.OutputDir == "" {
		o.OutputDir = "taskflow-output"
	}
	return o
}

// Spec describes one example service.
type Spec struct {
	// Service is the service name (its group is Service+"-group").
	Service string
	// Types are the task types it takes.
	Types []string
	// Register adds its handlers to a service.
	Register func(svc *extsvc.Server, o Options)
}

// Catalog lists the example services by the short name `taskflow service`
// accepts.
var Catalog = map[string]Spec{
	"report": {Service: "report-service", Types: []string{"report.generate"}, Register: func(s *extsvc.Server, o Options) {
		handle(s, "report.generate", reportHandler{o})
	}},
	"analysis": {Service: "analysis-service", Types: []string{"data.analyze"}, Register: func(s *extsvc.Server, o Options) {
		handle(s, "data.analyze", analyzeHandler{o})
	}},
	"document": {Service: "document-service", Types: []string{"document.process"}, Register: func(s *extsvc.Server, o Options) {
		handle(s, "document.process", documentHandler{o})
	}},
	"export": {Service: "export-service", Types: []string{"data.export"}, Register: func(s *extsvc.Server, o Options) {
		handle(s, "data.export", exportHandler{o})
	}},
	// the same type as the Node example service (examples/node-service),
	// so `taskflow dev --services all` serves every type it offers
	"wordcount": {Service: "wordcount-service", Types: []string{"text.wordcount"}, Register: func(s *extsvc.Server, o Options) {
		handle(s, "text.wordcount", wordcountHandler{o})
	}},
}

// Names lists the catalog's short names, sorted.
func Names() []string {
	out := make([]string, 0, len(Catalog))
	for n := range Catalog {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// safeName keeps a task id usable as a file name.
func safeName(id string) string {
	var b strings.Builder
	for _, r := range id {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), ".")
	if s == "" {
		s = "task"
	}
	return s
}

// writeOutput writes data to OutputDir/<taskType>/<taskID>.<ext> atomically
// (a redone task replaces the file whole), stores it in taskflow's artifact
// store as <taskID>.<ext> (so the API serves it to the task's session) and
// returns its URL (the API's; a file:// URL of the local copy when it is
// too large for the store), its path and its SHA-256.
func writeOutput(ctx context.Context, o Options, t *extsvc.Task, ext string, data []byte) (url, path, sum string, err error) {
	url, path, sum, err = writeLocal(o, t.Type, t.ID, ext, data)
	if err != nil {
		return "", "", "", err
	}
	api, err := t.PutFile(ctx, safeName(t.ID)+"."+ext, contentTypes[ext], data)
	if errors.Is(err, extsvc.ErrFileTooLarge) {
		return url, path, sum, nil // too large for Redis, and no shared directory: the local copy's URL
	}
	if err != nil {
		return "", "", "", extsvc.Fail("STORAGE_UNAVAILABLE", err.Error(), true)
	}
	return api, path, sum, nil
}

// contentTypes are the outputs' media types by extension.
var contentTypes = map[string]string{
	"md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8", "csv": "text/csv; charset=utf-8",
	"pdf": "application/pdf", "json": "application/json", "jsonl": "application/x-ndjson", "txt": "text/plain; charset=utf-8",
}

// writeLocal writes the local copy of an output (writeOutput).
func writeLocal(o Options, taskType, taskID, ext string, data []byte) (url, path, sum string, err error) {
	dir := filepath.Join(o.OutputDir, taskType)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", "", extsvc.Fail("STORAGE_UNAVAILABLE", err.Error(), true)
	}
	path = filepath.Join(dir, safeName(taskID)+"."+ext)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", "", "", extsvc.Fail("STORAGE_UNAVAILABLE", err.Error(), true)
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(0o644) // CreateTemp makes 0600; outputs are for sharing
	}
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(tmp.Name())
		return "", "", "", extsvc.Fail("STORAGE_UNAVAILABLE", fmt.Sprint(werr, cerr), true)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return "", "", "", extsvc.Fail("STORAGE_UNAVAILABLE", err.Error(), true)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	h := sha256.Sum256(data)
	return "file://" + filepath.ToSlash(abs), abs, hex.EncodeToString(h[:]), nil
}

func invalid(format string, args ...any) error {
	return extsvc.Fail("INVALID_PARAMS", fmt.Sprintf(format, args...), false)
}
