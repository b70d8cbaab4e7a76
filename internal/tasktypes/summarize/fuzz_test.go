package summarize_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/taskflow/taskflow/internal/tasktypes/summarize"
	"github.com/taskflow/taskflow/task"
)

// FuzzProcessTaskExtractive feeds outside input (content and params as an
// API client sends them) to the offline handler: it either succeeds with a
// well-formed result within the budget, or fails permanently as
// InvalidInput. It never panics and never fails transiently.
func FuzzProcessTaskExtractive(f *testing.F) {
	f.Add("Cats purr. Dogs bark. Birds sing.", []byte(`{"max_sentences":1}`))
	f.Add("", []byte(`{"content":"From params. Second."}`))
	f.Add("x", []byte(`{"max_chars":5}`))
	f.Add("x", []byte(`{"nope":1}`))
	f.Add("\xff\xfe", []byte(`null`))
	f.Add("   ", []byte(``))
	f.Add("a", []byte(`{"max_chars":1e3}`))
	h, err := summarize.New(summarize.Config{MaxContentBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content string, params []byte) {
		raw, err := h.ProcessTask(context.Background(), &task.Task{Type: summarize.TaskType, Content: content, Params: params})
		if err != nil {
			var pe *task.PermanentError
			if !errors.As(err, &pe) || pe.Type != task.ErrTypeInvalidInput || !errors.Is(err, summarize.ErrInvalidInput) {
				t.Fatalf("error is not a permanent InvalidInput: %#v", err)
			}
			return
		}
		var res summarize.Result
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatalf("result is not JSON: %v", err)
		}
		if res.Summarizer != summarize.SummarizerExtractive || res.Summary == "" || res.InputChars < 1 {
			t.Fatalf("bad result: %+v", res)
		}
		var p summarize.Params
		_ = json.Unmarshal(params, &p)
		limit := summarize.DefaultMaxChars
		if p.MaxChars != nil {
			limit = *p.MaxChars
		}
		if n := utf8.RuneCountInString(res.Summary); n > limit {
			t.Fatalf("summary of %d runes over the budget %d", n, limit)
		}
	})
}
