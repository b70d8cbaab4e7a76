package registry

import (
	"encoding/json"
	"fmt"
	"sort"
)

// schema is the small subset of JSON Schema the capability payloads use:
// type, properties, required and additionalProperties (bool).
type schema struct {
	Type                 string             `json:"type"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties *bool              `json:"additionalProperties"`
}

func parseSchema(s string) (*schema, error) {
	var sc schema
	if err := json.Unmarshal([]byte(s), &sc); err != nil {
		return nil, err
	}
	return &sc, nil
}

func (s *schema) check(v any, path string) error {
	switch s.Type {
	case "":
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s must be an object", path)
		}
		for _, r := range s.Required {
			if _, ok := obj[r]; !ok {
				return fmt.Errorf("%s: missing required property %q", path, r)
			}
		}
		names := make([]string, 0, len(obj))
		for k := range obj {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			sub, known := s.Properties[k]
			if !known {
				if s.AdditionalProperties != nil && !*s.AdditionalProperties {
					return fmt.Errorf("%s: property %q is not allowed", path, k)
				}
				continue
			}
			if err := sub.check(obj[k], path+"."+k); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s must be a string", path)
		}
	case "number", "integer":
		f, ok := v.(float64)
		if !ok || (s.Type == "integer" && f != float64(int64(f))) {
			return fmt.Errorf("%s must be a %s", path, s.Type)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s must be a boolean", path)
		}
	case "array":
		if _, ok := v.([]any); !ok {
			return fmt.Errorf("%s must be an array", path)
		}
	case "null":
		if v != nil {
			return fmt.Errorf("%s must be null", path)
		}
	default:
		return fmt.Errorf("%s: unsupported schema type %q", path, s.Type)
	}
	return nil
}
