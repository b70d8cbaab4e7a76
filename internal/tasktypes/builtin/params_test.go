package builtin

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSleepSchemaAgreesWithParse: what the API refuses at submit (the
// declared schema) is exactly what the handler would refuse when it runs.
func TestSleepSchemaAgreesWithParse(t *testing.T) {
	t.Parallel()
	types := Types()
	require.Len(t, types, 2)
	require.Equal(t, TypeSleep, types[1].Name)
	for params, valid := range map[string]bool{
		``:                                      true,
		`null`:                                  true,
		`{}`:                                    true,
		`{"duration_ms":0}`:                     true,
		`{"duration_ms":86400000}`:              true,
		`{"duration_ms":5,"fail":"permanent"}`:  true,
		`{"fail":"cancel"}`:                     true,
		`{"duration_ms":-1}`:                    false,
		`{"duration_ms":86400001}`:              false,
		`{"duration_ms":1.5}`:                   false,
		`{"duration_ms":"10"}`:                  false,
		`{"fail":"explode"}`:                    false,
		`{"fail":5}`:                            false,
		`{"duraton_ms":10}`:                     false,
		`[1]`:                                   false,
		`{"duration_ms":10,"fail":"transient"}`: true,
	} {
		_, perr := ParseSleepParams(json.RawMessage(params))
		serr := types[1].CheckParams(json.RawMessage(params))
		require.Equal(t, valid, perr == nil, "ParseSleepParams(%s): %v", params, perr)
		require.Equal(t, valid, serr == nil, "schema(%s): %v", params, serr)
	}
	noop := types[0]
	require.Equal(t, TypeNoop, noop.Name)
	require.NoError(t, noop.CheckParams(json.RawMessage(`{"payload":"x"}`)), "noop ignores its params")
	require.Error(t, noop.CheckParams(json.RawMessage(`[1]`)), "params are an object")
}
