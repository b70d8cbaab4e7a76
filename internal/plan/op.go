package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Kind says where a node runs.
type Kind uint8

const (
	// KindIO nodes wait on Redis or a timer: each runs in its own goroutine.
	KindIO Kind = iota
	// KindCPU nodes compute: they run on the bounded CPU pool, or inline
	// where the engine's options say a hand-off does not pay.
	KindCPU
)

func (k Kind) String() string {
	if k == KindIO {
		return "IO"
	}
	return "CPU"
}

// ParamType is the type of an op param.
type ParamType string

// Param types of the reference's task manifest.
const (
	PInt         ParamType = "int"
	PString      ParamType = "string"
	PBool        ParamType = "bool"
	PNodeRef     ParamType = "node_ref"
	PExprID      ParamType = "expr_id"
	PPredID      ParamType = "pred_id"
	PEndpointRef ParamType = "endpoint_ref"
)

// ParamSpec describes one param of an op.
type ParamSpec struct {
	Name     string
	Type     ParamType
	Required bool
	Nullable bool
	// Default applies when the param is absent (nil: none).
	Default any
	// Min and Max bound an int (0, 0: unbounded).
	Min, Max int64
	// Enum lists the allowed strings (nil: any).
	Enum []string
	// EndpointKind is the endpoint kind an endpoint_ref must point at.
	EndpointKind string
}

// OpSpec describes one op of the catalog.
type OpSpec struct {
	Name string // namespace::name
	Kind Kind
	// Inline marks ops always cheaper than a pool hand-off (the original
	// option A, run_inline): they run on the goroutine that readied them.
	Inline bool
	// Expensive marks ops never inlined by the size threshold (option B).
	Expensive bool
	// Inputs is the number of inputs the op takes.
	Inputs int
	Params []ParamSpec
	// Output is the reference manifest's output pattern.
	Output string
	// Writes names the param holding the key the op writes ("" none).
	Writes string
	// NewRows marks ops whose output is new rows read for their input's
	// ids: none of the input's columns reaches the output (follow,
	// recommendation, media). A column only such ops consume is dead.
	NewRows bool
	// BareDefaults are defaults applied only when the plan names the op
	// by its bare name (prose form, e.g. follow without fanout).
	BareDefaults map[string]any
	build        builder
}

var traceParam = ParamSpec{Name: "trace", Type: PString, Nullable: true}

// DefaultFanout is the fanout of follow/recommendation/media written in
// bare form without one.
const DefaultFanout = 100

func catalog() []*OpSpec {
	endpoint := ParamSpec{Name: "endpoint", Type: PEndpointRef, Required: true, EndpointKind: "redis"}
	fanout := func(max int64) ParamSpec {
		return ParamSpec{Name: "fanout", Type: PInt, Required: true, Min: 1, Max: max}
	}
	bareFanout := map[string]any{"fanout": int64(DefaultFanout)}
	return []*OpSpec{
		{Name: "core::viewer", Kind: KindIO, Inputs: 0, Output: "VariableDense",
			Params: []ParamSpec{endpoint, traceParam}, build: buildViewer},
		{Name: "core::follow", Kind: KindIO, Inputs: 1, Output: "VariableDense",
			Params: []ParamSpec{endpoint, fanout(-1), traceParam}, BareDefaults: bareFanout, NewRows: true, build: buildList(listFollow)},
		{Name: "core::recommendation", Kind: KindIO, Inputs: 1, Output: "VariableDense",
			Params: []ParamSpec{endpoint, fanout(-1), traceParam}, BareDefaults: bareFanout, NewRows: true, build: buildList(listRecommendation)},
		{Name: "core::media", Kind: KindIO, Inputs: 1, Output: "VariableDense",
			Params: []ParamSpec{endpoint, fanout(10_000), traceParam}, BareDefaults: bareFanout, NewRows: true, build: buildList(listMedia)},
		{Name: "core::vm", Kind: KindCPU, Inputs: 1, Output: "UnaryPreserveView", Writes: "out_key",
			Params: []ParamSpec{{Name: "expr_id", Type: PExprID, Required: true}, {Name: "out_key", Type: PInt, Required: true}, traceParam},
			build:  buildVM},
		{Name: "core::filter", Kind: KindCPU, Inputs: 1, Output: "StableFilter",
			Params: []ParamSpec{{Name: "pred_id", Type: PPredID, Required: true}, traceParam}, build: buildFilter},
		{Name: "core::sort", Kind: KindCPU, Inputs: 1, Output: "PermutationOfInput",
			Params: []ParamSpec{{Name: "by", Type: PInt, Required: true}, {Name: "order", Type: PString, Default: "asc", Enum: []string{"asc", "desc"}}, traceParam},
			build:  buildSort},
		{Name: "core::take", Kind: KindCPU, Inline: true, Inputs: 1, Output: "PrefixOfInput",
			Params: []ParamSpec{{Name: "count", Type: PInt, Required: true, Min: 1, Max: math.MaxInt32}, traceParam}, build: buildTake},
		{Name: "core::concat", Kind: KindCPU, Inputs: 1, Output: "ConcatDense",
			Params: []ParamSpec{{Name: "rhs", Type: PNodeRef, Required: true}, traceParam}, build: buildConcat},
		{Name: "test::sleep", Kind: KindIO, Inputs: 1, Output: "UnaryPreserveView",
			Params: []ParamSpec{{Name: "duration_ms", Type: PInt, Required: true, Min: 0, Max: math.MaxInt32}, {Name: "fail_after_sleep", Type: PBool, Default: false}, traceParam},
			build:  buildSleep},
		{Name: "test::fixed_source", Kind: KindIO, Inline: true, Inputs: 0, Output: "VariableDense",
			Params: []ParamSpec{{Name: "row_count", Type: PInt, Default: int64(1), Min: 0, Max: 10_000_000}, traceParam}, build: buildFixedSource},
		{Name: "test::busy_cpu", Kind: KindCPU, Expensive: true, Inputs: 1, Output: "UnaryPreserveView",
			Params: []ParamSpec{{Name: "busy_wait_ms", Type: PInt, Required: true, Min: 0, Max: math.MaxInt32}, traceParam}, build: buildBusyCPU},
	}
}

// paramAliases are prose spellings of params, per op.
var paramAliases = map[string]map[string]string{
	"core::sort": {"key": "by"},
}

// bareAliases maps bare op names (and "recs") to catalog names.
var bareAliases = map[string]string{
	"viewer": "core::viewer", "follow": "core::follow", "recommendation": "core::recommendation",
	"recs": "core::recommendation", "media": "core::media", "vm": "core::vm", "filter": "core::filter",
	"sort": "core::sort", "take": "core::take", "concat": "core::concat", "sleep": "test::sleep",
	"fixed_source": "test::fixed_source", "busy_cpu": "test::busy_cpu",
}

// Catalog is the op catalog by name.
type Catalog map[string]*OpSpec

// NewCatalog returns the engine's ops.
func NewCatalog() Catalog {
	c := Catalog{}
	for _, op := range catalog() {
		c[op.Name] = op
	}
	return c
}

// Lookup resolves an op name, accepting bare names; bare reports whether
// the bare form was used.
func (c Catalog) Lookup(name string) (op *OpSpec, bare bool) {
	if op := c[name]; op != nil {
		return op, false
	}
	if full, ok := bareAliases[name]; ok {
		return c[full], true
	}
	return nil, false
}

// Names lists the op names in order.
func (c Catalog) Names() []string {
	out := make([]string, 0, len(c))
	for n := range c {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Manifest renders the catalog as the reference's registry/tasks.toml.
func (c Catalog) Manifest() string {
	var sb strings.Builder
	sb.WriteString("# Generated by: go run ./cmd/rankd --print-task-manifest > registry/tasks.toml\n")
	sb.WriteString("# The plan engine's op catalog (internal/plan/op.go); do not edit by hand.\n")
	sb.WriteString("schema_version = 1\n")
	for _, n := range c.Names() {
		op := c[n]
		fmt.Fprintf(&sb, "\n[[task]]\nop = %q\noutput_pattern = %q\n", op.Name, op.Output)
		if op.Writes != "" {
			fmt.Fprintf(&sb, "writes_effect = \"\"\"\n{\"kind\":\"FromParam\",\"param\":%q}\n\"\"\"\n", op.Writes)
		}
		for _, p := range op.Params {
			fmt.Fprintf(&sb, "\n  [[task.param]]\n  name = %q\n  type = %q\n", p.Name, p.Type)
			if p.EndpointKind != "" {
				fmt.Fprintf(&sb, "  endpoint_kind = %q\n", p.EndpointKind)
			}
			fmt.Fprintf(&sb, "  required = %t\n  nullable = %t\n", p.Required, p.Nullable)
			// Bounds and defaults: the DSL generates its checks from these
			// (dsl/scripts/gen-registry.mjs), so both sides agree.
			if p.Min != 0 || p.Max != 0 {
				fmt.Fprintf(&sb, "  min = %d\n", p.Min)
				if p.Max < 0 {
					sb.WriteString("  max_limit = \"max_fanout\" # validation.toml [limits]\n")
				} else {
					fmt.Fprintf(&sb, "  max = %d\n", p.Max)
				}
			}
			if p.Default != nil {
				fmt.Fprintf(&sb, "  default = %s\n", tomlValue(p.Default))
			}
			if d, ok := op.BareDefaults[p.Name]; ok {
				fmt.Fprintf(&sb, "  bare_default = %s # when the plan names the op bare (the short form)\n", tomlValue(d))
			}
			if p.Enum != nil {
				q := make([]string, len(p.Enum))
				for i, e := range p.Enum {
					q[i] = strconv.Quote(e)
				}
				fmt.Fprintf(&sb, "  enum = [%s]\n", strings.Join(q, ", "))
			}
		}
	}
	return sb.String()
}

// tomlValue renders a param default (int64, string or bool) as TOML.
func tomlValue(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	default:
		return fmt.Sprint(x)
	}
}

// parsedParams are a node's params after validation: int64, string, bool,
// or nil (null), by name.
type parsedParams map[string]any

func (p parsedParams) int(name string) int64 {
	v, _ := p[name].(int64)
	return v
}

func (p parsedParams) str(name string) string {
	v, _ := p[name].(string)
	return v
}

func (p parsedParams) bool(name string) bool {
	v, _ := p[name].(bool)
	return v
}

// checkParams validates raw params against op fail-closed: unknown keys
// rejected, required missing or null rejected, defaults applied, int
// accepting an integral float.
func checkParams(op *OpSpec, raw map[string]json.RawMessage, bare bool, maxFanout int64) (parsedParams, error) {
	specs := map[string]*ParamSpec{}
	for i := range op.Params {
		specs[op.Params[i].Name] = &op.Params[i]
	}
	norm := make(map[string]json.RawMessage, len(raw))
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		name := k
		if a, ok := paramAliases[op.Name][k]; ok {
			name = a
		}
		if specs[name] == nil {
			return nil, fmt.Errorf("unknown field '%s'", k)
		}
		if _, dup := norm[name]; dup {
			return nil, fmt.Errorf("field '%s' given twice (as '%s' and an alias)", name, k)
		}
		norm[name] = raw[k]
	}
	out := parsedParams{}
	for _, s := range op.Params {
		v, present := norm[s.Name]
		isNull := present && bytes.Equal(bytes.TrimSpace(v), []byte("null"))
		if !present || isNull {
			if d, ok := op.BareDefaults[s.Name]; ok && bare && !present {
				out[s.Name] = d
				continue
			}
			if s.Required {
				return nil, fmt.Errorf("missing required field '%s'", s.Name)
			}
			if isNull && !s.Nullable {
				return nil, fmt.Errorf("field '%s' must not be null", s.Name)
			}
			out[s.Name] = s.Default
			continue
		}
		val, err := decodeParam(&s, v)
		if err != nil {
			return nil, err
		}
		if s.Type == PInt {
			n := val.(int64)
			max := s.Max
			if max < 0 {
				max = maxFanout
			}
			if (s.Min != 0 || max != 0) && (n < s.Min || n > max) {
				return nil, fmt.Errorf("field '%s' must be between %d and %d, got %d", s.Name, s.Min, max, n)
			}
		}
		if s.Enum != nil {
			str := val.(string)
			ok := false
			for _, e := range s.Enum {
				ok = ok || e == str
			}
			if !ok {
				return nil, fmt.Errorf("field '%s' must be one of %s, got %q", s.Name, strings.Join(s.Enum, ", "), str)
			}
		}
		out[s.Name] = val
	}
	return out, nil
}

func decodeParam(s *ParamSpec, raw json.RawMessage) (any, error) {
	switch s.Type {
	case PInt:
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, fmt.Errorf("field '%s' must be an integer", s.Name)
		}
		return int64(f), nil
	case PBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("field '%s' must be a boolean", s.Name)
		}
		return b, nil
	default: // string, node_ref, expr_id, pred_id, endpoint_ref
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return nil, fmt.Errorf("field '%s' must be a string", s.Name)
		}
		return str, nil
	}
}
