package ir

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/taskflow/taskflow/internal/plan/batch"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

// ErrEval is wrapped by errors raised while evaluating (e.g. a regex
// pattern param that is null).
var ErrEval = errors.New("evaluation failed")

// ValueKind says what a request param holds.
type ValueKind uint8

// Param value kinds.
const (
	Null ValueKind = iota
	Number
	String
	Bool
)

// Value is one request param value.
type Value struct {
	Kind ValueKind
	Num  float64
	Str  string
	Bool bool
}

// Params are a request's param values by param id; an absent id is null.
type Params map[int]Value

// Frame binds a compiled program's slots to one batch and one request.
type Frame struct {
	ids     []int64
	floats  []*batch.FloatCol
	strs    []*batch.StringCol
	nums    []Value
	regexes []*regexp.Regexp
	memo    []map[string]bool
}

type (
	exprFn func(f *Frame, r int32) (float64, bool)
	predFn func(f *Frame, r int32) bool
)

type regexSlot struct {
	paramID int
	flags   string
}

// Program is a compiled expression or predicate.
type Program struct {
	floatKeys []int
	strKeys   []int
	paramIDs  []int
	regexes   []regexSlot
	memoSlots int
	expr      exprFn
	pred      predFn
}

type compiler struct {
	reg       *registry.Registry
	prog      *Program
	floatSlot map[int]int
	strSlot   map[int]int
	paramSlot map[int]int
}

func newCompiler(reg *registry.Registry) *compiler {
	return &compiler{reg: reg, prog: &Program{}, floatSlot: map[int]int{}, strSlot: map[int]int{}, paramSlot: map[int]int{}}
}

// CompileExpr checks e against the registry and compiles it.
func CompileExpr(e *Expr, reg *registry.Registry, path string) (*Program, error) {
	c := newCompiler(reg)
	fn, err := c.expr(e, path)
	if err != nil {
		return nil, err
	}
	c.prog.expr = fn
	return c.prog, nil
}

// CompilePred checks p against the registry and compiles it.
func CompilePred(p *Pred, reg *registry.Registry, path string) (*Program, error) {
	c := newCompiler(reg)
	fn, err := c.pred(p, path)
	if err != nil {
		return nil, err
	}
	c.prog.pred = fn
	return c.prog, nil
}

// Bind resolves the program's slots against b and params.
func (p *Program) Bind(b *batch.Batch, params Params) (*Frame, error) {
	f := &Frame{ids: b.IDs}
	if len(p.floatKeys) > 0 {
		f.floats = make([]*batch.FloatCol, len(p.floatKeys))
		for i, k := range p.floatKeys {
			f.floats[i] = b.Float(k)
		}
	}
	if len(p.strKeys) > 0 {
		f.strs = make([]*batch.StringCol, len(p.strKeys))
		for i, k := range p.strKeys {
			f.strs[i] = b.String(k)
		}
	}
	if len(p.paramIDs) > 0 {
		f.nums = make([]Value, len(p.paramIDs))
		for i, id := range p.paramIDs {
			f.nums[i] = params[id]
		}
	}
	if len(p.regexes) > 0 {
		f.regexes = make([]*regexp.Regexp, len(p.regexes))
		for i, rs := range p.regexes {
			v := params[rs.paramID]
			if v.Kind != String {
				return nil, fmt.Errorf("%w: regex: param pattern is null or missing (param_id=%d)", ErrEval, rs.paramID)
			}
			re, err := compileRegex(v.Str, rs.flags)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrEval, err)
			}
			f.regexes[i] = re
		}
	}
	if p.memoSlots > 0 {
		f.memo = make([]map[string]bool, p.memoSlots)
		for i := range f.memo {
			f.memo[i] = map[string]bool{}
		}
	}
	return f, nil
}

// Eval evaluates a compiled expression on physical row r; ok is false for null.
func (p *Program) Eval(f *Frame, r int32) (v float64, ok bool) { return p.expr(f, r) }

// Test evaluates a compiled predicate on physical row r. No operator yields
// "unknown" (a comparison with a runtime null is false), so the three-valued
// and/or/not of the IR reduce to two values.
func (p *Program) Test(f *Frame, r int32) bool { return p.pred(f, r) }

func compileRegex(pattern, flags string) (*regexp.Regexp, error) {
	if flags == "i" {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("Invalid regex pattern: %w", err)
	}
	return re, nil
}

func (c *compiler) key(id int, path string) (*registry.Key, error) {
	k := c.reg.Keys[id]
	if k == nil {
		return nil, fmt.Errorf("%w: %s: unknown key_id %d", ErrIR, path, id)
	}
	return k, nil
}

func (c *compiler) slot(m map[int]int, list *[]int, id int) int {
	if s, ok := m[id]; ok {
		return s
	}
	s := len(*list)
	*list = append(*list, id)
	m[id] = s
	return s
}

func (c *compiler) expr(e *Expr, path string) (exprFn, error) {
	switch e.Op {
	case "const_number":
		v := e.Value
		return func(*Frame, int32) (float64, bool) { return v, true }, nil
	case "const_null":
		return func(*Frame, int32) (float64, bool) { return 0, false }, nil
	case "key_ref":
		k, err := c.key(e.KeyID, path)
		if err != nil {
			return nil, err
		}
		if k.ID == registry.IDKey {
			return func(f *Frame, r int32) (float64, bool) { return float64(f.ids[r]), true }, nil
		}
		if k.Type != registry.TypeFloat && k.Type != registry.TypeInt {
			return nil, fmt.Errorf("%w: %s: key %d (%s) is a %s key, not a number", ErrIR, path, k.ID, k.Name, k.Type)
		}
		s := c.slot(c.floatSlot, &c.prog.floatKeys, k.ID)
		return func(f *Frame, r int32) (float64, bool) {
			col := f.floats[s]
			if col == nil || !col.Valid[r] {
				return 0, false
			}
			return col.Vals[r], true
		}, nil
	case "param_ref":
		p := c.reg.Params[e.ParamID]
		if p == nil {
			return nil, fmt.Errorf("%w: %s: unknown param_id %d", ErrIR, path, e.ParamID)
		}
		if p.Type != registry.TypeFloat && p.Type != registry.TypeInt {
			return nil, fmt.Errorf("%w: %s: param %d (%s) is a %s param, not a number", ErrIR, path, p.ID, p.Name, p.Type)
		}
		s := c.slot(c.paramSlot, &c.prog.paramIDs, p.ID)
		return func(f *Frame, _ int32) (float64, bool) {
			v := f.nums[s]
			return v.Num, v.Kind == Number
		}, nil
	case "neg":
		a, err := c.expr(e.A, path+".x")
		if err != nil {
			return nil, err
		}
		return func(f *Frame, r int32) (float64, bool) {
			v, ok := a(f, r)
			return -v, ok
		}, nil
	}
	a, err := c.expr(e.A, path+".a")
	if err != nil {
		return nil, err
	}
	b, err := c.expr(e.B, path+".b")
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case "add":
		return func(f *Frame, r int32) (float64, bool) {
			x, ok1 := a(f, r)
			y, ok2 := b(f, r)
			return x + y, ok1 && ok2
		}, nil
	case "sub":
		return func(f *Frame, r int32) (float64, bool) {
			x, ok1 := a(f, r)
			y, ok2 := b(f, r)
			return x - y, ok1 && ok2
		}, nil
	case "mul":
		return func(f *Frame, r int32) (float64, bool) {
			x, ok1 := a(f, r)
			y, ok2 := b(f, r)
			return x * y, ok1 && ok2
		}, nil
	case "coalesce":
		return func(f *Frame, r int32) (float64, bool) {
			if x, ok := a(f, r); ok {
				return x, true
			}
			return b(f, r)
		}, nil
	}
	return nil, fmt.Errorf("%w: %s: unknown expression op %q", ErrIR, path, e.Op)
}

// nullTest compiles "x is null" for any key type (string keys included).
func (c *compiler) nullTest(x *Expr, path string) (func(f *Frame, r int32) bool, error) {
	if x.Op == "key_ref" {
		k, err := c.key(x.KeyID, path)
		if err != nil {
			return nil, err
		}
		if k.Type == registry.TypeString {
			s := c.slot(c.strSlot, &c.prog.strKeys, k.ID)
			return func(f *Frame, r int32) bool {
				col := f.strs[s]
				return col == nil || !col.Valid[r]
			}, nil
		}
		if k.Type == registry.TypeFeatureBundle || k.Type == registry.TypeBool {
			return func(*Frame, int32) bool { return true }, nil
		}
	}
	e, err := c.expr(x, path)
	if err != nil {
		return nil, err
	}
	return func(f *Frame, r int32) bool { _, ok := e(f, r); return !ok }, nil
}

func (c *compiler) pred(p *Pred, path string) (predFn, error) {
	switch p.Op {
	case "const_bool":
		v := p.Bool
		return func(*Frame, int32) bool { return v }, nil
	case "and", "or":
		a, err := c.pred(p.A, path+".a")
		if err != nil {
			return nil, err
		}
		b, err := c.pred(p.B, path+".b")
		if err != nil {
			return nil, err
		}
		if p.Op == "and" {
			return func(f *Frame, r int32) bool { return a(f, r) && b(f, r) }, nil
		}
		return func(f *Frame, r int32) bool { return a(f, r) || b(f, r) }, nil
	case "not":
		a, err := c.pred(p.A, path+".x")
		if err != nil {
			return nil, err
		}
		return func(f *Frame, r int32) bool { return !a(f, r) }, nil
	case "is_null", "not_null":
		t, err := c.nullTest(p.X, path+".x")
		if err != nil {
			return nil, err
		}
		if p.Op == "is_null" {
			return t, nil
		}
		return func(f *Frame, r int32) bool { return !t(f, r) }, nil
	case "cmp":
		return c.cmp(p, path)
	case "in":
		return c.in(p, path)
	case "regex":
		return c.regex(p, path)
	}
	return nil, fmt.Errorf("%w: %s: unknown predicate op %q", ErrIR, path, p.Op)
}

func (c *compiler) cmp(p *Pred, path string) (predFn, error) {
	if p.X.Op == "const_null" || p.Y.Op == "const_null" {
		// A literal null makes == / != a null test; ordering against null is false.
		xt, err := c.nullTest(p.X, path+".a")
		if err != nil {
			return nil, err
		}
		yt, err := c.nullTest(p.Y, path+".b")
		if err != nil {
			return nil, err
		}
		switch p.Cmp {
		case "==":
			return func(f *Frame, r int32) bool { return xt(f, r) && yt(f, r) }, nil
		case "!=":
			return func(f *Frame, r int32) bool { return xt(f, r) != yt(f, r) }, nil
		default:
			return func(*Frame, int32) bool { return false }, nil
		}
	}
	a, err := c.expr(p.X, path+".a")
	if err != nil {
		return nil, err
	}
	b, err := c.expr(p.Y, path+".b")
	if err != nil {
		return nil, err
	}
	var op func(x, y float64) bool
	switch p.Cmp {
	case "==":
		op = func(x, y float64) bool { return x == y }
	case "!=":
		op = func(x, y float64) bool { return x != y }
	case "<":
		op = func(x, y float64) bool { return x < y }
	case "<=":
		op = func(x, y float64) bool { return x <= y }
	case ">":
		op = func(x, y float64) bool { return x > y }
	case ">=":
		op = func(x, y float64) bool { return x >= y }
	default:
		return nil, fmt.Errorf("%w: %s.cmp: unknown comparison %q", ErrIR, path, p.Cmp)
	}
	// The common shape "key >= constant" gets a direct closure.
	if p.Y.Op == "const_number" {
		y := p.Y.Value
		switch p.Cmp {
		case ">=":
			return func(f *Frame, r int32) bool { x, ok := a(f, r); return ok && x >= y }, nil
		case ">":
			return func(f *Frame, r int32) bool { x, ok := a(f, r); return ok && x > y }, nil
		case "<":
			return func(f *Frame, r int32) bool { x, ok := a(f, r); return ok && x < y }, nil
		case "<=":
			return func(f *Frame, r int32) bool { x, ok := a(f, r); return ok && x <= y }, nil
		}
	}
	return func(f *Frame, r int32) bool {
		x, ok1 := a(f, r)
		if !ok1 {
			return false
		}
		y, ok2 := b(f, r)
		return ok2 && op(x, y)
	}, nil
}

func (c *compiler) in(p *Pred, path string) (predFn, error) {
	if p.StrIn {
		if p.X.Op != "key_ref" {
			return nil, fmt.Errorf("%w: %s.lhs: a string list needs a string key_ref on the left", ErrIR, path)
		}
		k, err := c.key(p.X.KeyID, path+".lhs")
		if err != nil {
			return nil, err
		}
		if k.Type != registry.TypeString {
			return nil, fmt.Errorf("%w: %s.lhs: key %d (%s) is not a string key", ErrIR, path, k.ID, k.Name)
		}
		set := make(map[string]struct{}, len(p.StrList))
		for _, s := range p.StrList {
			set[s] = struct{}{}
		}
		s := c.slot(c.strSlot, &c.prog.strKeys, k.ID)
		return func(f *Frame, r int32) bool {
			col := f.strs[s]
			if col == nil || !col.Valid[r] {
				return false
			}
			_, hit := set[col.Vals[r]]
			return hit
		}, nil
	}
	a, err := c.expr(p.X, path+".lhs")
	if err != nil {
		return nil, err
	}
	list := append([]float64(nil), p.NumList...)
	return func(f *Frame, r int32) bool {
		x, ok := a(f, r)
		if !ok {
			return false
		}
		for _, v := range list {
			if x == v {
				return true
			}
		}
		return false
	}, nil
}

func (c *compiler) regex(p *Pred, path string) (predFn, error) {
	k, err := c.key(p.KeyID, path)
	if err != nil {
		return nil, err
	}
	if k.Type != registry.TypeString {
		return nil, fmt.Errorf("%w: %s.key_id: key %d (%s) is not a string key", ErrIR, path, k.ID, k.Name)
	}
	s := c.slot(c.strSlot, &c.prog.strKeys, k.ID)
	m := c.prog.memoSlots
	c.prog.memoSlots++
	var get func(f *Frame) *regexp.Regexp
	if p.PatParam != 0 {
		prm := c.reg.Params[p.PatParam]
		if prm == nil {
			return nil, fmt.Errorf("%w: %s.pattern: unknown param_id %d", ErrIR, path, p.PatParam)
		}
		if prm.Type != registry.TypeString {
			return nil, fmt.Errorf("%w: %s.pattern: param %d (%s) is not a string param", ErrIR, path, prm.ID, prm.Name)
		}
		rs := len(c.prog.regexes)
		c.prog.regexes = append(c.prog.regexes, regexSlot{paramID: prm.ID, flags: p.RegexFlag})
		get = func(f *Frame) *regexp.Regexp { return f.regexes[rs] }
	} else {
		re, err := compileRegex(p.Pattern, p.RegexFlag)
		if err != nil {
			return nil, fmt.Errorf("%w: %s.pattern: %w", ErrIR, path, err)
		}
		get = func(*Frame) *regexp.Regexp { return re }
	}
	return func(f *Frame, r int32) bool {
		col := f.strs[s]
		if col == nil || !col.Valid[r] {
			return false
		}
		v := col.Vals[r]
		memo := f.memo[m]
		if hit, ok := memo[v]; ok {
			return hit
		}
		hit := get(f).MatchString(v)
		memo[v] = hit
		return hit
	}, nil
}
