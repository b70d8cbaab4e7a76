// Package identity is who a request acts as, as the front ends (the HTTP
// API, the MCP server) see it: the Principal, carried in the request's
// context, the bearer token a request presents, and the Verifier that
// resolves a token to a principal. It holds no Redis client: the Verifier
// of a process is internal/frontdoor/auth's Authenticator (sessions in Redis), which
// the composition root hands to the front ends, so that a front end's
// imports reach the data only through internal/frontdoor/service.
package identity

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

// Principal is the identity a request acts as.
type Principal struct {
	// Admin is true for a deployment-wide caller: the admin key, a named
	// key of any role, or any caller in open mode. It sees every task;
	// Role says what it may change.
	Admin bool
	// Role is what a deployment-wide caller may do (RoleAdmin when Admin
	// is set and Role is empty: the admin key, open mode, in-process
	// callers); empty for a session.
	Role Role
	// Name names the caller in the audit trail: "admin" (the admin key),
	// "open" (open mode), a named key's name; empty for a session.
	Name string
	// SessionID is set when the caller presented a session token.
	SessionID string
}

// Role is what a named key (or the admin key) may do.
type Role string

// The roles, from most to least able.
const (
	// RoleAdmin may do anything, named keys included.
	RoleAdmin Role = "admin"
	// RoleOperator acts on tasks, queues, schedules and breakers, but not
	// on keys.
	RoleOperator Role = "operator"
	// RoleViewer reads: the API's GETs, the dashboard, metrics, live feeds.
	RoleViewer Role = "viewer"
)

// Roles lists the roles a named key may have.
var Roles = []Role{RoleAdmin, RoleOperator, RoleViewer}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return r == RoleAdmin || r == RoleOperator || r == RoleViewer }

// EffectiveRole is p's role: Role, RoleAdmin for an Admin without one,
// "" for a session or nobody.
func (p Principal) EffectiveRole() Role {
	if !p.Admin {
		return ""
	}
	if p.Role == "" {
		return RoleAdmin
	}
	return p.Role
}

// MayChange reports whether p may make changes beyond its own session's
// (a viewer may not).
func (p Principal) MayChange() bool { return p.EffectiveRole() != RoleViewer }

// ManagesKeys reports whether p may create, list and revoke named keys.
func (p Principal) ManagesKeys() bool { return p.EffectiveRole() == RoleAdmin }

// Actor names p in the audit trail.
func (p Principal) Actor() string {
	switch {
	case p.Name != "":
		return p.Name
	case p.Admin:
		return "admin"
	case p.SessionID != "":
		return "session:" + p.SessionID
	}
	return "anonymous"
}

func (p Principal) Anonymous() bool { return !p.Admin && p.SessionID == "" }

// Sentinels of a Verifier's Authenticate and of BearerToken.
var (
	// ErrNoCredentials: the request carries no bearer token.
	ErrNoCredentials = errors.New("no credentials: send Authorization: Bearer <token>")
	// ErrInvalidToken: the token is neither the admin key nor a live session's.
	ErrInvalidToken = errors.New("invalid or expired token")
	// ErrMalformedHeader: Authorization is present but not "Bearer <token>".
	ErrMalformedHeader = errors.New("malformed Authorization header: want Bearer <token>")
)

// Verifier resolves bearer tokens to principals (*auth.Authenticator).
type Verifier interface {
	// Authenticate resolves a bearer token ("" when the request had none):
	// ErrNoCredentials or ErrInvalidToken when it names nobody, another
	// error when it could not be checked.
	Authenticate(ctx context.Context, token string) (Principal, error)
	// Open reports whether requests without credentials act as the admin.
	Open() bool
}

// BearerToken extracts the token of an Authorization: Bearer header; ""
// with a nil error when there is no header.
func BearerToken(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", nil
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", ErrMalformedHeader
	}
	return strings.TrimSpace(tok), nil
}

// RequestToken is the request's token: the Authorization: Bearer header's,
// else, when query is true, the access_token query parameter's — for
// browsers, whose EventSource and WebSocket cannot set headers. A token
// read from a URL must never be logged: log r.URL.Path, never the URL.
func RequestToken(r *http.Request, query bool) (string, error) {
	tok, err := BearerToken(r)
	if err != nil || tok != "" || !query {
		return tok, err
	}
	return r.URL.Query().Get("access_token"), nil
}

type ctxKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal stored by WithPrincipal (the zero,
// anonymous principal when none).
func FromContext(ctx context.Context) Principal {
	p, _ := ctx.Value(ctxKey{}).(Principal)
	return p
}
