// Package registry loads the plan engine's registries — keys, params,
// endpoints, capabilities and validation rules — from TOML data files in the
// reference engine's format (the repository's registry/ directory is
// embedded and is the default). Nothing here is code-generated: adding a key
// is a data change.
package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"

	regdata "github.com/taskflow/taskflow/registry"
)

// ErrInvalid is wrapped by every error about a registry file's content.
var ErrInvalid = errors.New("invalid registry")

// Key types.
const (
	TypeInt           = "int"
	TypeFloat         = "float"
	TypeString        = "string"
	TypeBool          = "bool"
	TypeFeatureBundle = "feature_bundle"
)

// IDKey is the key id of the row identity.
const IDKey = 1

// Key is one column a plan can read or write.
type Key struct {
	ID         int      `toml:"key_id"`
	Name       string   `toml:"name"`
	Type       string   `toml:"type"`
	Nullable   bool     `toml:"nullable"`
	AllowWrite *bool    `toml:"allow_write"`
	Default    *float64 `toml:"default"`
	Doc        string   `toml:"doc"`
}

// Writable reports whether a vm may write the key.
func (k *Key) Writable() bool { return k.AllowWrite == nil || *k.AllowWrite }

// Param is one request parameter.
type Param struct {
	ID       int    `toml:"param_id"`
	Name     string `toml:"name"`
	Type     string `toml:"type"`
	Nullable bool   `toml:"nullable"`
	Doc      string `toml:"doc"`
}

// Endpoint is one outside service a plan's IO nodes talk to.
type Endpoint struct {
	ID       string `toml:"endpoint_id"`
	Name     string `toml:"name"`
	Kind     string `toml:"kind"`
	Resolver struct {
		Type string `toml:"type"`
		Host string `toml:"host"`
		Port int    `toml:"port"`
	} `toml:"resolver"`
	Policy struct {
		MaxInflight      int `toml:"max_inflight"`
		ConnectTimeoutMS int `toml:"connect_timeout_ms"`
		RequestTimeoutMS int `toml:"request_timeout_ms"`
	} `toml:"policy"`
}

// Addr is host:port of a static resolver.
func (e *Endpoint) Addr() string { return fmt.Sprintf("%s:%d", e.Resolver.Host, e.Resolver.Port) }

// Capability is one plan-format extension.
type Capability struct {
	ID            string `toml:"id"`
	RFC           string `toml:"rfc"`
	Name          string `toml:"name"`
	Status        string `toml:"status"`
	Doc           string `toml:"doc"`
	PayloadSchema string `toml:"payload_schema"`
	schema        *schema
}

// Supported reports whether plans may require the capability.
func (c *Capability) Supported() bool { return c.Status == "implemented" }

// ValidatePayload checks an extensions payload against the capability's
// schema; with no schema only null (or an absent payload) is accepted.
func (c *Capability) ValidatePayload(raw json.RawMessage) error {
	if c.schema == nil {
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		return fmt.Errorf("capability %s takes no payload", c.ID)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("capability %s: payload is not JSON: %w", c.ID, err)
	}
	if err := c.schema.check(v, "payload"); err != nil {
		return fmt.Errorf("capability %s: %w", c.ID, err)
	}
	return nil
}

// Validation holds the shared name patterns, limits and enums.
type Validation struct {
	Patterns struct {
		PlanName string `toml:"plan_name"`
		NodeID   string `toml:"node_id"`
	} `toml:"patterns"`
	Limits struct {
		MaxFanout         int `toml:"max_fanout"`
		PlanSchemaVersion int `toml:"plan_schema_version"`
	} `toml:"limits"`
	Enums struct {
		RegexFlags   []string `toml:"regex_flags"`
		CmpOperators []string `toml:"cmp_operators"`
	} `toml:"enums"`
	planName *regexp.Regexp
	nodeID   *regexp.Regexp
}

// ValidPlanName reports whether s is an acceptable plan name.
func (v *Validation) ValidPlanName(s string) bool { return v.planName.MatchString(s) }

// ValidNodeID reports whether s is an acceptable node id.
func (v *Validation) ValidNodeID(s string) bool { return v.nodeID.MatchString(s) }

// Registry is every registry of one environment.
type Registry struct {
	Env          string
	Keys         map[int]*Key
	KeysByName   map[string]*Key
	Params       map[int]*Param
	ParamsByName map[string]*Param
	Endpoints    map[string]*Endpoint
	Capabilities map[string]*Capability
	Validation   Validation
}

// Default loads the embedded registry (the repository's registry/) for env.
func Default(env string) (*Registry, error) { return Load(regdata.Files, env) }

// Load reads keys.toml, params.toml, endpoints.<env>.toml, capabilities.toml
// and validation.toml (optional: defaults apply) from fsys.
func Load(fsys fs.FS, env string) (*Registry, error) {
	if env == "" {
		env = "dev"
	}
	r := &Registry{
		Env: env, Keys: map[int]*Key{}, KeysByName: map[string]*Key{},
		Params: map[int]*Param{}, ParamsByName: map[string]*Param{},
		Endpoints: map[string]*Endpoint{}, Capabilities: map[string]*Capability{},
	}
	var keys struct {
		Key []*Key `toml:"key"`
	}
	if err := decode(fsys, "keys.toml", &keys); err != nil {
		return nil, err
	}
	for _, k := range keys.Key {
		if err := checkKey(k); err != nil {
			return nil, fmt.Errorf("%w: keys.toml: %w", ErrInvalid, err)
		}
		if r.Keys[k.ID] != nil || r.KeysByName[k.Name] != nil {
			return nil, fmt.Errorf("%w: keys.toml: duplicate key %d %q", ErrInvalid, k.ID, k.Name)
		}
		r.Keys[k.ID], r.KeysByName[k.Name] = k, k
	}
	if k := r.Keys[IDKey]; k == nil || k.Name != "id" {
		return nil, fmt.Errorf("%w: keys.toml: key_id 1 must be \"id\"", ErrInvalid)
	}
	var params struct {
		Param []*Param `toml:"param"`
	}
	if err := decode(fsys, "params.toml", &params); err != nil {
		return nil, err
	}
	for _, p := range params.Param {
		if p.ID <= 0 || p.Name == "" {
			return nil, fmt.Errorf("%w: params.toml: param needs a positive param_id and a name", ErrInvalid)
		}
		switch p.Type {
		case TypeInt, TypeFloat, TypeString, TypeBool:
		default:
			return nil, fmt.Errorf("%w: params.toml: param %q: unknown type %q", ErrInvalid, p.Name, p.Type)
		}
		if r.Params[p.ID] != nil || r.ParamsByName[p.Name] != nil {
			return nil, fmt.Errorf("%w: params.toml: duplicate param %d %q", ErrInvalid, p.ID, p.Name)
		}
		r.Params[p.ID], r.ParamsByName[p.Name] = p, p
	}
	var eps struct {
		Endpoint []*Endpoint `toml:"endpoint"`
	}
	epFile := "endpoints." + env + ".toml"
	if err := decode(fsys, epFile, &eps); err != nil {
		return nil, err
	}
	for _, e := range eps.Endpoint {
		if !strings.HasPrefix(e.ID, "ep_") || len(e.ID) > 64 {
			return nil, fmt.Errorf("%w: %s: endpoint_id %q must start with ep_ and be at most 64 characters", ErrInvalid, epFile, e.ID)
		}
		if e.Kind != "redis" && e.Kind != "http" {
			return nil, fmt.Errorf("%w: %s: endpoint %s: kind %q (want redis or http)", ErrInvalid, epFile, e.ID, e.Kind)
		}
		if r.Endpoints[e.ID] != nil {
			return nil, fmt.Errorf("%w: %s: duplicate endpoint %s", ErrInvalid, epFile, e.ID)
		}
		if e.Policy.MaxInflight <= 0 {
			e.Policy.MaxInflight = 64
		}
		r.Endpoints[e.ID] = e
	}
	var caps struct {
		Capability []*Capability `toml:"capability"`
	}
	if err := decode(fsys, "capabilities.toml", &caps); err != nil {
		return nil, err
	}
	for _, c := range caps.Capability {
		if c.ID == "" || r.Capabilities[c.ID] != nil {
			return nil, fmt.Errorf("%w: capabilities.toml: empty or duplicate id %q", ErrInvalid, c.ID)
		}
		if s := strings.TrimSpace(c.PayloadSchema); s != "" {
			sc, err := parseSchema(s)
			if err != nil {
				return nil, fmt.Errorf("%w: capabilities.toml: %s: payload_schema: %w", ErrInvalid, c.ID, err)
			}
			c.schema = sc
		}
		r.Capabilities[c.ID] = c
	}
	if err := loadValidation(fsys, &r.Validation); err != nil {
		return nil, err
	}
	return r, nil
}

func checkKey(k *Key) error {
	if k.ID <= 0 || k.Name == "" {
		return errors.New("key needs a positive key_id and a name")
	}
	switch k.Type {
	case TypeInt, TypeFloat, TypeString, TypeBool, TypeFeatureBundle:
	default:
		return fmt.Errorf("key %q: unknown type %q", k.Name, k.Type)
	}
	return nil
}

func loadValidation(fsys fs.FS, v *Validation) error {
	if _, err := fs.Stat(fsys, "validation.toml"); err == nil {
		if err := decode(fsys, "validation.toml", v); err != nil {
			return err
		}
	}
	if v.Patterns.PlanName == "" {
		v.Patterns.PlanName = "^[A-Za-z0-9_]+$"
	}
	if v.Patterns.NodeID == "" {
		v.Patterns.NodeID = "^[A-Za-z0-9_]+$"
	}
	if v.Limits.MaxFanout <= 0 {
		v.Limits.MaxFanout = 10_000_000
	}
	if v.Limits.PlanSchemaVersion == 0 {
		v.Limits.PlanSchemaVersion = 1
	}
	if len(v.Enums.RegexFlags) == 0 {
		v.Enums.RegexFlags = []string{"", "i"}
	}
	if len(v.Enums.CmpOperators) == 0 {
		v.Enums.CmpOperators = []string{"==", "!=", "<", "<=", ">", ">="}
	}
	var err error
	if v.planName, err = regexp.Compile(v.Patterns.PlanName); err != nil {
		return fmt.Errorf("%w: validation.toml: plan_name pattern: %w", ErrInvalid, err)
	}
	if v.nodeID, err = regexp.Compile(v.Patterns.NodeID); err != nil {
		return fmt.Errorf("%w: validation.toml: node_id pattern: %w", ErrInvalid, err)
	}
	return nil
}

func decode(fsys fs.FS, name string, into any) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return fmt.Errorf("registry: read %s: %w", name, err)
	}
	md, err := toml.Decode(string(b), into)
	if err != nil {
		// toml's ParseError carries the line; keep its message.
		return fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	_ = md
	return nil
}
