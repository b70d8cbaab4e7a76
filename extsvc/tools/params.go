package tools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/extsvc/param"
)

// ParamSchemas declares the params of every example task type. The API
// checks a task's params against them before it publishes task.create
// (a 422 naming the field), and each service checks them again on receipt
// (tasks may be published by other producers).
var ParamSchemas = map[string]param.Schema{
	"report.generate": {Fields: []param.Field{
		{Name: "quarter", Kind: param.String, Required: true, Enum: []string{"Q1", "Q2", "Q3", "Q4"}, FoldCase: true, Description: "the quarter reported on"},
		{Name: "year", Kind: param.Integer, Required: true, Min: 1900, Max: 2200, Description: "the year of the quarter"},
		{Name: "format", Kind: param.String, Enum: []string{"md", "html", "csv", "pdf"}, FoldCase: true, Description: "output format; default md"},
		{Name: "title", Kind: param.String, MaxLen: 200, Description: "default \"<quarter> <year> report\""},
		{Name: "data", Kind: param.Object, Required: true, Description: "metric name → its values in the quarter, e.g. {\"revenue\": [120, 135, 150]}; {} fails the task (INSUFFICIENT_DATA)"},
	}},
	"data.analyze": {Fields: []param.Field{
		{Name: "csv", Kind: param.String, Required: true, MaxLen: MaxCSVBytes, Description: "the data, with a header row"},
		{Name: "delimiter", Kind: param.String, MaxLen: 4, Description: "one character; default ,"},
	}},
	"document.process": {Fields: []param.Field{
		{Name: "content", Kind: param.String, Required: true, MaxLen: MaxDocumentBytes, Description: "the document's text, HTML or Markdown"},
		{Name: "format", Kind: param.String, Enum: []string{"text", "txt", "html", "markdown", "md"}, FoldCase: true, Description: "default: guessed from the content"},
	}},
	"data.export": {Fields: []param.Field{
		{Name: "rows", Kind: param.Array, Items: param.Object, Required: true, MaxLen: MaxExportRows, Description: "the rows, JSON objects"},
		{Name: "format", Kind: param.String, Enum: []string{"csv", "json", "jsonl"}, Description: "default csv"},
		{Name: "columns", Kind: param.Array, Items: param.String, Description: "CSV columns in order; default every key, sorted"},
	}},
	"text.wordcount": {Fields: []param.Field{
		{Name: "text", Kind: param.String, Required: true, MaxLen: MaxWordcountBytes, Description: "the text whose words are counted"},
	}},
}

// Descriptions say what each example type does, for people and agents
// choosing one; Notify is each one's notification text ({field} is the
// task's params.field). Both are published with the schema when the
// service registers.
var (
	Descriptions = map[string]string{
		"report.generate":  "Builds a quarterly report (md, html, csv or pdf) from metric values; the result links the file.",
		"data.analyze":     "Computes statistics of a CSV (per column: count, mean, min, max); the result links the analysis.",
		"document.process": "Extracts the text, headings and statistics of a document (text, HTML or Markdown).",
		"data.export":      "Writes rows (JSON objects) as CSV, JSON or JSON Lines; the result links the file.",
		"text.wordcount":   "Counts the words of a text and lists its most frequent ones.",
	}
	Notify = map[string]string{
		"report.generate":  "Your {quarter} {year} report is ready",
		"data.analyze":     "Your data analysis is ready",
		"document.process": "Your document is processed",
		"data.export":      "Your {format} export is ready",
		"text.wordcount":   "Your word count is ready",
	}
)

// handle registers h for taskType on s behind its params check, and
// describes the type (description, schema, notification text).
func handle(s *extsvc.Server, taskType string, h extsvc.Handler) {
	s.Handle(taskType, checked(taskType, h))
	s.Describe(taskType, extsvc.TypeInfo{Description: Descriptions[taskType], Params: ParamSchemas[taskType], Notify: Notify[taskType]})
}

// ParamSchema returns the declared params of taskType, if any.
func ParamSchema(taskType string) (param.Schema, bool) {
	s, ok := ParamSchemas[taskType]
	return s, ok
}

// checked runs h only for params that satisfy taskType's schema; others
// fail permanently with INVALID_PARAMS naming the field.
func checked(taskType string, h extsvc.Handler) extsvc.Handler {
	s := ParamSchemas[taskType]
	return extsvc.HandlerFunc(func(ctx context.Context, t *extsvc.Task) (json.RawMessage, error) {
		if err := s.Validate(t.Params); err != nil {
			var pe *param.Error
			if errors.As(err, &pe) {
				return nil, invalid("%s", pe.Error())
			}
			return nil, invalid("%v", err)
		}
		return h.Handle(ctx, t)
	})
}
