package param

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

var testSchema = Schema{Fields: []Field{
	{Name: "q", Kind: String, Required: true, Enum: []string{"A", "B"}, FoldCase: true},
	{Name: "n", Kind: Integer, Min: 1, Max: 10},
	{Name: "x", Kind: Number},
	{Name: "s", Kind: String, MaxLen: 3},
	{Name: "b", Kind: Boolean},
	{Name: "o", Kind: Object},
	{Name: "l", Kind: Array, Items: String, MaxLen: 2},
}}

func TestValidate(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		in    string
		field string // "" = valid
	}{
		"Minimal":       {`{"q":"a"}`, ""},
		"Full":          {`{"q":"B","n":10,"x":-1.5,"s":"abc","b":true,"o":{},"l":["x","y"]}`, ""},
		"NullOptional":  {`{"q":"A","n":null}`, ""},
		"Missing":       {`{}`, "q"},
		"Empty":         {``, "q"},
		"NullRequired":  {`{"q":null}`, "q"},
		"NotObject":     {`[1]`, ""},
		"BadEnum":       {`{"q":"C"}`, "q"},
		"CaseSensitive": {`{"q":"A","s":"abcd"}`, "s"},
		"IntFraction":   {`{"q":"A","n":1.5}`, "n"},
		"IntString":     {`{"q":"A","n":"1"}`, "n"},
		"IntRange":      {`{"q":"A","n":11}`, "n"},
		"IntExponent":   {`{"q":"A","n":1e1}`, ""},
		"Bool":          {`{"q":"A","b":"true"}`, "b"},
		"Object":        {`{"q":"A","o":[]}`, "o"},
		"ItemKind":      {`{"q":"A","l":["x",1]}`, "l[1]"},
		"ItemNull":      {`{"q":"A","l":[null]}`, "l[0]"},
		"TooMany":       {`{"q":"A","l":["a","b","c"]}`, "l"},
		"Unknown":       {`{"q":"A","zz":1,"aa":2}`, "aa"},
		"FirstDeclared": {`{"n":0}`, "q"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := testSchema.Validate(json.RawMessage(tc.in))
			if tc.field == "" && name != "NotObject" {
				require.NoError(t, err)
				return
			}
			var pe *Error
			require.ErrorAs(t, err, &pe)
			require.True(t, errors.Is(err, ErrInvalid))
			require.Equal(t, tc.field, pe.Field, pe.Error())
		})
	}
	require.NoError(t, Schema{AllowUnknown: true}.Validate(json.RawMessage(`{"anything":1}`)))
}

func FuzzValidate(f *testing.F) {
	for _, s := range []string{`{"q":"a"}`, `{"q":"B","n":10,"l":["x"]}`, `{`, `null`, `"x"`, `{"l":[{},[],null,1]}`, `{"n":1e400}`, `{"q":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := testSchema.Validate(b)
		if err == nil {
			var m map[string]any
			if json.Unmarshal(b, &m) != nil && len(b) > 0 {
				t.Fatalf("accepted %q, which is not a JSON object", b)
			}
			return
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Fatalf("not an *Error: %v", err)
		}
	})
}
