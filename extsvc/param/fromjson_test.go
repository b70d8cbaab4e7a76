package param_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/extsvc/tools"
	"github.com/taskflow/taskflow/internal/tasktypes/builtin"
)

// A schema declared in Go, published as JSON Schema and read back checks
// params exactly as the Go one does: the API validates what a service
// published the way the service itself would.
func TestFromJSONSchemaRoundTrip(t *testing.T) {
	schemas := map[string]param.Schema{}
	for n, s := range tools.ParamSchemas {
		schemas[n] = s
	}
	for _, bt := range builtin.Types() {
		schemas[bt.Name] = bt.Params
	}
	inputs := []string{`{}`, `null`, `{"quarter":"q4","year":2024,"data":{"r":[1]}}`, `{"quarter":"Q5","year":2024,"data":{}}`,
		`{"quarter":"Q1","year":1800,"data":{}}`, `{"quarter":"Q1","year":20.5,"data":{}}`, `{"csv":"a,b\n1,2","delimiter":";;;;;"}`,
		`{"rows":[{"a":1},2]}`, `{"rows":[],"format":"xml"}`, `{"content":7}`, `{"text":"hi","extra":1}`,
		`{"duration_ms":5,"fail":"permanent"}`, `{"duration_ms":-1}`, `{"anything":true}`, `[]`, `"x"`}
	for name, want := range schemas {
		b, err := json.Marshal(want.JSONSchema())
		require.NoError(t, err)
		got, err := param.FromJSONSchema(b)
		require.NoError(t, err, name)
		for _, in := range inputs {
			e1, e2 := want.Validate(json.RawMessage(in)), got.Validate(json.RawMessage(in))
			require.Equal(t, errText(e1), errText(e2), "%s: %s", name, in)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestFromJSONSchemaBounds(t *testing.T) {
	s, err := param.FromJSONSchema(json.RawMessage(`{"type":"object","properties":{"n":{"type":"number","minimum":1}},"required":["n","m"]}`))
	require.NoError(t, err)
	require.NoError(t, s.Validate(json.RawMessage(`{"n":1e300,"m":0,"other":true}`)), "no maximum; unknown names accepted by default")
	err = s.Validate(json.RawMessage(`{"n":0.5,"m":0}`))
	require.ErrorContains(t, err, "n")
	err = s.Validate(json.RawMessage(`{"n":2}`))
	require.ErrorContains(t, err, "m")
	out, err := json.Marshal(s.JSONSchema())
	require.NoError(t, err, "an open bound renders without it")
	require.NotContains(t, string(out), "maximum")
}

func TestFromJSONSchemaRefuses(t *testing.T) {
	for in, want := range map[string]string{
		`[]`:                                   "params schema",
		`{"type":"array"}`:                     "params are a JSON object",
		`{"properties":{"a":{"type":"date"}}}`: "properties.a.type",
		`{"properties":{"a":{"type":["string","null"]}}}`:                "properties.a.type",
		`{"properties":{"a":{"enum":[1,2]}}}`:                            "properties.a.enum",
		`{"properties":{"a":{"type":"array","items":{"type":"thing"}}}}`: "properties.a.items.type",
		`{"properties":{"a":{"maxLength":-1}}}`:                          "negative",
	} {
		_, err := param.FromJSONSchema(json.RawMessage(in))
		require.Error(t, err, in)
		require.True(t, strings.Contains(err.Error(), want), "%s: %v", in, err)
	}
}

func FuzzFromJSONSchema(f *testing.F) {
	f.Add(`{"type":"object","properties":{"q":{"type":"string","enum":["A"],"x-fold-case":true},"n":{"type":"integer","minimum":0,"maximum":9}},"required":["q"],"additionalProperties":false}`, `{"q":"a","n":3}`)
	f.Add(`{"properties":{"r":{"type":"array","items":{"type":"object"},"maxItems":2}}}`, `{"r":[{},{}]}`)
	f.Fuzz(func(t *testing.T, schema, params string) {
		s, err := param.FromJSONSchema(json.RawMessage(schema))
		if err != nil {
			return
		}
		_ = s.Validate(json.RawMessage(params))
		if _, err := json.Marshal(s.JSONSchema()); err != nil {
			t.Fatalf("a read schema does not render: %v", err)
		}
	})
}

// A range error writes its numbers as a person does, and an open end as
// its bound.
func TestRangeMessage(t *testing.T) {
	t.Parallel()
	closed := param.Schema{Fields: []param.Field{{Name: "n", Kind: param.Integer, Min: 0, Max: 86_400_000}}}
	require.ErrorContains(t, closed.Validate(json.RawMessage(`{"n":-5}`)), "-5 is outside 0..86400000")
	open, err := param.FromJSONSchema([]byte(`{"type":"object","properties":{"n":{"type":"number","minimum":1.5}}}`))
	require.NoError(t, err)
	require.ErrorContains(t, open.Validate(json.RawMessage(`{"n":1}`)), "1 is below the minimum 1.5")
}
