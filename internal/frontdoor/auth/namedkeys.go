package auth

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
)

// Named API keys: besides the admin key, keys with a name and a role
// (identity.Roles), created, listed and revoked at run time. Only a key's
// SHA-256 is stored; the key is shown once, to its creator.

// keyPrefix marks named API keys, as tokenPrefix marks session tokens.
const keyPrefix = "tfk_"

var (
	// ErrKeyExists: a named key of that name exists (revoke it first).
	ErrKeyExists = errors.New("a key of that name exists")
	// ErrKeyNotFound: no named key of that name.
	ErrKeyNotFound = errors.New("no key of that name")
)

var validKeyName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// CheckKeyName says what is wrong with a key's name: 1–64 characters of
// a-z, 0-9, '.', '_', '-', starting with a letter or digit.
func CheckKeyName(name string) error {
	if !validKeyName.MatchString(name) {
		return fmt.Errorf("%q is not a key name: 1-64 characters of a-z, 0-9, '.', '_', '-', starting with a letter or digit", name)
	}
	return nil
}

// NamedKey is a named API key as listed (Key only in CreateKey's answer).
type NamedKey struct {
	Name      string        `json:"name"`
	Role      identity.Role `json:"role" openapi:"enum=admin|operator|viewer"`
	CreatedAt time.Time     `json:"created_at"`
	CreatedBy string        `json:"created_by,omitempty" jsonschema:"who created it (a key's name, or admin)"`
	// Key is the secret itself: in the answer to its creation only.
	Key string `json:"key,omitempty" jsonschema:"the key itself (Authorization: Bearer KEY): shown once, at creation; only its hash is stored"`
}

// keyRecord is what the keys HASH holds about a key.
type keyRecord struct {
	Role      identity.Role `json:"role"`
	Hash      string        `json:"sha256"`
	CreatedAt time.Time     `json:"created_at"`
	CreatedBy string        `json:"created_by,omitempty"`
}

var (
	//go:embed scripts/create_key.lua
	createKeySrc    string
	createKeyScript = redis.NewScript(createKeySrc)
	//go:embed scripts/revoke_key.lua
	revokeKeySrc    string
	revokeKeyScript = redis.NewScript(revokeKeySrc)
)

// CreateKey makes a named key with role; by names its creator. The
// answer's Key is the only time the key is seen.
func (a *Authenticator) CreateKey(ctx context.Context, name string, role identity.Role, by string) (NamedKey, error) {
	if err := CheckKeyName(name); err != nil {
		return NamedKey{}, err
	}
	if !role.Valid() {
		return NamedKey{}, fmt.Errorf("role %q: want admin, operator or viewer", role)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return NamedKey{}, fmt.Errorf("auth: random key: %w", err)
	}
	k := NamedKey{Name: name, Role: role, CreatedAt: a.cfg.Now().UTC(), CreatedBy: by,
		Key: keyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])}
	h := hashToken(k.Key)
	rec, err := json.Marshal(keyRecord{Role: role, Hash: h, CreatedAt: k.CreatedAt, CreatedBy: by})
	if err != nil {
		return NamedKey{}, err
	}
	n, err := createKeyScript.Run(ctx, a.rdb, []string{namedKeysKey(a.cfg.Namespace), namedKeyLookup(a.cfg.Namespace, h)}, name, rec).Int()
	if err != nil {
		return NamedKey{}, fmt.Errorf("auth: create key: %w", err)
	}
	if n == 0 {
		return NamedKey{}, ErrKeyExists
	}
	return k, nil
}

// ListKeys lists the named keys by name (never the keys themselves).
func (a *Authenticator) ListKeys(ctx context.Context) ([]NamedKey, error) {
	all, err := a.rdb.HGetAll(ctx, namedKeysKey(a.cfg.Namespace)).Result()
	if err != nil {
		return nil, fmt.Errorf("auth: list keys: %w", err)
	}
	out := make([]NamedKey, 0, len(all))
	for name, raw := range all {
		var r keyRecord
		if json.Unmarshal([]byte(raw), &r) != nil {
			continue
		}
		out = append(out, NamedKey{Name: name, Role: r.Role, CreatedAt: r.CreatedAt, CreatedBy: r.CreatedBy})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RevokeKey deletes a named key: it stops working in this process at
// once, in other processes within Config.CacheTTL.
func (a *Authenticator) RevokeKey(ctx context.Context, name string) (NamedKey, error) {
	for range 3 { // the record changes under us only if revoked and re-created meanwhile
		raw, err := a.rdb.HGet(ctx, namedKeysKey(a.cfg.Namespace), name).Result()
		if errors.Is(err, redis.Nil) {
			return NamedKey{}, ErrKeyNotFound
		}
		if err != nil {
			return NamedKey{}, fmt.Errorf("auth: revoke key: %w", err)
		}
		var r keyRecord
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return NamedKey{}, fmt.Errorf("auth: revoke key: record of %q: %w", name, err)
		}
		n, err := revokeKeyScript.Run(ctx, a.rdb, []string{namedKeysKey(a.cfg.Namespace), namedKeyLookup(a.cfg.Namespace, r.Hash)}, name, raw).Int()
		if err != nil {
			return NamedKey{}, fmt.Errorf("auth: revoke key: %w", err)
		}
		if n == 1 {
			a.mu.Lock()
			delete(a.cache, r.Hash)
			a.mu.Unlock()
			return NamedKey{Name: name, Role: r.Role, CreatedAt: r.CreatedAt, CreatedBy: r.CreatedBy}, nil
		}
	}
	return NamedKey{}, fmt.Errorf("auth: revoke key %q: it kept changing", name)
}

// namedKey resolves a named key's token: the principal of its role.
func (a *Authenticator) namedKey(ctx context.Context, token string) (Principal, error) {
	h := hashToken(token)
	now := a.cfg.Now()
	if a.cfg.CacheTTL > 0 {
		a.mu.Lock()
		c, ok := a.cache[h]
		a.mu.Unlock()
		if ok && now.Before(c.until) && c.role != "" {
			return Principal{Admin: true, Role: c.role, Name: c.name}, nil
		}
	}
	name, err := a.rdb.Get(ctx, namedKeyLookup(a.cfg.Namespace, h)).Result()
	if errors.Is(err, redis.Nil) {
		return Principal{}, ErrInvalidToken
	}
	if err != nil {
		return Principal{}, fmt.Errorf("auth: look up key: %w", err)
	}
	raw, err := a.rdb.HGet(ctx, namedKeysKey(a.cfg.Namespace), name).Result()
	if errors.Is(err, redis.Nil) {
		return Principal{}, ErrInvalidToken // revoked between the two reads
	}
	if err != nil {
		return Principal{}, fmt.Errorf("auth: look up key: %w", err)
	}
	var r keyRecord
	if err := json.Unmarshal([]byte(raw), &r); err != nil || r.Hash != h || !r.Role.Valid() {
		return Principal{}, ErrInvalidToken
	}
	if a.cfg.CacheTTL > 0 {
		a.remember(h, cached{role: r.Role, name: name, until: now.Add(a.cfg.CacheTTL)})
	}
	return Principal{Admin: true, Role: r.Role, Name: name}, nil
}
