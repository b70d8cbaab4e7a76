package summarize

import (
	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/internal/tasktypes"
)

// ParamSchema declares the params a summarize task takes (Params), so the
// API refuses bad ones at submit (422 naming params.<field>) instead of
// creating a task that can only fail. ProcessTask applies the same rules
// when the task runs, for producers other than the API. The API also
// refuses the text given both as the task's content and as params.content.
var ParamSchema = param.Schema{Fields: []param.Field{
	{Name: "content", Kind: param.String, Description: "the text to summarize, when the task's content is empty"},
	{Name: "max_sentences", Kind: param.Integer, Min: 1, Max: 100, Description: "at most this many sentences (extractive summarizer), 1..100"},
	{Name: "max_chars", Kind: param.Integer, Min: 1, Max: 100_000, Description: "at most this many characters (extractive summarizer), 1..100000"},
}}

// Type declares the summarize task type for the deployment's registry.
var Type = tasktypes.Type{
	Name:        TaskType,
	Description: "Summarizes a text (content or params.content) with an LLM, or the built-in extractive summarizer offline.",
	Params:      ParamSchema,
	Notify:      "Your summary is ready",
}
