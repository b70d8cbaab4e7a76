package protocol_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/internal/external/protocol"
)

// TestProtocolDocExamples: every event example of docs/protocol.md (the
// JSON under a "### task.<kind>" heading) is valid data of that event as
// the agent and our services decode it, and the published task-type spec
// example reads as a TypeSpec whose params_schema the API can check with:
// a service written from the page alone sends what we accept.
func TestProtocolDocExamples(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../docs/protocol.md")
	require.NoError(t, err)
	block := regexp.MustCompile("(?s)```json\n(.*?)```")
	heading := regexp.MustCompile(`(?m)^#{2,3} (.+)$`)
	doc := string(raw)
	events, specs := 0, 0
	for _, m := range block.FindAllStringSubmatchIndex(doc, -1) {
		body := strings.ReplaceAll(doc[m[2]:m[3]], "…", "-doc-example") // the page shortens ids
		hs := heading.FindAllStringSubmatch(doc[:m[0]], -1)
		require.NotEmpty(t, hs)
		h := hs[len(hs)-1][1]
		switch {
		case strings.HasPrefix(h, "task."):
			typ := protocol.Type(strings.Fields(h)[0])
			_, err := protocol.Event{Type: typ, Data: json.RawMessage(body)}.Unmarshal()
			require.NoError(t, err, "%s example:\n%s", typ, body)
			events++
		case h == "Publishing a task type":
			var spec protocol.TypeSpec
			require.NoError(t, json.Unmarshal([]byte(body), &spec))
			require.NotEmpty(t, spec.Service)
			sch, err := param.FromJSONSchema(spec.Params)
			require.NoError(t, err)
			require.Error(t, sch.Validate(json.RawMessage(`{}`)), "the example's required field is checked")
			require.NoError(t, sch.Validate(json.RawMessage(`{"text":"a b c"}`)))
			specs++
		}
	}
	require.GreaterOrEqual(t, events, 5, "create, completed, failed, progress, cancel")
	require.Equal(t, 1, specs)
}
