package summarize_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/tasktypes/summarize"
	"github.com/taskflow/taskflow/task"
)

// TestSchemaAgreesWithHandler: what the API refuses at submit (the declared
// ParamSchema) is exactly what the handler refuses when the task runs, so a
// summarize task the API accepts never fails for its params.
func TestSchemaAgreesWithHandler(t *testing.T) {
	t.Parallel()
	h, err := summarize.New(summarize.Config{})
	require.NoError(t, err)
	for params, valid := range map[string]bool{
		``:                    true,
		`null`:                true,
		`{}`:                  true,
		`{"max_sentences":1}`: true,
		`{"max_sentences":100,"max_chars":100000}`: true,
		`{"max_chars":1}`:                          true,
		`{"max_sentences":0}`:                      false,
		`{"max_sentences":-4}`:                     false,
		`{"max_sentences":101}`:                    false,
		`{"max_sentences":2.5}`:                    false,
		`{"max_sentences":"3"}`:                    false,
		`{"max_chars":0}`:                          false,
		`{"max_chars":100001}`:                     false,
		`{"colour":1}`:                             false,
		`{"content":5}`:                            false,
		`[1]`:                                      false,
	} {
		serr := summarize.ParamSchema.Validate(json.RawMessage(params))
		_, herr := h.ProcessTask(context.Background(), &task.Task{Type: summarize.TaskType, Content: "One sentence. Another one.", Params: json.RawMessage(params)})
		require.Equal(t, valid, serr == nil, "schema(%s): %v", params, serr)
		require.Equal(t, valid, herr == nil, "handler(%s): %v", params, herr)
		if herr != nil {
			require.True(t, errors.Is(herr, summarize.ErrInvalidInput), "%s: %v", params, herr)
		}
	}
	// The text in params.content alone is accepted by both.
	p := json.RawMessage(`{"content":"From the params. A second sentence.","max_sentences":1}`)
	require.NoError(t, summarize.ParamSchema.Validate(p))
	_, err = h.ProcessTask(context.Background(), &task.Task{Type: summarize.TaskType, Params: p})
	require.NoError(t, err)
}
