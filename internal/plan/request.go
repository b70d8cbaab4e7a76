package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/taskflow/taskflow/internal/plan/ir"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

// RequestError is a bad request, printed by rankd as
// {"error":Error,"detail":Detail}; Field names the offending field.
type RequestError struct {
	Kind   string // "Invalid JSON input", "Invalid request", "Invalid param_overrides"
	Field  string
	Detail string
}

func (e *RequestError) Error() string { return e.Kind + ": " + e.Detail }

// Request error kinds, as the reference prints them.
const (
	ErrKindJSON    = "Invalid JSON input"
	ErrKindRequest = "Invalid request"
	ErrKindParams  = "Invalid param_overrides"
)

// ParseRequest decodes one request: {"request_id"?: string, "user_id":
// positive integer or decimal string, "param_overrides"?: {name: value}}.
// Other fields are ignored (callers such as the HTTP API add their own).
func ParseRequest(data []byte, reg *registry.Registry) (*Request, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var probe any
		if json.Unmarshal(data, &probe) != nil {
			return nil, &RequestError{Kind: ErrKindJSON, Detail: err.Error()}
		}
		return nil, &RequestError{Kind: ErrKindRequest, Detail: "request must be a JSON object"}
	}
	if top == nil {
		return nil, &RequestError{Kind: ErrKindRequest, Detail: "request must be a JSON object"}
	}
	req := &Request{}
	if raw, ok := top["request_id"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &req.RequestID); err != nil {
			return nil, &RequestError{Kind: ErrKindRequest, Field: "request_id", Detail: "request_id must be a string"}
		}
	}
	raw, ok := top["user_id"]
	if !ok || isNull(raw) {
		return nil, &RequestError{Kind: ErrKindRequest, Field: "user_id", Detail: "missing required field: user_id"}
	}
	uid, err := parseUserID(raw)
	if err != nil {
		return nil, &RequestError{Kind: ErrKindRequest, Field: "user_id", Detail: err.Error()}
	}
	req.UserID = uid
	if raw, ok := top["param_overrides"]; ok && !isNull(raw) {
		p, err := ParseParamOverrides(raw, reg)
		if err != nil {
			return nil, err
		}
		req.Params = p
	}
	return req, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

const userIDRule = "user_id must be a positive integer or a decimal string"

func parseUserID(raw json.RawMessage) (int64, error) {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && t[0] == '"' {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return 0, fmt.Errorf("%s", userIDRule)
		}
		if s == "" || strings.TrimLeft(s, "0123456789") != "" {
			return 0, fmt.Errorf("%s, got %q", userIDRule, s)
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v <= 0 {
			return 0, fmt.Errorf("%s, got %q", userIDRule, s)
		}
		return v, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	if err := dec.Decode(&n); err != nil {
		return 0, fmt.Errorf("%s", userIDRule)
	}
	if v, err := n.Int64(); err == nil {
		if v <= 0 {
			return 0, fmt.Errorf("%s, got %d", userIDRule, v)
		}
		return v, nil
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || f <= 0 || f > 1<<53 {
		return 0, fmt.Errorf("%s, got %s", userIDRule, n)
	}
	return int64(f), nil
}

// ParseParamOverrides checks {name: value} against the param registry:
// unknown names, wrong types and null for a non-nullable param are errors.
func ParseParamOverrides(raw json.RawMessage, reg *registry.Registry) (ir.Params, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, &RequestError{Kind: ErrKindParams, Field: "param_overrides", Detail: "param_overrides must be an object"}
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := ir.Params{}
	for _, name := range names {
		field := "param_overrides." + name
		p := reg.ParamsByName[name]
		if p == nil {
			return nil, &RequestError{Kind: ErrKindParams, Field: field, Detail: fmt.Sprintf("unknown param '%s'", name)}
		}
		v := m[name]
		if isNull(v) {
			if !p.Nullable {
				return nil, &RequestError{Kind: ErrKindParams, Field: field, Detail: fmt.Sprintf("param '%s' is not nullable", name)}
			}
			out[p.ID] = ir.Value{Kind: ir.Null}
			continue
		}
		bad := &RequestError{Kind: ErrKindParams, Field: field, Detail: fmt.Sprintf("param '%s' must be of type %s", name, p.Type)}
		switch p.Type {
		case registry.TypeFloat, registry.TypeInt:
			var f float64
			if json.Unmarshal(v, &f) != nil || (p.Type == registry.TypeInt && f != math.Trunc(f)) {
				return nil, bad
			}
			out[p.ID] = ir.Value{Kind: ir.Number, Num: f}
		case registry.TypeString:
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil, bad
			}
			out[p.ID] = ir.Value{Kind: ir.String, Str: s}
		case registry.TypeBool:
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return nil, bad
			}
			out[p.ID] = ir.Value{Kind: ir.Bool, Bool: b}
		}
	}
	return out, nil
}
