package plan_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

func compileErr(t *testing.T, src string) error {
	t.Helper()
	reg, err := registry.Default("dev")
	require.NoError(t, err)
	p, err := plan.Parse([]byte(src), "inline.plan.json")
	if err != nil {
		return err
	}
	_, err = plan.Compile(p, reg, plan.NewCatalog())
	return err
}

const viewerNode = `{"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}}`

func TestValidationErrors(t *testing.T) {
	t.Parallel()
	follow := func(params string) string {
		return planOf(viewerNode+`,{"node_id":"out","op":"core::follow","inputs":["v"],"params":`+params+`}`, "")
	}
	filter := func(pred string) string {
		return planOf(viewerNode+`,{"node_id":"out","op":"core::filter","inputs":["v"],"params":{"pred_id":"p"}}`, `"pred_table":{"p":`+pred+`}`)
	}
	vm := func(outKey, expr string) string {
		return planOf(viewerNode+`,{"node_id":"out","op":"core::vm","inputs":["v"],"params":{"expr_id":"e","out_key":`+outKey+`}}`, `"expr_table":{"e":`+expr+`}`)
	}
	idExpr := `{"op":"key_ref","key_id":1}`
	caps := func(top string) string {
		return `{"schema_version":1,"plan_name":"c",` + top + `,"nodes":[` + viewerNode + `],"outputs":["v"]}`
	}
	cases := []struct {
		name, src, want string
	}{
		{"Cycle", `{"schema_version":1,"plan_name":"c","nodes":[{"node_id":"a","op":"core::take","inputs":["b"],"params":{"count":1}},{"node_id":"b","op":"core::take","inputs":["a"],"params":{"count":1}}],"outputs":["a"]}`, "Plan contains a cycle"},
		{"CycleThroughRhs", `{"schema_version":1,"plan_name":"c","nodes":[{"node_id":"a","op":"core::concat","inputs":["b"],"params":{"rhs":"a"}},{"node_id":"b","op":"test::fixed_source","inputs":[],"params":{}}],"outputs":["a"]}`, "Plan contains a cycle"},
		{"MissingInput", planOf(`{"node_id":"out","op":"core::take","inputs":["nonexistent"],"params":{"count":5}}`, ""), "Node 'out' references missing input: nonexistent"},
		{"UnknownOp", planOf(`{"node_id":"out","op":"core::explode","inputs":[],"params":{}}`, ""), "Node 'out': unknown op 'core::explode'"},
		{"MissingParam", follow(`{"endpoint":"ep_0001"}`), "Node 'out': Invalid params for op 'core::follow': missing required field 'fanout'"},
		{"NullRequiredParam", follow(`{"endpoint":"ep_0001","fanout":null}`), "missing required field 'fanout'"},
		{"UnknownParam", follow(`{"endpoint":"ep_0001","fanout":10,"limit":5}`), "unknown field 'limit'"},
		{"WrongParamType", follow(`{"endpoint":"ep_0001","fanout":"ten"}`), "field 'fanout' must be an integer"},
		{"NonIntegralInt", follow(`{"endpoint":"ep_0001","fanout":2.5}`), "field 'fanout' must be an integer"},
		{"FanoutTooLarge", follow(`{"endpoint":"ep_0001","fanout":100000000}`), "must be between 1 and 10000000"},
		{"FanoutZero", follow(`{"endpoint":"ep_0001","fanout":0}`), "must be between 1 and 10000000"},
		{"MediaFanoutLimit", planOf(viewerNode+`,{"node_id":"out","op":"core::media","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":10001}}`, ""), "between 1 and 10000"},
		{"TraceWrongType", follow(`{"endpoint":"ep_0001","fanout":10,"trace":123}`), "field 'trace' must be a string"},
		{"UnknownEndpoint", follow(`{"endpoint":"ep_9999","fanout":10}`), "unknown endpoint 'ep_9999'"},
		{"HTTPEndpoint", follow(`{"endpoint":"ep_0002","fanout":10}`), "is a http endpoint, want redis"},
		{"SortBadOrder", planOf(viewerNode+`,{"node_id":"out","op":"core::sort","inputs":["v"],"params":{"by":1,"order":"up"}}`, ""), "field 'order' must be one of asc, desc"},
		{"SortUnknownKey", planOf(viewerNode+`,{"node_id":"out","op":"core::sort","inputs":["v"],"params":{"by":9999}}`, ""), "sort key 9999 is not a registered key"},
		{"SortFeatureBundle", planOf(viewerNode+`,{"node_id":"out","op":"core::sort","inputs":["v"],"params":{"by":4001}}`, ""), "sort takes id, float and string keys"},
		{"SortKeyAndByTwice", planOf(viewerNode+`,{"node_id":"out","op":"core::sort","inputs":["v"],"params":{"by":1,"key":1}}`, ""), "given twice"},
		{"TakeZero", planOf(viewerNode+`,{"node_id":"out","op":"core::take","inputs":["v"],"params":{"count":0}}`, ""), "field 'count' must be between 1"},
		{"ConcatMissingRhs", planOf(viewerNode+`,{"node_id":"out","op":"core::concat","inputs":["v"],"params":{}}`, ""), "missing required field 'rhs'"},
		{"ConcatRhsMissingNode", planOf(viewerNode+`,{"node_id":"out","op":"core::concat","inputs":["v"],"params":{"rhs":"ghost"}}`, ""), "references missing node: ghost"},
		{"ConcatTwoInputs", planOf(viewerNode+`,{"node_id":"out","op":"core::concat","inputs":["v","v"],"params":{"rhs":"v"}}`, ""), "takes 1 input(s), got 2"},
		{"ViewerWithInput", planOf(viewerNode+`,{"node_id":"out","op":"core::viewer","inputs":["v"],"params":{"endpoint":"ep_0001"}}`, ""), "takes 0 input(s), got 1"},
		{"VMOutKeyID", vm("1", idExpr), "out_key 1 (id) is not writable"},
		{"VMOutKeyString", vm("3001", idExpr), "is a string key; vm writes float keys"},
		{"VMOutKeyUnknown", vm("777", idExpr), "out_key 777 is not a registered key"},
		{"UnknownExprID", planOf(viewerNode+`,{"node_id":"out","op":"core::vm","inputs":["v"],"params":{"expr_id":"zz","out_key":2001}}`, ""), "unknown expr_id 'zz'"},
		{"UnknownPredID", planOf(viewerNode+`,{"node_id":"out","op":"core::filter","inputs":["v"],"params":{"pred_id":"zz"}}`, ""), "unknown pred_id 'zz'"},
		{"MissingPredID", planOf(viewerNode+`,{"node_id":"out","op":"core::filter","inputs":["v"],"params":{}}`, ""), "missing required field 'pred_id'"},
		{"BadPredShape", filter(`{"op":"wat"}`), `pred_table.p: unknown predicate op "wat"`},
		{"BadInList", filter(`{"op":"in","lhs":{"op":"key_ref","key_id":1},"list":[1,"two"]}`), "all numbers or all strings"},
		{"BadRegexFlags", filter(`{"op":"regex","key_id":3001,"pattern":{"kind":"literal","value":"US"},"flags":"gi"}`), `"gi" is not a regex flag`},
		{"BadRegexPattern", filter(`{"op":"regex","key_id":3001,"pattern":{"kind":"literal","value":"("},"flags":""}`), "Invalid regex pattern"},
		{"RegexOnFloatKey", filter(`{"op":"regex","key_id":2001,"pattern":{"kind":"literal","value":"x"}}`), "is not a string key"},
		{"RegexUnknownParam", filter(`{"op":"regex","key_id":3001,"pattern":{"kind":"param","param_id":99}}`), "unknown param_id 99"},
		{"BadCmp", filter(`{"op":"cmp","cmp":"<>","a":{"op":"const_number","value":1},"b":{"op":"const_number","value":1}}`), `unknown comparison "<>"`},
		{"ExprUnknownKey", vm("2001", `{"op":"key_ref","key_id":4242}`), "unknown key_id 4242"},
		{"ExprStringKey", vm("2001", `{"op":"key_ref","key_id":3001}`), "is a string key, not a number"},
		{"ExprUnknownParam", vm("2001", `{"op":"param_ref","param_id":77}`), "unknown param_id 77"},
		{"ExprUnknownField", vm("2001", `{"op":"neg","x":{"op":"const_null"},"y":1}`), "unknown field 'y'"},
		{"UnsupportedCapability", caps(`"capabilities_required":["cap.does.not.exist.v1"]`), "unsupported capability: cap.does.not.exist.v1"},
		{"DraftCapability", caps(`"capabilities_required":["cap.rfc.0005.key_effects_writes_exact.v1"]`), "unsupported capability"},
		{"CapabilitiesUnsorted", caps(`"capabilities_required":["cap.z","cap.a"]`), "sorted and unique"},
		{"CapabilitiesDuplicate", caps(`"capabilities_required":["cap.rfc.0001.extensions_capabilities.v1","cap.rfc.0001.extensions_capabilities.v1"]`), "sorted and unique"},
		{"ExtensionNotRequired", caps(`"extensions":{"cap.x.v1":{}}`), "extension 'cap.x.v1' is not in capabilities_required"},
		{"ExtensionPayload", caps(`"capabilities_required":["cap.rfc.0001.extensions_capabilities.v1"],"extensions":{"cap.rfc.0001.extensions_capabilities.v1":{"smuggled":1}}`), `property "smuggled" is not allowed`},
		{"NodeExtensionNotDeclared", planOf(`{"node_id":"out","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"},"extensions":{"cap.rfc.0001.extensions_capabilities.v1":{}}}`, ""), "Node 'out': extension 'cap.rfc.0001.extensions_capabilities.v1' is not in capabilities_required"},
		{"DuplicateNodeID", planOf(viewerNode+","+viewerNode, ""), "Duplicate node_id: v"},
		{"BadNodeID", planOf(`{"node_id":"a-b","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}}`, ""), "invalid node_id 'a-b'"},
		{"BadPlanName", `{"schema_version":1,"plan_name":"a b","nodes":[],"outputs":[]}`, "invalid plan_name 'a b'"},
		{"SchemaVersion", `{"schema_version":2,"plan_name":"a","nodes":[],"outputs":[]}`, "unsupported schema_version 2"},
		{"MissingOutputs", `{"schema_version":1,"plan_name":"a","nodes":[]}`, "missing required field 'outputs'"},
		{"OutputMissingNode", `{"schema_version":1,"plan_name":"a","nodes":[],"outputs":["x"]}`, "Output references missing node: x"},
		{"UnknownTopField", `{"schema_version":1,"plan_name":"a","nodes":[],"outputs":[],"nodez":[]}`, "unknown field 'nodez'"},
		{"UnknownNodeField", planOf(`{"node_id":"out","op":"core::viewer","input":[],"params":{"endpoint":"ep_0001"}}`, ""), "unknown field 'input'"},
		{"NodeParamsNotObject", planOf(`{"node_id":"out","op":"core::viewer","inputs":[],"params":[]}`, ""), "invalid plan: Node 'out': field 'params' has the wrong type (want an object)"},
		{"NodeInputsNotArray", planOf(`{"node_id":"out","op":"core::viewer","inputs":"v","params":{}}`, ""), "invalid plan: Node 'out': field 'inputs' has the wrong type (want an array of strings)"},
		{"NodeWithoutOp", planOf(`{"node_id":"out","inputs":[],"params":{}}`, ""), "invalid plan: Node 'out': missing required field 'op'"},
		{"NodeWithoutID", planOf(`{"op":"core::viewer","inputs":[],"params":{}}`, ""), "invalid plan: nodes[0]: missing required field 'node_id'"},
		{"ExprTableNotObject", planOf(viewerNode, `"expr_table":[]`), "field 'expr_table' has the wrong type"},
		{"PredTableEntryNull", planOf(viewerNode, `"pred_table":{"p":null}`), "pred_table.p: must be an object"},
		{"NodesNotArray", `{"schema_version":1,"plan_name":"a","nodes":{},"outputs":[]}`, "field 'nodes' has the wrong type"},
		{"SyntaxErrorHasLine", "{\n \"schema_version\": 1,\n \"plan_name\": \"a\",,\n}", "inline.plan.json:3:"},
		{"NotAnObject", `[1,2]`, "inline.plan.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := compileErr(t, tc.src)
			mustContain(t, err, tc.want)
			require.True(t, errors.Is(err, plan.ErrPlan), "every plan error wraps ErrPlan: %v", err)
		})
	}
}

// TestSpecForms: prose forms are accepted beside the reference's.
func TestSpecForms(t *testing.T) {
	t.Parallel()
	reg, err := registry.Default("dev")
	require.NoError(t, err)
	p, err := plan.Parse([]byte(planOf(`{"node_id":"v","op":"viewer","inputs":[],"params":{"endpoint":"redis_default"}},
	 {"node_id":"f","op":"follow","inputs":["v"],"params":{"endpoint":"ep_0001"}},
	 {"node_id":"s","op":"sort","inputs":["f"],"params":{"key":2002}},
	 {"node_id":"r","op":"recs","inputs":["v"],"params":{"endpoint":"ep_0001"}},
	 {"node_id":"out","op":"take","inputs":["s"],"params":{"count":1}}`, "")), "x")
	require.NoError(t, err)
	c, err := plan.Compile(p, reg, plan.NewCatalog())
	require.NoError(t, err)
	require.Equal(t, "core::follow", c.Nodes[1].Op.Name)
	require.Equal(t, "core::recommendation", c.Nodes[3].Op.Name, "recs is the short name of recommendation")
	require.EqualValues(t, plan.DefaultFanout, c.Nodes[3].Params["fanout"])
	require.EqualValues(t, plan.DefaultFanout, c.Nodes[1].Params["fanout"], "bare follow gets the default fanout")
	require.EqualValues(t, 2002, c.Nodes[2].Params["by"], "key is an alias of by")
	require.EqualValues(t, "asc", c.Nodes[2].Params["order"], "order defaults to asc")
	require.NotNil(t, reg.KeysByName["score"])
	require.NotNil(t, reg.ParamsByName["weight"])
}
