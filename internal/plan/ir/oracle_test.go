package ir_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/taskflow/taskflow/internal/plan/batch"
	"github.com/taskflow/taskflow/internal/plan/ir"
)

// interp is a direct tree-walking evaluator of the IR rules (docs/plan.md,
// "Expressions and predicates"),
// written independently of the compiler, as the oracle the compiled
// closures are checked against.
type interp struct {
	b      *batch.Batch
	params ir.Params
}

func (in interp) expr(e *ir.Expr, r int) (float64, bool) {
	switch e.Op {
	case "const_number":
		return e.Value, true
	case "const_null":
		return 0, false
	case "key_ref":
		if e.KeyID == 1 {
			return float64(in.b.IDs[r]), true
		}
		c := in.b.Float(e.KeyID)
		if c == nil || !c.Valid[r] {
			return 0, false
		}
		return c.Vals[r], true
	case "param_ref":
		v := in.params[e.ParamID]
		return v.Num, v.Kind == ir.Number
	case "neg":
		x, ok := in.expr(e.A, r)
		return -x, ok
	case "coalesce":
		if x, ok := in.expr(e.A, r); ok {
			return x, true
		}
		return in.expr(e.B, r)
	}
	x, ok1 := in.expr(e.A, r)
	y, ok2 := in.expr(e.B, r)
	if !ok1 || !ok2 {
		return 0, false
	}
	switch e.Op {
	case "add":
		return x + y, true
	case "sub":
		return x - y, true
	}
	return x * y, true
}

func (in interp) isNull(e *ir.Expr, r int) bool {
	if e.Op == "key_ref" {
		if c := in.b.String(e.KeyID); c != nil {
			return !c.Valid[r]
		}
	}
	_, ok := in.expr(e, r)
	return !ok
}

func (in interp) pred(p *ir.Pred, r int) bool {
	switch p.Op {
	case "const_bool":
		return p.Bool
	case "and":
		return in.pred(p.A, r) && in.pred(p.B, r)
	case "or":
		return in.pred(p.A, r) || in.pred(p.B, r)
	case "not":
		return !in.pred(p.A, r)
	case "is_null":
		return in.isNull(p.X, r)
	case "not_null":
		return !in.isNull(p.X, r)
	case "cmp":
		if p.X.Op == "const_null" || p.Y.Op == "const_null" {
			a, b := in.isNull(p.X, r), in.isNull(p.Y, r)
			switch p.Cmp {
			case "==":
				return a && b
			case "!=":
				return a != b
			}
			return false
		}
		x, ok1 := in.expr(p.X, r)
		y, ok2 := in.expr(p.Y, r)
		if !ok1 || !ok2 {
			return false
		}
		switch p.Cmp {
		case "==":
			return x == y
		case "!=":
			return x != y
		case "<":
			return x < y
		case "<=":
			return x <= y
		case ">":
			return x > y
		}
		return x >= y
	case "in":
		if p.StrIn {
			c := in.b.String(p.X.KeyID)
			if c == nil || !c.Valid[r] {
				return false
			}
			for _, s := range p.StrList {
				if s == c.Vals[r] {
					return true
				}
			}
			return false
		}
		x, ok := in.expr(p.X, r)
		if !ok {
			return false
		}
		for _, v := range p.NumList {
			if v == x {
				return true
			}
		}
		return false
	case "regex":
		c := in.b.String(p.KeyID)
		if c == nil || !c.Valid[r] {
			return false
		}
		pat := p.Pattern
		if p.PatParam != 0 {
			pat = in.params[p.PatParam].Str
		}
		if p.RegexFlag == "i" {
			pat = "(?i)" + pat
		}
		return regexp.MustCompile(pat).MatchString(c.Vals[r])
	}
	panic("unknown op " + p.Op)
}

// FuzzCompiledMatchesInterpreter: whatever the fuzzer builds, the compiled
// program and the interpreter agree on every row of the fixture.
func FuzzCompiledMatchesInterpreter(f *testing.F) {
	for _, s := range []string{
		bin("add", keyID, bin("mul", keyScore, num(3))), bin("coalesce", keyTitle, bin("sub", keyScore, keyID)),
		`{"op":"neg","x":` + bin("coalesce", `{"op":"param_ref","param_id":4}`, keyScore) + `}`,
		cmp(">=", keyScore, num(0.5)), cmp("!=", keyScore, null), cmp("<", keyID, keyScore), cmp("==", null, null),
		`{"op":"not","x":` + cmp(">", keyScore, num(0)) + `}`,
		`{"op":"or","a":{"op":"is_null","x":{"op":"key_ref","key_id":3001}},"b":{"op":"in","lhs":` + keyID + `,"list":[1,4]}}`,
		`{"op":"and","a":{"op":"regex","key_id":3001,"pattern":{"kind":"literal","value":"^c"},"flags":"i"},"b":{"op":"in","lhs":{"op":"key_ref","key_id":3001},"list":["ca","CA"]}}`,
		`{"op":"regex","key_id":3001,"pattern":{"kind":"param","param_id":2},"flags":""}`,
	} {
		f.Add([]byte(s))
	}
	for _, s := range everyOperatorSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reg, b := fixture(t)
		params := ir.Params{4: {Kind: ir.Number, Num: -2}, 2: {Kind: ir.String, Str: "^[A-Z]"}}
		or := interp{b: b, params: params}
		if e, err := ir.ParseExpr(json.RawMessage(data), "e"); err == nil {
			if p, err := ir.CompileExpr(e, reg, "e"); err == nil {
				fr, err := p.Bind(b, params)
				if err != nil {
					t.Fatal(err)
				}
				for r := 0; r < b.Len(); r++ {
					got, gok := p.Eval(fr, int32(r))
					want, wok := or.expr(e, r)
					if gok != wok || (gok && got != want && !(got != got && want != want)) {
						t.Fatalf("row %d: compiled (%v,%v), interpreter (%v,%v)", r, got, gok, want, wok)
					}
				}
			}
		}
		if pr, err := ir.ParsePred(json.RawMessage(data), "p"); err == nil {
			if p, err := ir.CompilePred(pr, reg, "p"); err == nil {
				fr, err := p.Bind(b, params)
				if err != nil {
					t.Fatal(err)
				}
				for r := 0; r < b.Len(); r++ {
					if got, want := p.Test(fr, int32(r)), or.pred(pr, r); got != want {
						t.Fatalf("row %d: compiled %v, interpreter %v", r, got, want)
					}
				}
			}
		}
	})
}
