// Package auth decides who is calling: the operator (the admin key), a
// session (a bearer token issued by CreateSession), or nobody. Session
// tokens are stored in Redis only as their SHA-256; the admin key is compared
// in constant time. Authorisation rules (who may touch which task) live in
// the service package; this package only establishes identity. The
// identity itself (Principal, the request's context, its bearer token) is
// package identity's, which the front ends import without this package's
// Redis client; the names here are the same values. An Authenticator is
// the identity.Verifier the composition root hands to the front ends.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/frontdoor/identity"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Principal is the identity a request acts as (identity.Principal: the
// front ends name it without this package's Redis client).
type Principal = identity.Principal

// Sentinels of Authenticate (identity's).
var (
	// ErrNoCredentials: the request carries no bearer token.
	ErrNoCredentials = identity.ErrNoCredentials
	// ErrInvalidToken: the token is neither the admin key nor a live session's.
	ErrInvalidToken = identity.ErrInvalidToken
	// ErrMalformedHeader: Authorization is present but not "Bearer <token>".
	ErrMalformedHeader = identity.ErrMalformedHeader
)

// An Authenticator is the Verifier the front ends are given.
var _ identity.Verifier = (*Authenticator)(nil)

// Config configures an Authenticator.
type Config struct {
	// Namespace is the deployment's namespace. Required.
	Namespace keyspace.Namespace
	// AdminKey is the operator's bearer token. Default empty: no admin key
	// (then only Open mode has an admin).
	AdminKey string
	// Open makes a request without credentials act as the admin (dev mode,
	// --insecure). Default false.
	Open bool
	// SessionTTL is a session's lifetime. Default 24h.
	SessionTTL time.Duration
	// CacheTTL is how long a verified session token is remembered in process
	// (saving a Redis round trip per request). A session deleted in Redis is
	// still accepted by this process for at most CacheTTL. Default 10s;
	// negative disables the cache.
	CacheTTL time.Duration
	// CacheSize bounds the number of remembered tokens. Default 10000.
	CacheSize int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// WithDefaults returns c with unset fields defaulted.
func (c Config) WithDefaults() Config {
	if c.SessionTTL == 0 {
		c.SessionTTL = 24 * time.Hour
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = 10 * time.Second
	}
	if c.CacheSize == 0 {
		c.CacheSize = 10000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate says what is wrong with c.
func (c Config) Validate() error {
	if c.SessionTTL < time.Second {
		return fmt.Errorf("auth: SessionTTL %s is below 1s", c.SessionTTL)
	}
	if c.CacheSize < 1 {
		return fmt.Errorf("auth: CacheSize %d must be positive", c.CacheSize)
	}
	return nil
}

// Session is a newly created session. Token is shown once, to its creator.
type Session struct {
	ID        string    `json:"session_id" jsonschema:"the session's id"`
	Token     string    `json:"token" jsonschema:"bearer token of the session; shown once, stored only as a hash"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Authenticator creates sessions and resolves bearer tokens to principals.
// It is safe for concurrent use.
type Authenticator struct {
	rdb      redis.UniversalClient
	cfg      Config
	adminSum [32]byte
	hasAdmin bool

	mu    sync.Mutex
	cache map[string]cached // token hash → session
}

// cached is a verified token: a session's, or a named key's (role set).
type cached struct {
	sessionID string
	role      identity.Role
	name      string
	until     time.Time
}

// remember caches a verified token, evicting an arbitrary entry when full.
func (a *Authenticator) remember(h string, c cached) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= a.cfg.CacheSize {
		for k := range a.cache {
			delete(a.cache, k)
			break
		}
	}
	a.cache[h] = c
}

// New returns an Authenticator over rdb.
func New(rdb redis.UniversalClient, cfg Config) (*Authenticator, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Namespace.IsZero() {
		return nil, errors.New("auth: Config.Namespace is required")
	}
	a := &Authenticator{rdb: rdb, cfg: cfg, cache: map[string]cached{}}
	if cfg.AdminKey != "" {
		a.adminSum = sha256.Sum256([]byte(cfg.AdminKey))
		a.hasAdmin = true
	}
	return a, nil
}

// Open reports whether requests without credentials act as the admin.
func (a *Authenticator) Open() bool { return a.cfg.Open }

// tokenPrefix marks taskflow session tokens so that they are recognisable
// in logs and secret scanners.
const tokenPrefix = "tfs_"

// CreateSession makes a new session and returns it with its token; only the
// token's hash is stored.
func (a *Authenticator) CreateSession(ctx context.Context) (Session, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Session{}, fmt.Errorf("auth: random token: %w", err)
	}
	now := a.cfg.Now().UTC()
	s := Session{
		ID:        uuid.NewString(),
		Token:     tokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:]),
		CreatedAt: now,
		ExpiresAt: now.Add(a.cfg.SessionTTL),
	}
	h := hashToken(s.Token)
	_, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, sessionKey(a.cfg.Namespace, s.ID),
			"created_at", s.CreatedAt.Format(time.RFC3339Nano),
			"expires_at", s.ExpiresAt.Format(time.RFC3339Nano))
		p.Expire(ctx, sessionKey(a.cfg.Namespace, s.ID), a.cfg.SessionTTL)
		p.Set(ctx, tokenKey(a.cfg.Namespace, h), s.ID, a.cfg.SessionTTL)
		p.ZAdd(ctx, sessionsKey(a.cfg.Namespace), redis.Z{Score: float64(s.ExpiresAt.UnixMilli()), Member: s.ID})
		p.Expire(ctx, sessionsKey(a.cfg.Namespace), a.cfg.SessionTTL) // outlives every session in it
		return nil
	})
	if err != nil {
		return Session{}, fmt.Errorf("auth: store session: %w", err)
	}
	return s, nil
}

// SessionExists reports whether a session id is live.
func (a *Authenticator) SessionExists(ctx context.Context, id string) (bool, error) {
	n, err := a.rdb.Exists(ctx, sessionKey(a.cfg.Namespace, id)).Result()
	if err != nil {
		return false, fmt.Errorf("auth: %w", err)
	}
	return n == 1, nil
}

// SessionInfo is a live session as the admin's listing shows it (its
// token is never stored, so never shown).
type SessionInfo struct {
	ID        string    `json:"session_id"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Sessions lists the live sessions, the newest first (the latest to
// expire: every session lives SessionTTL), at most limit of them, and how
// many are live in all. Expired ones are dropped from the index first.
// Sessions created before the index existed are not listed.
func (a *Authenticator) Sessions(ctx context.Context, limit int) ([]SessionInfo, int64, error) {
	k := sessionsKey(a.cfg.Namespace)
	now := a.cfg.Now()
	var zs *redis.ZSliceCmd
	var total *redis.IntCmd
	if _, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, k, "-inf", strconv.FormatInt(now.UnixMilli(), 10))
		zs = p.ZRevRangeWithScores(ctx, k, 0, int64(limit)-1)
		total = p.ZCard(ctx, k)
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("auth: list sessions: %w", err)
	}
	ids := zs.Val()
	created := make([]*redis.StringCmd, len(ids))
	if len(ids) > 0 {
		if _, err := a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, z := range ids {
				created[i] = p.HGet(ctx, sessionKey(a.cfg.Namespace, z.Member.(string)), "created_at")
			}
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return nil, 0, fmt.Errorf("auth: list sessions: %w", err)
		}
	}
	out := make([]SessionInfo, 0, len(ids))
	for i, z := range ids {
		si := SessionInfo{ID: z.Member.(string), ExpiresAt: time.UnixMilli(int64(z.Score)).UTC()}
		c, err := time.Parse(time.RFC3339Nano, created[i].Val())
		if err != nil { // the session ended between the two reads
			continue
		}
		si.CreatedAt = c
		out = append(out, si)
	}
	return out, total.Val(), nil
}

// DeleteSession ends a session: its token stops working (in this process at
// once; in other processes within CacheTTL).
func (a *Authenticator) DeleteSession(ctx context.Context, token string) error {
	h := hashToken(token)
	id, err := a.rdb.Get(ctx, tokenKey(a.cfg.Namespace, h)).Result()
	if errors.Is(err, redis.Nil) {
		return ErrInvalidToken
	}
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if _, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, tokenKey(a.cfg.Namespace, h), sessionKey(a.cfg.Namespace, id))
		p.ZRem(ctx, sessionsKey(a.cfg.Namespace), id)
		return nil
	}); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	a.mu.Lock()
	delete(a.cache, h)
	a.mu.Unlock()
	return nil
}

// Authenticate resolves a bearer token ("" when the request had none).
// Without a token it returns the admin in Open mode, else ErrNoCredentials.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (Principal, error) {
	if token == "" {
		if a.cfg.Open {
			return Principal{Admin: true, Role: identity.RoleAdmin, Name: "open"}, nil
		}
		return Principal{}, ErrNoCredentials
	}
	if a.hasAdmin {
		sum := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(sum[:], a.adminSum[:]) == 1 {
			return Principal{Admin: true, Role: identity.RoleAdmin, Name: "admin"}, nil
		}
	}
	if strings.HasPrefix(token, keyPrefix) && len(token) <= 128 {
		return a.namedKey(ctx, token)
	}
	if !strings.HasPrefix(token, tokenPrefix) || len(token) > 128 {
		return Principal{}, ErrInvalidToken
	}
	h := hashToken(token)
	now := a.cfg.Now()
	if a.cfg.CacheTTL > 0 {
		a.mu.Lock()
		c, ok := a.cache[h]
		a.mu.Unlock()
		if ok && now.Before(c.until) && c.sessionID != "" {
			return Principal{SessionID: c.sessionID}, nil
		}
	}
	id, err := a.rdb.Get(ctx, tokenKey(a.cfg.Namespace, h)).Result()
	if errors.Is(err, redis.Nil) {
		return Principal{}, ErrInvalidToken
	}
	if err != nil {
		return Principal{}, fmt.Errorf("auth: look up token: %w", err)
	}
	if a.cfg.CacheTTL > 0 {
		a.remember(h, cached{sessionID: id, until: now.Add(a.cfg.CacheTTL)})
	}
	return Principal{SessionID: id}, nil
}

// BearerToken extracts the token of an Authorization: Bearer header; ""
// with a nil error when there is no header (identity.BearerToken).
func BearerToken(r *http.Request) (string, error) { return identity.BearerToken(r) }

// RequestToken is the request's token (identity.RequestToken): the
// Authorization: Bearer header's, else, when query is true, the
// access_token query parameter's. A token read from a URL must never be
// logged.
func RequestToken(r *http.Request, query bool) (string, error) {
	return identity.RequestToken(r, query)
}

func hashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// WithPrincipal returns ctx carrying p (identity.WithPrincipal).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return identity.WithPrincipal(ctx, p)
}

// FromContext returns the principal stored by WithPrincipal (the zero,
// anonymous principal when none; identity.FromContext).
func FromContext(ctx context.Context) Principal { return identity.FromContext(ctx) }
