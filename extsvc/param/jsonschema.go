package param

// JSONSchema renders s as a JSON Schema object (draft 2020-12 keywords):
// what the API serves for the type in GET /api/v1/task-types, for forms and
// agent tools to build their input from. Validate stays the rule; the
// rendering says the same in the common vocabulary.
func (s Schema) JSONSchema() map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range s.Fields {
		p := map[string]any{"type": string(f.Kind)}
		if f.Description != "" {
			p["description"] = f.Description
		}
		if len(f.Enum) > 0 {
			p["enum"] = f.Enum
		}
		if f.Min != 0 || f.Max != 0 {
			p["minimum"], p["maximum"] = f.Min, f.Max
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
		props[f.Name] = p
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
