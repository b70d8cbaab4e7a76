// Package param declares the parameters a task type takes and checks a
// task's params against them before it is published: the
// API refuses a bad value with the field's name instead of the service
// failing the task later. A service declares its schema once, next to its
// handler; the API and the handler can both use it.
package param

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Kind is a JSON type a parameter may have.
type Kind string

// Kinds.
const (
	String  Kind = "string"
	Integer Kind = "integer"
	Number  Kind = "number"
	Boolean Kind = "boolean"
	Object  Kind = "object"
	Array   Kind = "array"
	// null is what kindOf reports for a JSON null (never declared).
	null Kind = "null"
)

// Field is one parameter.
type Field struct {
	Name     string
	Kind     Kind
	Required bool
	// Enum lists the accepted strings (compared ignoring case when
	// FoldCase); empty = any.
	Enum     []string
	FoldCase bool
	// Min and Max bound a number or integer (both zero: unbounded).
	Min, Max float64
	// MaxLen bounds a string's length in bytes or an array's length; 0 =
	// unbounded.
	MaxLen int
	// Items is the kind of an array's items; empty = any.
	Items Kind
	// Description says what it is for (documentation).
	Description string
}

// Schema is a task type's parameters.
type Schema struct {
	Fields []Field
	// AllowUnknown accepts parameters not listed; default: refused, so a
	// misspelt name is caught.
	AllowUnknown bool
}

// Error says which parameter is wrong and why.
type Error struct {
	// Field is the parameter's name ("" = params as a whole).
	Field  string
	Reason string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "params: " + e.Reason
	}
	return "params." + e.Field + ": " + e.Reason
}

// ErrInvalid is matched by every *Error (errors.Is).
var ErrInvalid = errors.New("invalid params")

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

func fail(field, format string, args ...any) *Error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Validate checks params (a JSON object, or empty/null for none) against
// s. The first problem found is returned, fields in declaration order,
// then unknown names sorted.
func (s Schema) Validate(params json.RawMessage) error {
	params = bytes.TrimSpace(params)
	var m map[string]json.RawMessage
	if len(params) > 0 && !bytes.Equal(params, []byte("null")) {
		if params[0] != '{' {
			return fail("", "must be a JSON object")
		}
		if err := json.Unmarshal(params, &m); err != nil {
			return fail("", "not valid JSON: %v", err)
		}
	}
	known := make(map[string]bool, len(s.Fields))
	for _, f := range s.Fields {
		known[f.Name] = true
		raw, ok := m[f.Name]
		if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			if f.Required {
				return fail(f.Name, "is required%s", f.hint())
			}
			continue
		}
		if err := f.check(raw); err != nil {
			return err
		}
	}
	if !s.AllowUnknown {
		var unknown []string
		for k := range m {
			if !known[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			names := make([]string, 0, len(s.Fields))
			for _, f := range s.Fields {
				names = append(names, f.Name)
			}
			return fail(unknown[0], "is not a parameter of this task type (known: %s)", strings.Join(names, ", "))
		}
	}
	return nil
}

func (f Field) hint() string {
	if len(f.Enum) > 0 {
		return ": one of " + strings.Join(f.Enum, ", ")
	}
	if f.Kind != "" {
		return " (" + string(f.Kind) + ")"
	}
	return ""
}

func kindOf(raw json.RawMessage) Kind {
	switch raw[0] {
	case '"':
		return String
	case '{':
		return Object
	case '[':
		return Array
	case 't', 'f':
		return Boolean
	case 'n':
		return null
	}
	return Number
}

func (f Field) check(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	got := kindOf(raw)
	want := f.Kind
	switch {
	case want == "":
	case want == Integer && got == Number:
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil || v != math.Trunc(v) {
			return fail(f.Name, "must be an integer (got %s)", truncate(string(raw)))
		}
	case want != got:
		return fail(f.Name, "must be a%s %s (got %s)", article(want), want, got)
	}
	switch got {
	case String:
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return fail(f.Name, "not a valid string: %v", err)
		}
		if f.MaxLen > 0 && len(v) > f.MaxLen {
			return fail(f.Name, "is %d bytes; at most %d", len(v), f.MaxLen)
		}
		if len(f.Enum) > 0 && !f.inEnum(v) {
			return fail(f.Name, "%q is not one of %s", truncate(v), strings.Join(f.Enum, ", "))
		}
	case Number:
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return fail(f.Name, "not a valid number: %v", err)
		}
		if (f.Min != 0 || f.Max != 0) && (v < f.Min || v > f.Max) {
			return fail(f.Name, "%s", outside(v, f.Min, f.Max))
		}
	case Array:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fail(f.Name, "not a valid array: %v", err)
		}
		if f.MaxLen > 0 && len(items) > f.MaxLen {
			return fail(f.Name, "has %d items; at most %d", len(items), f.MaxLen)
		}
		if f.Items != "" {
			for i, it := range items {
				it = bytes.TrimSpace(it)
				if k := kindOf(it); k != f.Items && !(f.Items == Number && k == Number) {
					return fail(fmt.Sprintf("%s[%d]", f.Name, i), "must be a%s %s (got %s)", article(f.Items), f.Items, k)
				}
			}
		}
	}
	return nil
}

func (f Field) inEnum(v string) bool {
	for _, e := range f.Enum {
		if v == e || f.FoldCase && strings.EqualFold(v, e) {
			return true
		}
	}
	return false
}

func article(k Kind) string {
	switch k {
	case Integer, Object, Array:
		return "n"
	}
	return ""
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// num writes a number as a person does: 86400000, not 8.64e+07.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// outside says why v is not within lo..hi, either of which may be open
// (±Inf).
func outside(v, lo, hi float64) string {
	switch {
	case math.IsInf(lo, -1):
		return num(v) + " is above the maximum " + num(hi)
	case math.IsInf(hi, 1):
		return num(v) + " is below the minimum " + num(lo)
	}
	return num(v) + " is outside " + num(lo) + ".." + num(hi)
}
