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
	// Admin is true for the operator (admin key, or any caller in open mode).
	Admin bool
	// SessionID is set when the caller presented a session token.
	SessionID string
}

// Anonymous reports whether the principal is nobody at all.
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
