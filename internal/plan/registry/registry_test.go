package registry_test

import (
	"encoding/json"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan/registry"
)

func TestDefault(t *testing.T) {
	t.Parallel()
	for _, env := range []string{"dev", "test", "prod"} {
		r, err := registry.Default(env)
		require.NoError(t, err, env)
		require.Equal(t, "id", r.Keys[1].Name)
		require.False(t, r.Keys[1].Writable())
		require.True(t, r.KeysByName["final_score"].Writable())
		require.Equal(t, 2002, r.KeysByName["score"].ID, "Key.score")
		require.Equal(t, 4, r.ParamsByName["weight"].ID, "P.weight")
		require.Equal(t, "redis", r.Endpoints["ep_0001"].Kind)
		require.Equal(t, "redis_default", r.Endpoints["ep_0001"].Name)
		require.True(t, r.Capabilities["cap.rfc.0001.extensions_capabilities.v1"].Supported())
		require.False(t, r.Capabilities["cap.rfc.0005.key_effects_writes_exact.v1"].Supported())
		require.Equal(t, 10_000_000, r.Validation.Limits.MaxFanout)
	}
	r, err := registry.Default("dev")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:6379", r.Endpoints["ep_0001"].Addr())
	require.True(t, r.Validation.ValidPlanName("reels_plan_a"))
	require.False(t, r.Validation.ValidPlanName("../etc"))
}

func minimal() fstest.MapFS {
	return fstest.MapFS{
		"keys.toml":          {Data: []byte("[[key]]\nkey_id = 1\nname = \"id\"\ntype = \"int\"\nnullable = false\nallow_write = false\n")},
		"params.toml":        {Data: []byte("")},
		"endpoints.dev.toml": {Data: []byte("version = 1\n[[endpoint]]\nendpoint_id = \"ep_0001\"\nname = \"r\"\nkind = \"redis\"\n  [endpoint.resolver]\n  type = \"static\"\n  host = \"h\"\n  port = 1\n")},
		"capabilities.toml":  {Data: []byte("schema_version = 1\n")},
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, data, want string
	}{
		{"TOMLSyntaxHasLine", "keys.toml", "[[key]]\nkey_id = \n", "keys.toml: toml: line 2"},
		{"DuplicateKey", "keys.toml", "[[key]]\nkey_id = 1\nname = \"id\"\ntype = \"int\"\n[[key]]\nkey_id = 1\nname = \"x\"\ntype = \"float\"\n", "duplicate key 1"},
		{"UnknownKeyType", "keys.toml", "[[key]]\nkey_id = 1\nname = \"id\"\ntype = \"decimal\"\n", `unknown type "decimal"`},
		{"NoIDKey", "keys.toml", "[[key]]\nkey_id = 2\nname = \"x\"\ntype = \"float\"\n", "key_id 1 must be \"id\""},
		{"BadParamType", "params.toml", "[[param]]\nparam_id = 1\nname = \"p\"\ntype = \"list\"\n", `unknown type "list"`},
		{"BadEndpointID", "endpoints.dev.toml", "[[endpoint]]\nendpoint_id = \"x1\"\nname = \"r\"\nkind = \"redis\"\n", "must start with ep_"},
		{"BadEndpointKind", "endpoints.dev.toml", "[[endpoint]]\nendpoint_id = \"ep_1\"\nname = \"r\"\nkind = \"grpc\"\n", `kind "grpc"`},
		{"BadSchema", "capabilities.toml", "[[capability]]\nid = \"c\"\nstatus = \"implemented\"\npayload_schema = '{'\n", "payload_schema"},
		{"MissingFile", "params.toml", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs := minimal()
			if tc.name == "MissingFile" {
				delete(fs, tc.file)
				_, err := registry.Load(fs, "dev")
				require.ErrorContains(t, err, "read params.toml")
				return
			}
			fs[tc.file] = &fstest.MapFile{Data: []byte(tc.data)}
			_, err := registry.Load(fs, "dev")
			require.ErrorIs(t, err, registry.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := registry.Load(minimal(), "staging")
	require.ErrorContains(t, err, "endpoints.staging.toml")
}

func TestCapabilityPayload(t *testing.T) {
	t.Parallel()
	fs := minimal()
	fs["capabilities.toml"] = &fstest.MapFile{Data: []byte(`
[[capability]]
id = "cap.none"
status = "implemented"

[[capability]]
id = "cap.obj"
status = "implemented"
payload_schema = '''{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string"}},"required":["n"],"additionalProperties":false}'''
`)}
	r, err := registry.Load(fs, "dev")
	require.NoError(t, err)
	none, obj := r.Capabilities["cap.none"], r.Capabilities["cap.obj"]
	require.NoError(t, none.ValidatePayload(nil))
	require.NoError(t, none.ValidatePayload(json.RawMessage("null")))
	require.ErrorContains(t, none.ValidatePayload(json.RawMessage("{}")), "takes no payload")
	require.NoError(t, obj.ValidatePayload(json.RawMessage(`{"n":3,"s":"x"}`)))
	require.ErrorContains(t, obj.ValidatePayload(json.RawMessage(`{"s":"x"}`)), `missing required property "n"`)
	require.ErrorContains(t, obj.ValidatePayload(json.RawMessage(`{"n":1.5}`)), "payload.n must be a integer")
	require.ErrorContains(t, obj.ValidatePayload(json.RawMessage(`{"n":1,"z":0}`)), `property "z" is not allowed`)
	require.ErrorContains(t, obj.ValidatePayload(json.RawMessage(`[]`)), "payload must be an object")
}
