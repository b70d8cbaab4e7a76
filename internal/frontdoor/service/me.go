package service

import (
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
)

// Me is who the caller is, as the dashboard needs it to offer only what
// the caller may do.
type Me struct {
	// Kind is "key" for a deployment-wide caller (the admin key, a named
	// key, open mode) and "session" for a session's token.
	Kind string `json:"kind" openapi:"enum=session|key" jsonschema:"key: the admin key, a named key or open mode; session: a session's token"`
	// Role is a key's role; nil for a session.
	Role *string `json:"role" openapi:"enum=admin|operator|viewer" jsonschema:"what the key may do (null for a session): admin anything; operator tasks, queues, schedules, breakers (not keys); viewer read only"`
	// Name is how the audit trail names the caller.
	Name string `json:"name" jsonschema:"how the audit trail names the caller: a named key's name, admin (the admin key), open (open mode), session:ID"`
	// SessionID is the session's id; nil for a key.
	SessionID *string `json:"session_id" jsonschema:"the session's id (null for a key)"`
}

// Me says who p is: any principal may ask.
func (s *Service) Me(p auth.Principal) (Me, error) {
	if err := requirePrincipal(p); err != nil {
		return Me{}, err
	}
	if p.Admin {
		role := string(p.EffectiveRole())
		return Me{Kind: "key", Role: &role, Name: p.Actor()}, nil
	}
	id := p.SessionID
	return Me{Kind: "session", Name: p.Actor(), SessionID: &id}, nil
}
