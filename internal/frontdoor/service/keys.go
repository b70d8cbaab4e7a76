package service

import (
	"context"
	"errors"

	"github.com/taskflow/taskflow/internal/frontdoor/audit"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/identity"
)

// NamedKey is a named API key (auth.NamedKey).
type NamedKey = auth.NamedKey

// AuditEntry is one recorded change (audit.Entry).
type AuditEntry = audit.Entry

// AuditFilter narrows a read of the audit trail (audit.Filter).
type AuditFilter = audit.Filter

// KeyRequest creates a named key.
type KeyRequest struct {
	Name string `json:"name" jsonschema:"1-64 characters of a-z, 0-9, '.', '_', '-'"`
	Role string `json:"role" openapi:"enum=admin|operator|viewer" jsonschema:"admin: anything; operator: tasks, queues, schedules, breakers (not keys); viewer: read only"`
}

// KeyList is the named keys.
type KeyList struct {
	Keys []NamedKey `json:"keys"`
}

// AuditPage is a page of the audit trail, newest first.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	// Next is the cursor of the next (older) page: pass it as before; ""
	// at the end.
	Next string `json:"next,omitempty"`
}

func requireKeyAdmin(p auth.Principal) error {
	if p.ManagesKeys() {
		return nil
	}
	if p.Anonymous() {
		return Unauthenticated("credentials required")
	}
	return Forbidden("this operation needs the admin role")
}

// CreateKey makes a named key (the admin role only); its answer carries
// the key, shown this once.
func (s *Service) CreateKey(ctx context.Context, p auth.Principal, in KeyRequest) (NamedKey, error) {
	if err := requireKeyAdmin(p); err != nil {
		return NamedKey{}, err
	}
	if err := auth.CheckKeyName(in.Name); err != nil {
		return NamedKey{}, Unprocessable("name", "%v", err)
	}
	role := identity.Role(in.Role)
	if !role.Valid() {
		return NamedKey{}, Unprocessable("role", "role %q: want admin, operator or viewer", in.Role)
	}
	k, err := s.cfg.Auth.CreateKey(ctx, in.Name, role, p.Actor())
	if errors.Is(err, auth.ErrKeyExists) {
		return NamedKey{}, Conflict("key_exists", "a key named %q exists: revoke it first", in.Name)
	}
	if err != nil {
		return NamedKey{}, storeErr("", err)
	}
	return k, nil
}

// ListKeys lists the named keys (the admin role only), never the keys.
func (s *Service) ListKeys(ctx context.Context, p auth.Principal) (KeyList, error) {
	if err := requireKeyAdmin(p); err != nil {
		return KeyList{}, err
	}
	ks, err := s.cfg.Auth.ListKeys(ctx)
	if err != nil {
		return KeyList{}, storeErr("", err)
	}
	return KeyList{Keys: ks}, nil
}

// RevokeKey deletes a named key (the admin role only): it stops working
// at once in the process that revoked it, within 10 s in the others.
func (s *Service) RevokeKey(ctx context.Context, p auth.Principal, name string) (NamedKey, error) {
	if err := requireKeyAdmin(p); err != nil {
		return NamedKey{}, err
	}
	if err := auth.CheckKeyName(name); err != nil {
		return NamedKey{}, Invalid("invalid_parameter", "name", "%v", err)
	}
	k, err := s.cfg.Auth.RevokeKey(ctx, name)
	if errors.Is(err, auth.ErrKeyNotFound) {
		return NamedKey{}, NotFound("key_not_found", "no key named %q", name)
	}
	if err != nil {
		return NamedKey{}, storeErr("", err)
	}
	return k, nil
}

// RecordChange appends a change a deployment-wide caller made to the
// audit trail (a no-op without Config.Audit, or for a session's own).
func (s *Service) RecordChange(ctx context.Context, p auth.Principal, e AuditEntry) error {
	if s.cfg.Audit == nil || !p.Admin {
		return nil
	}
	e.Actor, e.Role = p.Actor(), string(p.EffectiveRole())
	return s.cfg.Audit.Record(ctx, e)
}

// Audit reads the audit trail, newest first (the admin role only).
func (s *Service) Audit(ctx context.Context, p auth.Principal, f AuditFilter) (AuditPage, error) {
	if err := requireKeyAdmin(p); err != nil {
		return AuditPage{}, err
	}
	if s.cfg.Audit == nil {
		return AuditPage{Entries: []AuditEntry{}}, nil
	}
	if f.Limit < 0 || f.Limit > 1000 {
		return AuditPage{}, Invalid("invalid_parameter", "limit", "limit %d: from 1 to 1000", f.Limit)
	}
	es, next, err := s.cfg.Audit.List(ctx, f)
	if err != nil {
		if f.Before != "" {
			return AuditPage{}, Invalid("invalid_parameter", "before", "%v", err)
		}
		return AuditPage{}, storeErr("", err)
	}
	return AuditPage{Entries: es, Next: next}, nil
}
