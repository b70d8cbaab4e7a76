package ir_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan/batch"
	"github.com/taskflow/taskflow/internal/plan/ir"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

// Row layout of the fixture batch (physical rows 0..3):
//
//	id           1     2     3     4
//	final_score  0.5   null  2     -1      (key 2001)
//	country      "US"  "ca"  null  "CA"    (key 3001)
//	title        no column                 (key 3002)
func fixture(t testing.TB) (*registry.Registry, *batch.Batch) {
	t.Helper()
	reg, err := registry.Default("dev")
	require.NoError(t, err)
	b := batch.New([]int64{1, 2, 3, 4}).
		WithFloat(2001, &batch.FloatCol{Vals: []float64{0.5, 0, 2, -1}, Valid: []bool{true, false, true, true}}).
		WithString(3001, &batch.StringCol{Vals: []string{"US", "ca", "", "CA"}, Valid: []bool{true, true, false, true}})
	return reg, b
}

type val struct {
	v  float64
	ok bool
}

func evalExpr(t *testing.T, src string, params ir.Params) []val {
	t.Helper()
	reg, b := fixture(t)
	e, err := ir.ParseExpr(json.RawMessage(src), "e")
	require.NoError(t, err)
	p, err := ir.CompileExpr(e, reg, "e")
	require.NoError(t, err)
	f, err := p.Bind(b, params)
	require.NoError(t, err)
	out := make([]val, b.Len())
	for r := range out {
		v, ok := p.Eval(f, int32(r))
		if !ok {
			v = 0 // a null's value is meaningless
		}
		out[r] = val{v, ok}
	}
	return out
}

func testPred(t *testing.T, src string, params ir.Params) []bool {
	t.Helper()
	reg, b := fixture(t)
	pr, err := ir.ParsePred(json.RawMessage(src), "p")
	require.NoError(t, err)
	p, err := ir.CompilePred(pr, reg, "p")
	require.NoError(t, err)
	f, err := p.Bind(b, params)
	require.NoError(t, err)
	out := make([]bool, b.Len())
	for r := range out {
		out[r] = p.Test(f, int32(r))
	}
	return out
}

const (
	keyID    = `{"op":"key_ref","key_id":1}`
	keyScore = `{"op":"key_ref","key_id":2001}`
	keyTitle = `{"op":"key_ref","key_id":1002}` // float key with no column: all null
	null     = `{"op":"const_null"}`
)

func num(v float64) string { return fmt.Sprintf(`{"op":"const_number","value":%v}`, v) }
func bin(op, a, b string) string {
	return fmt.Sprintf(`{"op":%q,"a":%s,"b":%s}`, op, a, b)
}

var n = val{}

func v(x float64) val { return val{x, true} }

func TestExprOperators(t *testing.T) {
	t.Parallel()
	weight := ir.Params{4: {Kind: ir.Number, Num: 3}}
	cases := []struct {
		name   string
		src    string
		params ir.Params
		want   []val
	}{
		{"ConstNumber", num(2.5), nil, []val{v(2.5), v(2.5), v(2.5), v(2.5)}},
		{"ConstNull", null, nil, []val{n, n, n, n}},
		{"KeyRefID", keyID, nil, []val{v(1), v(2), v(3), v(4)}},
		{"KeyRefFloat", keyScore, nil, []val{v(0.5), n, v(2), v(-1)}},
		{"KeyRefMissingColumn", keyTitle, nil, []val{n, n, n, n}},
		{"ParamSet", `{"op":"param_ref","param_id":4}`, weight, []val{v(3), v(3), v(3), v(3)}},
		{"ParamUnset", `{"op":"param_ref","param_id":4}`, nil, []val{n, n, n, n}},
		{"ParamNullOverride", `{"op":"param_ref","param_id":4}`, ir.Params{4: {Kind: ir.Null}}, []val{n, n, n, n}},
		{"Add", bin("add", keyID, keyScore), nil, []val{v(1.5), n, v(5), v(3)}},
		{"Sub", bin("sub", keyID, keyScore), nil, []val{v(0.5), n, v(1), v(5)}},
		{"Mul", bin("mul", keyID, keyScore), nil, []val{v(0.5), n, v(6), v(-4)}},
		{"MulNullConst", bin("mul", keyID, null), nil, []val{n, n, n, n}},
		{"Neg", `{"op":"neg","x":` + keyScore + `}`, nil, []val{v(-0.5), n, v(-2), v(1)}},
		{"NegNull", `{"op":"neg","x":` + null + `}`, nil, []val{n, n, n, n}},
		{"CoalesceFirst", bin("coalesce", keyScore, num(9)), nil, []val{v(0.5), v(9), v(2), v(-1)}},
		{"CoalesceBothNull", bin("coalesce", null, keyTitle), nil, []val{n, n, n, n}},
		{"CoalesceParam", bin("mul", keyID, bin("coalesce", `{"op":"param_ref","param_id":4}`, num(0.5))), weight, []val{v(3), v(6), v(9), v(12)}},
		{"CoalesceParamUnset", bin("mul", keyID, bin("coalesce", `{"op":"param_ref","param_id":4}`, num(0.5))), nil, []val{v(0.5), v(1), v(1.5), v(2)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, evalExpr(t, tc.src, tc.params))
		})
	}
}

func cmp(op, a, b string) string {
	return fmt.Sprintf(`{"op":"cmp","cmp":%q,"a":%s,"b":%s}`, op, a, b)
}

func TestPredOperators(t *testing.T) {
	t.Parallel()
	T, F := true, false
	isNull := func(x string) string { return `{"op":"is_null","x":` + x + `}` }
	country := `{"op":"key_ref","key_id":3001}`
	regex := func(pat, flags string) string {
		return fmt.Sprintf(`{"op":"regex","key_id":3001,"pattern":{"kind":"literal","value":%q},"flags":%q}`, pat, flags)
	}
	cases := []struct {
		name   string
		src    string
		params ir.Params
		want   []bool
	}{
		{"ConstTrue", `{"op":"const_bool","value":true}`, nil, []bool{T, T, T, T}},
		{"ConstFalse", `{"op":"const_bool","value":false}`, nil, []bool{F, F, F, F}},
		{"CmpEq", cmp("==", keyScore, num(2)), nil, []bool{F, F, T, F}},
		{"CmpNe", cmp("!=", keyScore, num(2)), nil, []bool{T, F, F, T}}, // null != 2 is false
		{"CmpLt", cmp("<", keyScore, num(1)), nil, []bool{T, F, F, T}},
		{"CmpLe", cmp("<=", keyScore, num(0.5)), nil, []bool{T, F, F, T}},
		{"CmpGt", cmp(">", keyScore, num(0)), nil, []bool{T, F, T, F}},
		{"CmpGe", cmp(">=", keyScore, num(0.5)), nil, []bool{T, F, T, F}},
		{"CmpKeyKey", cmp("<", keyScore, keyID), nil, []bool{T, F, T, T}},
		{"CmpRuntimeNullBothSides", cmp("==", keyTitle, keyTitle), nil, []bool{F, F, F, F}},
		{"CmpEqLiteralNull", cmp("==", keyScore, null), nil, []bool{F, T, F, F}},
		{"CmpNeLiteralNull", cmp("!=", keyScore, null), nil, []bool{T, F, T, T}},
		{"CmpLiteralNullLeft", cmp("==", null, keyScore), nil, []bool{F, T, F, F}},
		{"CmpNullEqNull", cmp("==", null, null), nil, []bool{T, T, T, T}},
		{"CmpNullNeNull", cmp("!=", null, null), nil, []bool{F, F, F, F}},
		{"CmpOrderLiteralNull", cmp("<", keyScore, null), nil, []bool{F, F, F, F}},
		{"CmpStringKeyLiteralNull", cmp("==", country, null), nil, []bool{F, F, T, F}},
		{"And", `{"op":"and","a":` + cmp(">", keyID, num(1)) + `,"b":` + cmp(">", keyScore, num(0)) + `}`, nil, []bool{F, F, T, F}},
		{"Or", `{"op":"or","a":` + cmp("==", keyID, num(1)) + `,"b":` + cmp("<", keyScore, num(0)) + `}`, nil, []bool{T, F, F, T}},
		{"NotOfNullCmpIsTrue", `{"op":"not","x":` + cmp(">", keyScore, num(0)) + `}`, nil, []bool{F, T, F, T}},
		{"IsNull", isNull(keyScore), nil, []bool{F, T, F, F}},
		{"IsNullString", isNull(country), nil, []bool{F, F, T, F}},
		{"IsNullExpr", isNull(bin("add", keyScore, num(1))), nil, []bool{F, T, F, F}},
		{"NotNull", `{"op":"not_null","x":` + keyScore + `}`, nil, []bool{T, F, T, T}},
		{"InNumbers", `{"op":"in","lhs":` + keyID + `,"list":[2,4,9]}`, nil, []bool{F, T, F, T}},
		{"InNullNeverMatches", `{"op":"in","lhs":` + keyScore + `,"list":[0,0.5]}`, nil, []bool{T, F, F, F}},
		{"InStrings", `{"op":"in","lhs":` + country + `,"list":["US","CA"]}`, nil, []bool{T, F, F, T}},
		{"InEmptyList", `{"op":"in","lhs":` + keyID + `,"list":[]}`, nil, []bool{F, F, F, F}},
		{"RegexPartial", regex("S", ""), nil, []bool{T, F, F, F}},
		{"RegexCaseInsensitive", regex("^ca$", "i"), nil, []bool{F, T, F, T}},
		{"RegexAnchored", regex("^C", ""), nil, []bool{F, F, F, T}},
		{"RegexParam", `{"op":"regex","key_id":3001,"pattern":{"kind":"param","param_id":2},"flags":""}`,
			ir.Params{2: {Kind: ir.String, Str: "a$"}}, []bool{F, T, F, F}},
		{"RegexMissingColumn", `{"op":"regex","key_id":3002,"pattern":{"kind":"literal","value":""}}`, nil, []bool{F, F, F, F}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, testPred(t, tc.src, tc.params))
		})
	}
}

func TestRegexParamNullIsAnError(t *testing.T) {
	t.Parallel()
	reg, b := fixture(t)
	pr, err := ir.ParsePred(json.RawMessage(`{"op":"regex","key_id":3001,"pattern":{"kind":"param","param_id":2},"flags":""}`), "p")
	require.NoError(t, err)
	p, err := ir.CompilePred(pr, reg, "p")
	require.NoError(t, err)
	for name, params := range map[string]ir.Params{"Unset": nil, "Null": {2: {Kind: ir.Null}}} {
		_, err = p.Bind(b, params)
		require.ErrorIs(t, err, ir.ErrEval, name)
		require.Contains(t, err.Error(), "param pattern is null or missing (param_id=2)")
	}
	_, err = p.Bind(b, ir.Params{2: {Kind: ir.String, Str: "("}})
	require.ErrorContains(t, err, "Invalid regex pattern")
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	deep := null
	for i := 0; i < ir.MaxDepth+5; i++ {
		deep = `{"op":"neg","x":` + deep + `}`
	}
	cases := map[string]string{
		`1`:                                    "must be an object",
		`{}`:                                   "missing field 'op'",
		`{"op":5}`:                             "op: must be a string",
		`{"op":"div","a":{},"b":{}}`:           `unknown expression op "div"`,
		`{"op":"const_number"}`:                "missing field 'value'",
		`{"op":"const_number","value":"x"}`:    "value: must be a number",
		`{"op":"const_number","value":null}`:   "value: must be a number",
		`{"op":"key_ref","key_id":-1}`:         "non-negative integer",
		`{"op":"key_ref","key_id":1.5}`:        "non-negative integer",
		`{"op":"add","a":{"op":"const_null"}}`: "missing field 'b'",
		deep:                                   "nested deeper than",
	}
	for src, want := range cases {
		_, err := ir.ParseExpr(json.RawMessage(src), "e")
		require.ErrorIs(t, err, ir.ErrIR, src)
		require.ErrorContains(t, err, want, src)
	}
	_, err := ir.ParsePred(json.RawMessage(`{"op":"regex","key_id":3001,"pattern":{"kind":"glob","value":"x"}}`), "p")
	require.ErrorContains(t, err, `"glob" (want literal or param)`)
	_, err = ir.ParsePred(json.RawMessage(`{"op":"in","lhs":{"op":"const_null"},"list":[null]}`), "p")
	require.ErrorContains(t, err, "numbers or strings")
}

// everyOperatorSeeds are fuzz seeds that together use every expression
// and predicate operator and every comparison.
func everyOperatorSeeds() []string {
	out := []string{
		bin("sub", bin("add", keyID, num(1)), bin("mul", keyScore, `{"op":"neg","x":{"op":"param_ref","param_id":4}}`)),
		bin("coalesce", keyTitle, bin("coalesce", null, num(-0.25))),
		`{"op":"and","a":{"op":"const_bool","value":true},"b":{"op":"or","a":{"op":"not_null","x":` + keyScore + `},"b":{"op":"is_null","x":` + keyTitle + `}}}`,
		`{"op":"not","x":{"op":"and","a":{"op":"const_bool","value":false},"b":` + cmp("==", keyTitle, null) + `}}`,
		`{"op":"in","lhs":` + keyID + `,"list":[1,2,3.5]}`,
		`{"op":"in","lhs":{"op":"key_ref","key_id":3001},"list":["US","ca"]}`,
		`{"op":"regex","key_id":3001,"pattern":{"kind":"param","param_id":2},"flags":"i"}`,
		`{"op":"regex","key_id":3001,"pattern":{"kind":"literal","value":"^(A|U)"},"flags":""}`,
	}
	for _, c := range []string{"==", "!=", "<", "<=", ">", ">="} {
		out = append(out, cmp(c, keyScore, bin("mul", keyID, num(0.5))), cmp(c, keyTitle, null))
	}
	return out
}

// FuzzIR: any bytes as an expression and as a predicate either fail with
// ErrIR or compile and evaluate on the fixture without panicking.
func FuzzIR(f *testing.F) {
	for _, s := range []string{keyID, bin("mul", keyID, bin("coalesce", `{"op":"param_ref","param_id":4}`, num(0.1))),
		cmp(">=", keyScore, num(0.6)), `{"op":"in","lhs":{"op":"key_ref","key_id":3001},"list":["US"]}`,
		`{"op":"regex","key_id":3001,"pattern":{"kind":"literal","value":"U.*"},"flags":"i"}`,
		`{"op":"not","x":{"op":"is_null","x":{"op":"key_ref","key_id":2001}}}`, `{"op":"neg","x":` + null + `}`, `[`, `{"op":null}`} {
		f.Add([]byte(s))
	}
	for _, s := range everyOperatorSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reg, b := fixture(t)
		params := ir.Params{4: {Kind: ir.Number, Num: 2}, 2: {Kind: ir.String, Str: "U"}}
		if e, err := ir.ParseExpr(data, "e"); err == nil {
			if p, err := ir.CompileExpr(e, reg, "e"); err == nil {
				fr, err := p.Bind(b, params)
				if err == nil {
					for r := 0; r < b.Len(); r++ {
						p.Eval(fr, int32(r))
					}
				}
			} else if !errors.Is(err, ir.ErrIR) {
				t.Fatalf("compile error without ErrIR: %v", err)
			}
		} else if !errors.Is(err, ir.ErrIR) {
			t.Fatalf("parse error without ErrIR: %v", err)
		}
		if pr, err := ir.ParsePred(data, "p"); err == nil {
			if p, err := ir.CompilePred(pr, reg, "p"); err == nil {
				if fr, err := p.Bind(b, params); err == nil {
					for r := 0; r < b.Len(); r++ {
						p.Test(fr, int32(r))
					}
				}
			} else if !errors.Is(err, ir.ErrIR) {
				t.Fatalf("compile error without ErrIR: %v", err)
			}
		} else if !errors.Is(err, ir.ErrIR) {
			t.Fatalf("parse error without ErrIR: %v", err)
		}
	})
}

// TestEveryOperatorSeedsCompile keeps the fuzz seeds valid: each compiles
// as an expression or a predicate, so the fuzzer starts inside every
// operator's compiler, not at its parse errors.
func TestEveryOperatorSeedsCompile(t *testing.T) {
	reg, _ := fixture(t)
	for _, s := range everyOperatorSeeds() {
		if e, err := ir.ParseExpr(json.RawMessage(s), "e"); err == nil {
			_, err = ir.CompileExpr(e, reg, "e")
			require.NoError(t, err, s)
			continue
		}
		p, err := ir.ParsePred(json.RawMessage(s), "p")
		require.NoError(t, err, s)
		_, err = ir.CompilePred(p, reg, "p")
		require.NoError(t, err, s)
	}
}
