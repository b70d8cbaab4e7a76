package param

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// FoldCaseKeyword marks a string enum compared ignoring case in the JSON
// Schema that JSONSchema renders and FromJSONSchema reads back (an
// annotation: other validators ignore it and compare exactly).
const FoldCaseKeyword = "x-fold-case"

// FromJSONSchema reads the params schema a service published as JSON
// Schema into a Schema that Validate can check. It understands an object
// schema whose properties each have a type (string, integer, number,
// boolean, object, array), and, per property: enum (strings), minimum,
// maximum, maxLength, maxItems, items.type, description and FoldCaseKeyword;
// at the top: required and additionalProperties. Other keywords (nested
// properties, patterns, formats...) are left to the service that declared
// them: they are served to clients as published, and not checked here.
//
// A schema FromJSONSchema cannot read is an error naming where.
func FromJSONSchema(raw json.RawMessage) (Schema, error) {
	var top struct {
		Type                 any                        `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *json.RawMessage           `json:"additionalProperties"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return Schema{}, fmt.Errorf("params schema: %v", err)
	}
	if top.Type != nil && top.Type != "object" {
		return Schema{}, fmt.Errorf("params schema: type %v: params are a JSON object", top.Type)
	}
	s := Schema{AllowUnknown: true}
	if top.AdditionalProperties != nil {
		var b bool
		// a schema object (not a boolean) accepts unknown names too
		if json.Unmarshal(*top.AdditionalProperties, &b) == nil {
			s.AllowUnknown = b
		}
	}
	required := map[string]bool{}
	for _, n := range top.Required {
		required[n] = true
	}
	// properties in the order written: Validate reports the first bad
	// field in that order, as the declaring service's own check does
	names := propertyOrder(raw, top.Properties)
	for _, n := range names {
		var p struct {
			Type        any      `json:"type"`
			Enum        []any    `json:"enum"`
			Minimum     *float64 `json:"minimum"`
			Maximum     *float64 `json:"maximum"`
			MaxLength   *int     `json:"maxLength"`
			MaxItems    *int     `json:"maxItems"`
			Description string   `json:"description"`
			FoldCase    bool     `json:"x-fold-case"`
			Items       *struct {
				Type any `json:"type"`
			} `json:"items"`
		}
		if err := json.Unmarshal(top.Properties[n], &p); err != nil {
			return Schema{}, fmt.Errorf("params schema: properties.%s: %v", n, err)
		}
		f := Field{Name: n, Required: required[n], Description: p.Description, FoldCase: p.FoldCase}
		var err error
		if f.Kind, err = kindFrom(p.Type); err != nil {
			return Schema{}, fmt.Errorf("params schema: properties.%s.type: %v", n, err)
		}
		for _, e := range p.Enum {
			v, ok := e.(string)
			if !ok {
				return Schema{}, fmt.Errorf("params schema: properties.%s.enum: only strings are understood (got %v)", n, e)
			}
			f.Enum = append(f.Enum, v)
		}
		if p.Minimum != nil || p.Maximum != nil {
			f.Min, f.Max = math.Inf(-1), math.Inf(1)
			if p.Minimum != nil {
				f.Min = *p.Minimum
			}
			if p.Maximum != nil {
				f.Max = *p.Maximum
			}
		}
		for _, l := range []*int{p.MaxLength, p.MaxItems} {
			if l != nil {
				if *l < 0 {
					return Schema{}, fmt.Errorf("params schema: properties.%s: a negative length bound", n)
				}
				f.MaxLen = *l
			}
		}
		if p.Items != nil {
			if f.Items, err = kindFrom(p.Items.Type); err != nil {
				return Schema{}, fmt.Errorf("params schema: properties.%s.items.type: %v", n, err)
			}
		}
		s.Fields = append(s.Fields, f)
	}
	for _, n := range top.Required {
		if _, ok := top.Properties[n]; !ok && !s.has(n) {
			s.Fields = append(s.Fields, Field{Name: n, Required: true})
		}
	}
	return s, nil
}

// kindFrom reads a property's type; absent is any kind.
func kindFrom(t any) (Kind, error) {
	if t == nil {
		return "", nil
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("%v: one type name is understood", t)
	}
	switch k := Kind(s); k {
	case String, Integer, Number, Boolean, Object, Array:
		return k, nil
	}
	return "", fmt.Errorf("%q is not a JSON type", s)
}

func (s Schema) has(name string) bool {
	for _, f := range s.Fields {
		if f.Name == name {
			return true
		}
	}
	return false
}

// propertyOrder lists the names of props in the order raw's "properties"
// object writes them (a map forgets it), falling back to sorted order.
func propertyOrder(raw json.RawMessage, props map[string]json.RawMessage) []string {
	names := make([]string, 0, len(props))
	var top map[string]orderedKeys
	if json.Unmarshal(raw, &top) == nil && len(top["properties"]) == len(props) {
		return append(names, top["properties"]...)
	}
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// orderedKeys decodes a JSON object into its keys in order (any other
// value into nil).
type orderedKeys []string

func (o *orderedKeys) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
		if !seen[k] {
			seen[k] = true
			*o = append(*o, k)
		}
	}
	return nil
}
