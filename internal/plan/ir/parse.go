// Package ir parses the plan's expression IR (vm) and predicate IR (filter)
// and compiles them to closures over column slots: a key read becomes an
// index into a slice bound once per node run, so evaluating a row is a few
// indirect calls with no map lookups, no allocation and no interpretation
// of the JSON tree.
package ir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrIR is wrapped by every parse or compile error.
var ErrIR = errors.New("invalid IR")

// MaxDepth bounds the nesting of an expression or predicate.
const MaxDepth = 200

// Expr is a parsed ExprIR node.
type Expr struct {
	Op      string // const_number const_null key_ref param_ref add sub mul coalesce neg
	Value   float64
	KeyID   int
	ParamID int
	A, B    *Expr // binary operands; A is the operand of neg
}

// Pred is a parsed PredIR node.
type Pred struct {
	Op        string // const_bool and or not cmp in is_null not_null regex
	Bool      bool
	Cmp       string // == != < <= > >=
	A, B      *Pred  // and/or operands; A is the operand of not
	X, Y      *Expr  // cmp operands; X is the operand of in/is_null/not_null
	NumList   []float64
	StrList   []string
	StrIn     bool // the in list holds strings
	KeyID     int  // regex
	Pattern   string
	PatParam  int // regex pattern from this param (0: literal)
	RegexFlag string
}

type obj map[string]json.RawMessage

func decodeObj(raw json.RawMessage, path string) (obj, error) {
	var o obj
	if err := json.Unmarshal(raw, &o); err != nil || o == nil {
		return nil, fmt.Errorf("%w: %s: must be an object", ErrIR, path)
	}
	return o, nil
}

func (o obj) op(path string) (string, error) {
	raw, ok := o["op"]
	if !ok {
		return "", fmt.Errorf("%w: %s: missing field 'op'", ErrIR, path)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: %s.op: must be a string", ErrIR, path)
	}
	return s, nil
}

// only rejects fields outside allowed (fail-closed).
func (o obj) only(path string, allowed ...string) error {
	var extra []string
	for k := range o {
		found := k == "op"
		for _, a := range allowed {
			if k == a {
				found = true
			}
		}
		if !found {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("%w: %s: unknown field '%s'", ErrIR, path, extra[0])
	}
	return nil
}

func (o obj) number(path, name string) (float64, error) {
	raw, ok := o[name]
	if !ok {
		return 0, fmt.Errorf("%w: %s: missing field '%s'", ErrIR, path, name)
	}
	var f float64
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, &f) != nil {
		return 0, fmt.Errorf("%w: %s.%s: must be a number", ErrIR, path, name)
	}
	return f, nil
}

func (o obj) integer(path, name string) (int, error) {
	f, err := o.number(path, name)
	if err != nil {
		return 0, err
	}
	if f != float64(int64(f)) || f < 0 || f > 1<<31 {
		return 0, fmt.Errorf("%w: %s.%s: must be a non-negative integer", ErrIR, path, name)
	}
	return int(f), nil
}

func (o obj) str(path, name string) (string, error) {
	raw, ok := o[name]
	if !ok {
		return "", fmt.Errorf("%w: %s: missing field '%s'", ErrIR, path, name)
	}
	var s string
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%w: %s.%s: must be a string", ErrIR, path, name)
	}
	return s, nil
}

// ParseExpr parses one ExprIR object; path names it in errors (e.g. "expr_table.e0").
func ParseExpr(raw json.RawMessage, path string) (*Expr, error) { return parseExpr(raw, path, 0) }

func parseExpr(raw json.RawMessage, path string, depth int) (*Expr, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("%w: %s: nested deeper than %d", ErrIR, path, MaxDepth)
	}
	o, err := decodeObj(raw, path)
	if err != nil {
		return nil, err
	}
	op, err := o.op(path)
	if err != nil {
		return nil, err
	}
	e := &Expr{Op: op}
	sub := func(name string) (*Expr, error) {
		r, ok := o[name]
		if !ok {
			return nil, fmt.Errorf("%w: %s: missing field '%s'", ErrIR, path, name)
		}
		return parseExpr(r, path+"."+name, depth+1)
	}
	switch op {
	case "const_number":
		if err = o.only(path, "value"); err == nil {
			e.Value, err = o.number(path, "value")
		}
	case "const_null":
		err = o.only(path)
	case "key_ref":
		if err = o.only(path, "key_id"); err == nil {
			e.KeyID, err = o.integer(path, "key_id")
		}
	case "param_ref":
		if err = o.only(path, "param_id"); err == nil {
			e.ParamID, err = o.integer(path, "param_id")
		}
	case "add", "sub", "mul", "coalesce":
		if err = o.only(path, "a", "b"); err == nil {
			if e.A, err = sub("a"); err == nil {
				e.B, err = sub("b")
			}
		}
	case "neg":
		if err = o.only(path, "x"); err == nil {
			e.A, err = sub("x")
		}
	default:
		return nil, fmt.Errorf("%w: %s: unknown expression op %q", ErrIR, path, op)
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

// ParsePred parses one PredIR object; path names it in errors (e.g. "pred_table.p0").
func ParsePred(raw json.RawMessage, path string) (*Pred, error) { return parsePred(raw, path, 0) }

var cmpOps = map[string]bool{"==": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true}

func parsePred(raw json.RawMessage, path string, depth int) (*Pred, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("%w: %s: nested deeper than %d", ErrIR, path, MaxDepth)
	}
	o, err := decodeObj(raw, path)
	if err != nil {
		return nil, err
	}
	op, err := o.op(path)
	if err != nil {
		return nil, err
	}
	p := &Pred{Op: op}
	subPred := func(name string) (*Pred, error) {
		r, ok := o[name]
		if !ok {
			return nil, fmt.Errorf("%w: %s: missing field '%s'", ErrIR, path, name)
		}
		return parsePred(r, path+"."+name, depth+1)
	}
	subExpr := func(name string) (*Expr, error) {
		r, ok := o[name]
		if !ok {
			return nil, fmt.Errorf("%w: %s: missing field '%s'", ErrIR, path, name)
		}
		return parseExpr(r, path+"."+name, depth+1)
	}
	switch op {
	case "const_bool":
		if err = o.only(path, "value"); err == nil {
			raw, ok := o["value"]
			if !ok || json.Unmarshal(raw, &p.Bool) != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
				err = fmt.Errorf("%w: %s.value: must be a boolean", ErrIR, path)
			}
		}
	case "and", "or":
		if err = o.only(path, "a", "b"); err == nil {
			if p.A, err = subPred("a"); err == nil {
				p.B, err = subPred("b")
			}
		}
	case "not":
		if err = o.only(path, "x"); err == nil {
			p.A, err = subPred("x")
		}
	case "cmp":
		if err = o.only(path, "cmp", "a", "b"); err != nil {
			break
		}
		if p.Cmp, err = o.str(path, "cmp"); err != nil {
			break
		}
		if !cmpOps[p.Cmp] {
			err = fmt.Errorf("%w: %s.cmp: unknown comparison %q (want == != < <= > >=)", ErrIR, path, p.Cmp)
			break
		}
		if p.X, err = subExpr("a"); err == nil {
			p.Y, err = subExpr("b")
		}
	case "in":
		if err = o.only(path, "lhs", "list"); err != nil {
			break
		}
		if p.X, err = subExpr("lhs"); err != nil {
			break
		}
		err = p.parseList(o, path)
	case "is_null", "not_null":
		if err = o.only(path, "x"); err == nil {
			p.X, err = subExpr("x")
		}
	case "regex":
		err = p.parseRegex(o, path)
	default:
		return nil, fmt.Errorf("%w: %s: unknown predicate op %q", ErrIR, path, op)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Pred) parseList(o obj, path string) error {
	raw, ok := o["list"]
	if !ok {
		return fmt.Errorf("%w: %s: missing field 'list'", ErrIR, path)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return fmt.Errorf("%w: %s.list: must be an array", ErrIR, path)
	}
	nums, strs := 0, 0
	for _, it := range items {
		var f float64
		var s string
		t := bytes.TrimSpace(it)
		switch {
		case len(t) > 0 && t[0] == '"' && json.Unmarshal(t, &s) == nil:
			strs++
			p.StrList = append(p.StrList, s)
		case !bytes.Equal(t, []byte("null")) && json.Unmarshal(t, &f) == nil:
			nums++
			p.NumList = append(p.NumList, f)
		default:
			return fmt.Errorf("%w: %s.list: items must be numbers or strings", ErrIR, path)
		}
	}
	if nums > 0 && strs > 0 {
		return fmt.Errorf("%w: %s.list: must be all numbers or all strings, not a mix", ErrIR, path)
	}
	p.StrIn = strs > 0
	return nil
}

func (p *Pred) parseRegex(o obj, path string) error {
	if err := o.only(path, "key_id", "pattern", "flags"); err != nil {
		return err
	}
	var err error
	if p.KeyID, err = o.integer(path, "key_id"); err != nil {
		return err
	}
	p.RegexFlag = ""
	if _, ok := o["flags"]; ok {
		if p.RegexFlag, err = o.str(path, "flags"); err != nil {
			return err
		}
	}
	if p.RegexFlag != "" && p.RegexFlag != "i" {
		return fmt.Errorf("%w: %s.flags: %q is not a regex flag (want \"\" or \"i\")", ErrIR, path, p.RegexFlag)
	}
	raw, ok := o["pattern"]
	if !ok {
		return fmt.Errorf("%w: %s: missing field 'pattern'", ErrIR, path)
	}
	pp := path + ".pattern"
	po, err := decodeObj(raw, pp)
	if err != nil {
		return err
	}
	kind, err := po.str(pp, "kind")
	if err != nil {
		return err
	}
	switch kind {
	case "literal":
		if err := po.only(pp, "kind", "value"); err != nil {
			return err
		}
		p.Pattern, err = po.str(pp, "value")
		return err
	case "param":
		if err := po.only(pp, "kind", "param_id"); err != nil {
			return err
		}
		p.PatParam, err = po.integer(pp, "param_id")
		if err == nil && p.PatParam == 0 {
			err = fmt.Errorf("%w: %s.param_id: must be positive", ErrIR, pp)
		}
		return err
	default:
		return fmt.Errorf("%w: %s.kind: %q (want literal or param)", ErrIR, pp, kind)
	}
}

// String renders e in infix form, for traces and messages.
func (e *Expr) String() string {
	var sb strings.Builder
	e.write(&sb)
	return sb.String()
}

func (e *Expr) write(sb *strings.Builder) {
	switch e.Op {
	case "const_number":
		fmt.Fprintf(sb, "%g", e.Value)
	case "const_null":
		sb.WriteString("null")
	case "key_ref":
		fmt.Fprintf(sb, "key[%d]", e.KeyID)
	case "param_ref":
		fmt.Fprintf(sb, "param[%d]", e.ParamID)
	case "neg":
		sb.WriteString("-(")
		e.A.write(sb)
		sb.WriteString(")")
	case "coalesce":
		sb.WriteString("coalesce(")
		e.A.write(sb)
		sb.WriteString(", ")
		e.B.write(sb)
		sb.WriteString(")")
	default:
		sym := map[string]string{"add": " + ", "sub": " - ", "mul": " * "}[e.Op]
		sb.WriteString("(")
		e.A.write(sb)
		sb.WriteString(sym)
		e.B.write(sb)
		sb.WriteString(")")
	}
}
