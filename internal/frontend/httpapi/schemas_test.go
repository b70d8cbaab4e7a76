package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/task"
)

// TestViewTypesMatchTheirSchemas marshals a populated value of every
// component's Go type (every field set, so no omitempty key is left out)
// and checks the JSON against the component's schema: every key is a
// property of it (so a key the type writes and the schema lacks — a field
// added to a MarshalJSON's wire form without its WireForm, say — fails
// here), every required key is there, every value has its property's
// JSON type, and every property was written by some sample (no property
// the type never writes).
func TestViewTypesMatchTheirSchemas(t *testing.T) {
	schemas := apiSchemas()
	for _, c := range components {
		t.Run(c.name, func(t *testing.T) {
			samples := schemaSamples[c.typ]
			if samples == nil {
				samples = []any{populated(c.typ).Interface()}
			}
			ck := newShapeCheck(schemas)
			for _, v := range samples {
				raw, err := json.Marshal(v)
				require.NoError(t, err)
				var doc any
				require.NoError(t, json.Unmarshal(raw, &doc))
				require.NoError(t, ck.check(schemas[c.name].(map[string]any), doc, c.name), "%s", raw)
			}
			require.NoError(t, ck.unwritten())
		})
	}
}

// schemaSamples are the values checked for the types a populated value
// does not cover: a list of either form of task, a DLQ snapshot with its
// fields, both forms of a plan summary.
var schemaSamples = map[reflect.Type][]any{
	reflect.TypeFor[service.TaskList](): {service.TaskList{Tasks: []any{
		populated(reflect.TypeFor[service.TaskView]()).Interface(),
		populated(reflect.TypeFor[service.TaskSummary]()).Interface(),
	}, Total: 2, Page: 1, PageSize: 25, Partial: true}},
	reflect.TypeFor[service.Page[service.DLQItem]](): {service.Page[service.DLQItem]{Items: []service.DLQItem{{
		TaskView: populated(reflect.TypeFor[service.TaskView]()).Interface().(service.TaskView),
		DLQ: map[string]string{"task_id": "t1", "task_type": "sleep", "error_type": "InvalidInput", "last_error": "bad input",
			"retry_count": "2", "from_state": "FAILED", "dlq_at": "1700000000000"},
	}}, Total: 1, Offset: 1, Limit: 1}},
	reflect.TypeFor[service.PlanInfo](): {
		service.PlanInfo{Name: "complex_dag", Nodes: 7, Outputs: 1},
		service.PlanInfo{Name: "broken", Error: "does not compile"},
	},
	reflect.TypeFor[service.PlanList](): {service.PlanList{Plans: []service.PlanInfo{{Name: "a", Nodes: 1, Outputs: 1}, {Name: "b", Error: "x"}}}},
}

// TestSchemaCheckCatchesAWireDrift: a type whose MarshalJSON writes a key
// its WireForm does not have fails the check above.
func TestSchemaCheckCatchesAWireDrift(t *testing.T) {
	cs := []component{response[driftView]("Drift", "")}
	schemas, err := buildSchemas(cs)
	require.NoError(t, err)
	raw, err := json.Marshal(populated(reflect.TypeFor[driftView]()).Interface())
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(raw, &doc))
	err = newShapeCheck(schemas).check(ref("Drift"), doc, "Drift")
	require.ErrorContains(t, err, "Drift: key added is not in the schema")
}

type driftView struct{ Name string }

type driftWire struct {
	Name string `json:"name"`
}

func (d driftView) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"name": d.Name, "added": 1})
}
func (driftView) WireForm() any { return driftWire{} }

// TestSchemaGeneration pins the reflector's rules.
func TestSchemaGeneration(t *testing.T) {
	type inner struct {
		Shadowed string `json:"name"`
		Deep     int    `json:"deep"`
	}
	type out struct {
		inner
		Name      string            `json:"name" jsonschema:"the outer one"`
		Opt       string            `json:"opt,omitempty"`
		Zero      time.Time         `json:"zero,omitzero"`
		Ptr       *int              `json:"ptr"`
		PtrOpt    *int              `json:"ptr_opt,omitempty"`
		Raw       json.RawMessage   `json:"raw" openapi:"type=object"`
		States    []task.State      `json:"states"`
		Kinds     map[string]string `json:"kinds" openapi:"enum=a|b"`
		Samples   []*float64        `json:"samples"`
		Task      *service.TaskView `json:"task"`
		Skipped   string            `json:"-"`
		unwritten string
	}
	type req struct {
		Must *string  `json:"must" openapi:"required;example=hi"`
		May  *float64 `json:"may,omitempty" openapi:"minimum=0"`
		IDs  []string `json:"ids" openapi:"maxItems=3;pattern=^[a-z]+$"`
	}
	g := &schemaGen{names: map[reflect.Type]string{reflect.TypeFor[service.TaskView](): "Task"}, types: typeSchemas}
	s, err := g.component(reflect.TypeFor[out](), responseBody)
	require.NoError(t, err)
	props := s["properties"].(map[string]any)
	require.Equal(t, []string{"deep", "kinds", "name", "ptr", "raw", "samples", "states", "task"}, s["required"])
	require.ElementsMatch(t, []string{"deep", "kinds", "name", "opt", "ptr", "ptr_opt", "raw", "samples", "states", "task", "zero"}, keys(props))
	require.Equal(t, map[string]any{"type": "string", "description": "the outer one"}, props["name"], "the shallower field hides the embedded one")
	require.Equal(t, map[string]any{"type": "string", "format": "date-time"}, props["zero"])
	require.Equal(t, map[string]any{"type": "integer", "nullable": true}, props["ptr"], "a pointer always written may be null")
	require.Equal(t, map[string]any{"type": "integer"}, props["ptr_opt"], "an omitted pointer is absent, not null")
	require.Equal(t, map[string]any{"type": "object", "additionalProperties": true, "nullable": true}, props["raw"])
	require.Equal(t, enumOf(task.States...), props["states"].(map[string]any)["items"])
	require.Equal(t, map[string]any{"type": "string", "enum": []string{"a", "b"}}, props["kinds"].(map[string]any)["additionalProperties"], "an enum of a map is its values'")
	require.Equal(t, map[string]any{"type": "number", "nullable": true}, props["samples"].(map[string]any)["items"])
	require.Equal(t, map[string]any{"allOf": []any{ref("Task")}, "nullable": true}, props["task"], "a nullable $ref is wrapped")

	s, err = g.component(reflect.TypeFor[req](), requestBody)
	require.NoError(t, err)
	props = s["properties"].(map[string]any)
	require.Equal(t, []string{"must"}, s["required"], "a request's fields are optional unless tagged required")
	require.Equal(t, map[string]any{"type": "string", "example": "hi"}, props["must"])
	require.Equal(t, map[string]any{"type": "number", "minimum": 0.0}, props["may"])
	require.Equal(t, map[string]any{"type": "array", "maxItems": 3.0, "items": map[string]any{"type": "string", "pattern": "^[a-z]+$"}}, props["ids"])

	// an embedded component is an allOf, not a copy of its fields
	type withBase struct {
		inner
		Extra string `json:"extra"`
	}
	type hiding struct {
		inner
		Deep string `json:"deep"`
	}
	g.names[reflect.TypeFor[inner]()] = "Inner"
	s, err = g.component(reflect.TypeFor[withBase](), responseBody)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"allOf": []any{ref("Inner"), map[string]any{"type": "object", "required": []string{"extra"},
		"properties": map[string]any{"extra": map[string]any{"type": "string"}}}}}, s)
	_, err = g.component(reflect.TypeFor[hiding](), responseBody)
	require.ErrorContains(t, err, "deep hides the field of embedded component Inner")

	for _, bad := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[struct {
			A string `json:"a" openapi:"maxitems=3"`
		}](), `unknown keyword "maxitems=3"`},
		{reflect.TypeFor[struct {
			A []any `json:"a" openapi:"ref=Nope"`
		}](), "ref=Nope names no component"},
		{reflect.TypeFor[struct {
			A ownMarshal `json:"a"`
		}](), "has its own MarshalJSON: give it a WireForm method"},
		{reflect.TypeFor[struct {
			A map[int]string `json:"a"`
		}](), "map keys must be strings"},
		{reflect.TypeFor[loop](), "contains itself"},
	} {
		_, err := g.component(bad.typ, responseBody)
		require.ErrorContains(t, err, bad.want)
	}
}

type ownMarshal struct{}

type loop struct {
	Next *loop `json:"next,omitempty"`
}

func (ownMarshal) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

// TestSchemaDescriptionsSuitJSONSchemaGo: the jsonschema tags are also
// read by github.com/google/jsonschema-go, which refuses a description
// beginning "WORD=".
func TestSchemaDescriptionsSuitJSONSchemaGo(t *testing.T) {
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			if d, ok := x["description"].(string); ok {
				first, _, _ := strings.Cut(d, " ")
				require.NotContains(t, first, "=", "%s: %q", at, d)
				require.NotEmpty(t, d, at)
			}
			for k, c := range x {
				walk(c, at+"."+k)
			}
		case []any:
			for _, c := range x {
				walk(c, at)
			}
		}
	}
	walk(apiSchemas(), "")
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// populated returns a value of t with every field set (strings "x",
// numbers 1, one element in each slice and map, times a fixed instant).
func populated(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	fill(v, 0)
	return v
}

func fill(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
		return
	case v.Type() == rawJSONType:
		v.Set(reflect.ValueOf(json.RawMessage(`{"k":1}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		if v.NumMethod() == 0 {
			v.Set(reflect.ValueOf("x"))
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}

// shapeCheck checks decoded JSON against the component schemas: keys,
// required keys, JSON types (not enums or formats: the samples' values
// are made up). It records the properties of each inline object schema
// and the keys written to it, for unwritten.
type shapeCheck struct {
	schemas  map[string]any
	declared map[string][]string
	written  map[string]map[string]bool
}

func newShapeCheck(schemas map[string]any) *shapeCheck {
	return &shapeCheck{schemas: schemas, declared: map[string][]string{}, written: map[string]map[string]bool{}}
}

func (c *shapeCheck) check(s map[string]any, v any, at string) error {
	if r, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(r, "#/components/schemas/")
		target, ok := c.schemas[name].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: dangling %s", at, r)
		}
		// a component met inside another is checked on its own (its
		// unwritten properties are its own test's business)
		return newShapeCheck(c.schemas).check(target, v, at)
	}
	if v == nil {
		if s["nullable"] == true || len(s) == 0 {
			return nil
		}
		return fmt.Errorf("%s: null, and the schema does not say nullable", at)
	}
	if all, ok := s["allOf"].([]any); ok {
		merged, err := mergeAllOf(c.schemas, all)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		return c.check(merged, v, at)
	}
	if alts, ok := s["oneOf"].([]any); ok {
		var fits []int
		var errs []string
		for i, a := range alts {
			if err := c.check(a.(map[string]any), v, at); err != nil {
				errs = append(errs, err.Error())
			} else {
				fits = append(fits, i)
			}
		}
		if len(fits) != 1 {
			return fmt.Errorf("%s: fits %d of oneOf, not 1 (%s)", at, len(fits), strings.Join(errs, "; "))
		}
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an object", at, v)
		}
		req, _ := s["required"].([]string)
		for _, k := range req {
			if _, ok := m[k]; !ok {
				return fmt.Errorf("%s: required key %s missing", at, k)
			}
		}
		props, hasProps := s["properties"].(map[string]any)
		if hasProps {
			c.declared[at] = keys(props)
			if c.written[at] == nil {
				c.written[at] = map[string]bool{}
			}
		}
		for k, x := range m {
			sub, ok := props[k].(map[string]any)
			if !ok {
				if extra, ok := s["additionalProperties"].(map[string]any); ok {
					sub = extra
				} else if s["additionalProperties"] == true {
					continue
				} else {
					return fmt.Errorf("%s: key %s is not in the schema", at, k)
				}
			} else {
				c.written[at][k] = true
			}
			if err := c.check(sub, x, at+"."+k); err != nil {
				return err
			}
		}
	case "array":
		xs, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an array", at, v)
		}
		for _, x := range xs {
			if err := c.check(s["items"].(map[string]any), x, at+"[]"); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %T, want a string", at, v)
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: %v, want an integer", at, v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: %T, want a number", at, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %T, want a boolean", at, v)
		}
	}
	return nil
}

// mergeAllOf is the object schema with the properties and required keys
// of every schema of all (an allOf of objects: each may name its own keys).
func mergeAllOf(schemas map[string]any, all []any) (map[string]any, error) {
	props, required := map[string]any{}, []string{}
	for _, a := range all {
		m := a.(map[string]any)
		if r, ok := m["$ref"].(string); ok {
			m, _ = schemas[strings.TrimPrefix(r, "#/components/schemas/")].(map[string]any)
		}
		if m["type"] != "object" {
			return nil, fmt.Errorf("allOf of a %v", m["type"])
		}
		for k, p := range m["properties"].(map[string]any) {
			props[k] = p
		}
		req, _ := m["required"].([]string)
		required = append(required, req...)
	}
	return map[string]any{"type": "object", "properties": props, "required": required}, nil
}

// unwritten reports the properties no checked value wrote.
func (c *shapeCheck) unwritten() error {
	var missing []string
	for at, props := range c.declared {
		for _, p := range props {
			if !c.written[at][p] {
				missing = append(missing, at+"."+p)
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("properties no sample wrote (is the schema the JSON's?): %s", strings.Join(missing, ", "))
	}
	return nil
}
