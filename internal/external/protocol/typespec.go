package protocol

import "encoding/json"

// TypeSpec is what a service publishes about one of its task types when it
// registers (HSET of TaskTypes, field = the type, value = this as JSON):
// docs/protocol.md describes it for services in any language.
type TypeSpec struct {
	// Service is the publishing service's name.
	Service string `json:"service"`
	// Description says what the type does, for people and agents choosing
	// a type.
	Description string `json:"description,omitempty"`
	// Params is the type's params as a JSON Schema object. The API checks
	// a submit against it (the keywords extsvc/param.FromJSONSchema
	// reads) and serves it whole.
	Params json.RawMessage `json:"params_schema,omitempty"`
	// Notify is the text of the session's notification when a task of the
	// type completes, with {field} replaced by the task's params.field
	// (e.g. "Your {quarter} {year} report is ready"). Empty: the default
	// text.
	Notify string `json:"notify,omitempty"`
}
