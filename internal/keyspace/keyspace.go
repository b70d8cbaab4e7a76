// Package keyspace holds the one value every Redis key of a deployment is
// derived from: its namespace. Each package that owns keys builds them in its
// own keys.go from a Namespace, and nothing else spells out the hash tag or
// defaults the namespace, so one deployment's keys cannot drift apart.
package keyspace

import (
	"errors"
	"fmt"
	"strings"
)

// Namespace names one deployment's keys. Every key starts with the hash tag
// "{namespace}:", so a Redis Cluster keeps all the keys a script touches in
// one slot. The zero value is not valid: build one with Parse or use Default.
type Namespace struct {
	name string
}

// DefaultName is the namespace of a deployment that names none
// (TASKFLOW_NAMESPACE unset).
const DefaultName = "taskflow"

// Default is the namespace of a deployment that names none.
var Default = Namespace{name: DefaultName}

// ErrInvalid is wrapped by every error Parse returns.
var ErrInvalid = errors.New("invalid namespace")

// Parse checks name and returns its Namespace. A name is 1 to 64 characters
// without braces or white space (a brace would end the hash tag early, so
// two namespaces could share a slot's keys).
func Parse(name string) (Namespace, error) {
	switch {
	case name == "":
		return Namespace{}, fmt.Errorf("%w: it is empty", ErrInvalid)
	case len(name) > 64:
		return Namespace{}, fmt.Errorf("%w: %d characters, at most 64", ErrInvalid, len(name))
	case strings.ContainsAny(name, "{} \t\r\n"):
		return Namespace{}, fmt.Errorf("%w: %q holds a brace or white space", ErrInvalid, name)
	}
	return Namespace{name: name}, nil
}

// MustParse is Parse for names known to be valid (tests, constants); it
// panics on an invalid one.
func MustParse(name string) Namespace {
	ns, err := Parse(name)
	if err != nil {
		panic(err)
	}
	return ns
}

// Name is the namespace as the user wrote it ("taskflow").
func (n Namespace) Name() string { return n.name }

// String is Name, for logs and messages.
func (n Namespace) String() string { return n.name }

// IsZero reports whether n was never set (a bug in the caller: every
// constructor that takes a Namespace refuses the zero value).
func (n Namespace) IsZero() bool { return n.name == "" }

// Prefix is what every key of the namespace starts with: "{taskflow}:".
// Scripts that derive per-id keys inside Redis get it (or a longer prefix)
// in KEYS.
func (n Namespace) Prefix() string { return "{" + n.name + "}:" }

// Key joins parts with ':' under the namespace's prefix:
// Key("task", id) is "{taskflow}:task:<id>".
func (n Namespace) Key(parts ...string) string {
	return n.Prefix() + strings.Join(parts, ":")
}

// Pattern is a SCAN/KEYS match pattern of every key of the namespace.
func (n Namespace) Pattern() string { return n.Prefix() + "*" }
