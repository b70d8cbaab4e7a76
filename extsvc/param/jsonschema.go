package param

import (
	"bytes"
	"encoding/json"
	"math"
)

// JSONSchema renders s as a JSON Schema object (draft 2020-12 keywords):
// what the API serves for the type in GET /api/v1/task-types, for forms and
// agent tools to build their input from. Validate stays the rule; the
// rendering says the same in the common vocabulary.
func (s Schema) JSONSchema() map[string]any {
	props := Properties{}
	var required []string
	for _, f := range s.Fields {
		p := map[string]any{"type": string(f.Kind)}
		if f.Description != "" {
			p["description"] = f.Description
		}
		if len(f.Enum) > 0 {
			p["enum"] = f.Enum
			if f.FoldCase {
				p[FoldCaseKeyword] = true
			}
		}
		if f.Min != 0 || f.Max != 0 {
			if !math.IsInf(f.Min, -1) {
				p["minimum"] = f.Min
			}
			if !math.IsInf(f.Max, 1) {
				p["maximum"] = f.Max
			}
		}
		if f.MaxLen > 0 {
			switch f.Kind {
			case String:
				p["maxLength"] = f.MaxLen
			case Array:
				p["maxItems"] = f.MaxLen
			}
		}
		if f.Kind == Array && f.Items != "" {
			p["items"] = map[string]any{"type": string(f.Items)}
		}
		props = append(props, Property{Name: f.Name, Schema: p})
		if f.Required {
			required = append(required, f.Name)
		}
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": s.AllowUnknown}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

// Property is one entry of a rendered schema's properties.
type Property struct {
	Name   string
	Schema map[string]any
}

// Properties are a rendered schema's properties in the declared order:
// they marshal as a JSON object whose keys keep that order, so a form or
// a reader sees the fields as the schema lists them.
type Properties []Property

// MarshalJSON writes the properties as one JSON object, in order.
func (ps Properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(p.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(p.Schema)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
