// Package plan is taskflow's plan engine: it parses a plan — a
// DAG of IO nodes (Redis reads) and CPU nodes (vm, filter, sort, take,
// concat) — validates it against the registries, and runs it under a
// request deadline and per-node timeouts, starting each node the moment its
// inputs are ready. rankd, the HTTP endpoint and the "plan" task type are
// thin layers over Engine.
package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrPlan is wrapped by every error about a plan file's content.
var ErrPlan = errors.New("invalid plan")

// Plan is a parsed plan file (schema_version 1).
type Plan struct {
	SchemaVersion        int
	Name                 string
	Nodes                []*NodeSpec
	Outputs              []string
	ExprTable            map[string]json.RawMessage
	PredTable            map[string]json.RawMessage
	CapabilitiesRequired []string
	Extensions           map[string]json.RawMessage
}

// NodeSpec is one node as written in the plan.
type NodeSpec struct {
	ID         string
	Op         string
	Inputs     []string
	Params     map[string]json.RawMessage
	Extensions map[string]json.RawMessage
}

var topFields = map[string]bool{
	"schema_version": true, "plan_name": true, "nodes": true, "outputs": true,
	"expr_table": true, "pred_table": true, "capabilities_required": true,
	"extensions": true, "built_by": true,
}

var nodeFields = map[string]bool{"node_id": true, "op": true, "inputs": true, "params": true, "extensions": true}

// Parse decodes a plan file. source names the file in errors; JSON syntax
// errors carry the line and column.
func Parse(data []byte, source string) (*Plan, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrPlan, jsonErr(data, source, err))
	}
	if top == nil {
		return nil, fmt.Errorf("%w: %s: a plan must be a JSON object", ErrPlan, source)
	}
	if err := unknownField(top, topFields, "plan"); err != nil {
		return nil, err
	}
	p := &Plan{}
	if err := field(top, "schema_version", &p.SchemaVersion, true); err != nil {
		return nil, err
	}
	if p.SchemaVersion != 1 {
		return nil, fmt.Errorf("%w: unsupported schema_version %d (want 1)", ErrPlan, p.SchemaVersion)
	}
	if err := field(top, "plan_name", &p.Name, true); err != nil {
		return nil, err
	}
	var rawNodes []json.RawMessage
	if err := field(top, "nodes", &rawNodes, true); err != nil {
		return nil, err
	}
	if err := field(top, "outputs", &p.Outputs, true); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		into *map[string]json.RawMessage
	}{{"expr_table", &p.ExprTable}, {"pred_table", &p.PredTable}, {"extensions", &p.Extensions}} {
		if err := field(top, f.name, f.into, false); err != nil {
			return nil, err
		}
	}
	if err := field(top, "capabilities_required", &p.CapabilitiesRequired, false); err != nil {
		return nil, err
	}
	for i, raw := range rawNodes {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return nil, fmt.Errorf("%w: nodes[%d]: must be an object", ErrPlan, i)
		}
		where := fmt.Sprintf("nodes[%d]", i)
		if err := unknownField(m, nodeFields, where); err != nil {
			return nil, err
		}
		n := &NodeSpec{}
		if err := field(m, "node_id", &n.ID, true); err != nil {
			return nil, within(where, err)
		}
		if err := field(m, "op", &n.Op, true); err != nil {
			return nil, within("Node '"+n.ID+"'", err)
		}
		if err := field(m, "inputs", &n.Inputs, false); err != nil {
			return nil, within("Node '"+n.ID+"'", err)
		}
		if err := field(m, "params", &n.Params, false); err != nil {
			return nil, within("Node '"+n.ID+"'", err)
		}
		if err := field(m, "extensions", &n.Extensions, false); err != nil {
			return nil, within("Node '"+n.ID+"'", err)
		}
		if n.Params == nil {
			n.Params = map[string]json.RawMessage{}
		}
		p.Nodes = append(p.Nodes, n)
	}
	return p, nil
}

// within puts where before a field error's message, keeping one ErrPlan
// prefix: "invalid plan: Node 'v': field 'params' has the wrong type …".
func within(where string, err error) error {
	return fmt.Errorf("%w: %s: %s", ErrPlan, where, strings.TrimPrefix(err.Error(), ErrPlan.Error()+": "))
}

func unknownField(m map[string]json.RawMessage, allowed map[string]bool, where string) error {
	var extra []string
	for k := range m {
		if !allowed[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return fmt.Errorf("%w: %s: unknown field '%s'", ErrPlan, where, extra[0])
}

// field decodes m[name] into into; null counts as absent.
func field(m map[string]json.RawMessage, name string, into any, required bool) error {
	raw, ok := m[name]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if required {
			return fmt.Errorf("%w: missing required field '%s'", ErrPlan, name)
		}
		return nil
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%w: field '%s' has the wrong type (%s)", ErrPlan, name, typeName(into))
	}
	return nil
}

func typeName(v any) string {
	switch v.(type) {
	case *int:
		return "want an integer"
	case *string:
		return "want a string"
	case *[]string:
		return "want an array of strings"
	case *[]json.RawMessage:
		return "want an array"
	case *map[string]json.RawMessage:
		return "want an object"
	}
	return fmt.Sprintf("%T", v)
}

// jsonErr turns a JSON decoding error into "source:line:col: message".
func jsonErr(data []byte, source string, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return fmt.Errorf("%s: %w", source, err)
	}
	line, col := 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("%s:%d:%d: %w", source, line, col, err)
}
