package httpapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The component schemas of /openapi.json are derived from the Go types the
// handlers write and decode (schemas.go lists them), by reflection over
// their JSON fields, as encoding/json sees them:
//
//   - a field's JSON name and omitempty/omitzero come from its json tag;
//     embedded structs are flattened, and a shallower field hides a deeper
//     one of the same name (encoding/json's rule);
//   - in a response, a field without omitempty/omitzero is required (the
//     key is always written), and such a pointer or raw JSON field is
//     nullable; in a request, a field is required only when its openapi
//     tag says so, and a pointer only means the field is optional;
//   - a type that is a component is a $ref to it wherever it appears;
//   - named types have fixed schemas (typeSchemas: times, raw JSON, the
//     task states and priorities, ...);
//   - a type with its own MarshalJSON names, with WireForm, the struct its
//     JSON has the shape of, and that struct is reflected (a MarshalJSON
//     without WireForm is an error: the schema would not be the JSON's).
//
// A field's description is its `jsonschema:"..."` tag (the convention
// github.com/google/jsonschema-go reads too); its other keywords are its
// `openapi:"..."` tag, ";"-separated:
//
//	required           a request: the client must send it; a response: the key is
//	                   written though omitempty (its producer never leaves it empty)
//	nullable           the value may be null
//	enum=a|b|c         the allowed values
//	type=t|u           the JSON type(s): several make a oneOf; object adds additionalProperties: true
//	ref=A|B            a $ref to component A (several: a oneOf of refs)
//	format=f, pattern=p, minimum=n, maxLength=n
//	maxItems=n         (arrays)
//	example=v          JSON, or else a string
//
// Of a slice or map field, enum, type, ref, format, pattern, minimum and
// maxLength describe the element (the innermost one): a list of states is
// an array whose items have the states' enum.

// wireFormer is a type with its own MarshalJSON: WireForm returns a value
// of the struct type its JSON has the shape of.
type wireFormer interface {
	WireForm() any
}

var (
	wireFormerType = reflect.TypeFor[wireFormer]()
	marshalerType  = reflect.TypeFor[json.Marshaler]()
	rawJSONType    = reflect.TypeFor[json.RawMessage]()
)

// schemaMode says whether a schema is of a body the API writes or reads.
type schemaMode int

const (
	responseBody schemaMode = iota
	requestBody
)

// schemaGen builds schemas of Go types.
type schemaGen struct {
	// names are the component types, each referenced by its name.
	names map[reflect.Type]string
	// types are fixed schemas of named types (cloned at each use).
	types map[reflect.Type]map[string]any
	// building are the structs being reflected (a recursive type that is
	// not a component would never end).
	building []reflect.Type
}

// component returns the schema of component type t itself (not a $ref).
func (g *schemaGen) component(t reflect.Type, mode schemaMode) (map[string]any, error) {
	return g.schema(t, mode, false)
}

// schemaOf returns the schema of values of t: a component type is a $ref
// to its component.
func (g *schemaGen) schemaOf(t reflect.Type, mode schemaMode) (map[string]any, error) {
	return g.schema(t, mode, true)
}

func (g *schemaGen) schema(t reflect.Type, mode schemaMode, asRef bool) (map[string]any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name, ok := g.names[t]; ok && asRef {
		return ref(name), nil
	}
	if s, ok := g.types[t]; ok {
		return cloneSchema(s), nil
	}
	if t.Implements(wireFormerType) {
		w := reflect.TypeOf(reflect.Zero(t).Interface().(wireFormer).WireForm())
		if w == nil || w == t {
			return nil, fmt.Errorf("%s: WireForm must return a value of another type", t)
		}
		return g.schema(w, mode, asRef)
	}
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
		return nil, fmt.Errorf("%s has its own MarshalJSON: give it a WireForm method (or a fixed schema)", t)
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Interface:
		return map[string]any{}, nil // any JSON value
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}, nil // encoding/json writes base64
		}
		items, err := g.element(t.Elem(), mode)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if k := t.Key().Kind(); k != reflect.String {
			return nil, fmt.Errorf("%s: map keys must be strings", t)
		}
		values, err := g.element(t.Elem(), mode)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": values}, nil
	case reflect.Struct:
		if slices.Contains(g.building, t) {
			return nil, fmt.Errorf("%s contains itself: make it a component (a $ref)", t)
		}
		g.building = append(g.building, t)
		defer func() { g.building = g.building[:len(g.building)-1] }()
		return g.object(t, mode)
	}
	return nil, fmt.Errorf("%s: no JSON schema for kind %s", t, t.Kind())
}

// element is the schema of a slice's items or a map's values: a pointer
// element is nullable (a nil one is written null).
func (g *schemaGen) element(t reflect.Type, mode schemaMode) (map[string]any, error) {
	s, err := g.schemaOf(t, mode)
	if err != nil {
		return nil, err
	}
	if t.Kind() == reflect.Pointer {
		s = withNullable(s)
	}
	return s, nil
}

func (g *schemaGen) object(t reflect.Type, mode schemaMode) (map[string]any, error) {
	props := map[string]any{}
	var required []string
	fields, bases := jsonFields(t, func(et reflect.Type) bool { return et != t && g.names[et] != "" })
	for _, b := range bases {
		bf, _ := jsonFields(b, func(reflect.Type) bool { return false })
		for _, f := range fields {
			for _, x := range bf {
				if x.name == f.name {
					return nil, fmt.Errorf("%s: %s hides the field of embedded component %s", t, f.name, g.names[b])
				}
			}
		}
	}
	for _, f := range fields {
		opts, err := parseOpenAPITag(f.sf.Tag.Get("openapi"))
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t, f.sf.Name, err)
		}
		ps, err := g.schemaOf(f.sf.Type, mode)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t, f.sf.Name, err)
		}
		if ps, err = opts.apply(ps, f.sf.Type, g); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t, f.sf.Name, err)
		}
		nullable := opts.nullable
		switch mode {
		case responseBody:
			if !f.omit || opts.required {
				required = append(required, f.name)
			}
			if !f.omit { // always written: a nil pointer or raw JSON as null
				nullable = nullable || f.sf.Type.Kind() == reflect.Pointer || f.sf.Type == rawJSONType
			}
		case requestBody:
			if opts.required {
				required = append(required, f.name)
			}
		}
		if nullable {
			ps = withNullable(ps)
		}
		if d, ok := f.sf.Tag.Lookup("jsonschema"); ok {
			ps = withKeyword(ps, "description", d)
		}
		if opts.example != nil {
			ps = withKeyword(ps, "example", opts.example)
		}
		props[f.name] = ps
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		slices.Sort(required)
		s["required"] = required
	}
	if len(bases) > 0 { // the embedded components' fields, then its own
		var all []any
		for _, b := range bases {
			all = append(all, ref(g.names[b]))
		}
		return map[string]any{"allOf": append(all, s)}, nil
	}
	return s, nil
}

// withNullable marks s as possibly null; a $ref (whose siblings OpenAPI
// 3.0 ignores) is wrapped in an allOf.
func withNullable(s map[string]any) map[string]any { return withKeyword(s, "nullable", true) }

func withKeyword(s map[string]any, k string, v any) map[string]any {
	if _, isRef := s["$ref"]; isRef {
		s = map[string]any{"allOf": []any{s}}
	}
	s[k] = v
	return s
}

// jsonField is a field as encoding/json writes it.
type jsonField struct {
	name   string
	sf     reflect.StructField
	index  []int
	tagged bool
	omit   bool // omitempty or omitzero
}

// jsonFields lists the fields encoding/json writes for struct t, in field
// order: embedded structs without a JSON name are flattened; of the fields
// of one name, the shallowest wins, then the one with a json tag; a tie
// hides them all. An embedded struct for which isBase is true is not
// flattened but listed in bases.
func jsonFields(t reflect.Type, isBase func(reflect.Type) bool) (fields []jsonField, bases []reflect.Type) {
	var all []jsonField
	var walk func(t reflect.Type, index []int, seen []reflect.Type)
	walk = func(t reflect.Type, index []int, seen []reflect.Type) {
		if slices.Contains(seen, t) {
			return
		}
		seen = append(seen, t)
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(slices.Clone(index), i)
			if sf.Anonymous {
				et := sf.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if name == "" && et.Kind() == reflect.Struct {
					if isBase(et) {
						bases = append(bases, et)
					} else {
						walk(et, idx, seen)
					}
					continue
				}
				if !sf.IsExported() {
					continue
				}
			} else if !sf.IsExported() {
				continue
			}
			f := jsonField{name: name, sf: sf, index: idx, tagged: name != ""}
			if name == "" {
				f.name = sf.Name
			}
			for _, o := range strings.Split(opts, ",") {
				f.omit = f.omit || o == "omitempty" || o == "omitzero"
			}
			all = append(all, f)
		}
	}
	walk(t, nil, nil)
	byName := map[string][]jsonField{}
	for _, f := range all {
		byName[f.name] = append(byName[f.name], f)
	}
	var out []jsonField
	for _, fs := range byName {
		slices.SortStableFunc(fs, func(a, b jsonField) int {
			if d := len(a.index) - len(b.index); d != 0 {
				return d
			}
			if a.tagged != b.tagged {
				if a.tagged {
					return -1
				}
				return 1
			}
			return 0
		})
		if len(fs) > 1 && len(fs[1].index) == len(fs[0].index) && fs[1].tagged == fs[0].tagged {
			continue // ambiguous: encoding/json writes neither
		}
		out = append(out, fs[0])
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out, bases
}

// openAPITag is a field's `openapi:"..."` tag.
type openAPITag struct {
	required, nullable bool
	element            map[string]any // keywords of the (innermost) element
	container          map[string]any // keywords of the array itself
	types, refs        []string
	example            any
	rawExample         string
}

func parseOpenAPITag(tag string) (openAPITag, error) {
	o := openAPITag{element: map[string]any{}, container: map[string]any{}}
	if tag == "" {
		return o, nil
	}
	for _, part := range strings.Split(tag, ";") {
		k, v, hasValue := strings.Cut(strings.TrimSpace(part), "=")
		num := func() (float64, error) {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("openapi tag: %s=%q is not a number", k, v)
			}
			return n, nil
		}
		switch {
		case k == "required" && !hasValue:
			o.required = true
		case k == "nullable" && !hasValue:
			o.nullable = true
		case k == "enum" && hasValue:
			o.element["enum"] = strings.Split(v, "|")
		case k == "type" && hasValue:
			o.types = strings.Split(v, "|")
		case k == "ref" && hasValue:
			o.refs = strings.Split(v, "|")
		case (k == "format" || k == "pattern") && hasValue:
			o.element[k] = v
		case (k == "minimum" || k == "maxLength") && hasValue:
			n, err := num()
			if err != nil {
				return o, err
			}
			o.element[k] = n
		case k == "maxItems" && hasValue:
			n, err := num()
			if err != nil {
				return o, err
			}
			o.container[k] = n
		case k == "example" && hasValue:
			o.rawExample = v
		default:
			return o, fmt.Errorf("openapi tag: unknown keyword %q", part)
		}
	}
	return o, nil
}

// apply puts the tag's keywords on s, the schema of a field of type t.
func (o *openAPITag) apply(s map[string]any, t reflect.Type, g *schemaGen) (map[string]any, error) {
	for k, v := range o.container {
		if s["type"] != "array" {
			return nil, fmt.Errorf("openapi tag: %s on a %s", k, t)
		}
		s[k] = v
	}
	// the innermost element of a slice or map (not of a type with a fixed
	// schema, as raw JSON, nor a component), and its parent schema's key
	leaf, parent, key := s, map[string]any(nil), ""
	for et := deref(t); ; et = deref(et.Elem()) {
		_, fixed := g.types[et]
		list := (et.Kind() == reflect.Slice || et.Kind() == reflect.Array) && et.Elem().Kind() != reflect.Uint8
		if fixed || g.names[et] != "" || !(list || et.Kind() == reflect.Map) {
			break
		}
		parent, key = leaf, "items"
		if et.Kind() == reflect.Map {
			key = "additionalProperties"
		}
		leaf = parent[key].(map[string]any)
		if leaf["$ref"] != nil || leaf["allOf"] != nil {
			break
		}
	}
	set := func(n map[string]any) {
		if parent == nil {
			s = n
		} else {
			parent[key] = n
		}
		leaf = n
	}
	switch {
	case len(o.refs) == 1:
		set(ref(o.refs[0]))
	case len(o.refs) > 1:
		var alts []any
		for _, r := range o.refs {
			alts = append(alts, ref(r))
		}
		set(map[string]any{"oneOf": alts})
	}
	for _, r := range o.refs {
		if !slices.Contains(slices.Collect(maps.Values(g.names)), r) {
			return nil, fmt.Errorf("openapi tag: ref=%s names no component", r)
		}
	}
	if len(o.element) > 0 || len(o.types) > 0 {
		if _, isRef := leaf["$ref"]; isRef || leaf["oneOf"] != nil {
			return nil, fmt.Errorf("openapi tag: keywords on a $ref (%s)", t)
		}
	}
	switch {
	case len(o.types) == 1:
		leaf["type"] = o.types[0]
		if o.types[0] == "object" {
			leaf["additionalProperties"] = true
		}
	case len(o.types) > 1:
		var alts []any
		for _, typ := range o.types {
			alt := map[string]any{"type": typ}
			if m, ok := o.element["minimum"]; ok && (typ == "integer" || typ == "number") {
				alt["minimum"] = m
			}
			alts = append(alts, alt)
		}
		delete(leaf, "type")
		leaf["oneOf"] = alts
	}
	for k, v := range o.element {
		if k == "minimum" && len(o.types) > 1 {
			continue
		}
		leaf[k] = v
	}
	if o.rawExample != "" {
		var v any
		if leaf["type"] == "string" || json.Unmarshal([]byte(o.rawExample), &v) != nil {
			v = o.rawExample
		}
		o.example = v
	}
	return s, nil
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// cloneSchema copies s deeply enough that a use of it may be changed.
func cloneSchema(s map[string]any) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		switch x := v.(type) {
		case map[string]any:
			out[k] = cloneSchema(x)
		case []string:
			out[k] = slices.Clone(x)
		case []any:
			out[k] = slices.Clone(x)
		default:
			out[k] = v
		}
	}
	return out
}

// dateTime is the schema of a time.Time (RFC 3339).
var dateTime = map[string]any{"type": "string", "format": "date-time"}

// enumOf is the schema of a named string type with values vs.
func enumOf[T ~string](vs ...T) map[string]any {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return map[string]any{"type": "string", "enum": out}
}
