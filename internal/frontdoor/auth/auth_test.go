package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

const adminKey = "admin-key-for-tests-0123456789"

func setup(t *testing.T, cfg auth.Config) *auth.Authenticator {
	t.Helper()
	rdb, ns := testredis.Client(t)
	cfg.Namespace = keyspace.MustParse(ns)
	a, err := auth.New(rdb, cfg)
	require.NoError(t, err)
	return a
}

func TestSessionToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := setup(t, auth.Config{AdminKey: adminKey})

	s1, err := a.CreateSession(ctx)
	require.NoError(t, err)
	s2, err := a.CreateSession(ctx)
	require.NoError(t, err)
	require.NotEqual(t, s1.ID, s2.ID)
	require.NotEqual(t, s1.Token, s2.Token)
	require.True(t, strings.HasPrefix(s1.Token, "tfs_"))

	p, err := a.Authenticate(ctx, s1.Token)
	require.NoError(t, err)
	require.Equal(t, auth.Principal{SessionID: s1.ID}, p)
	p, err = a.Authenticate(ctx, s1.Token) // cached path
	require.NoError(t, err)
	require.Equal(t, s1.ID, p.SessionID)

	p, err = a.Authenticate(ctx, adminKey)
	require.NoError(t, err)
	require.True(t, p.Admin)

	_, err = a.Authenticate(ctx, s1.Token+"x")
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	_, err = a.Authenticate(ctx, "tfs_unknown")
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	_, err = a.Authenticate(ctx, "")
	require.ErrorIs(t, err, auth.ErrNoCredentials)

	ok, err := a.SessionExists(ctx, s2.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, a.DeleteSession(ctx, s2.Token))
	_, err = a.Authenticate(ctx, s2.Token)
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	ok, err = a.SessionExists(ctx, s2.ID)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestTokensAreHashedAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, ns := testredis.Client(t)
	a, err := auth.New(rdb, auth.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	s, err := a.CreateSession(ctx)
	require.NoError(t, err)

	keys, err := testredis.Keys(ctx, rdb, "*"+ns+"*")
	require.NoError(t, err)
	require.Len(t, keys, 3, "the token, the session and the index of sessions")
	for _, k := range keys {
		// one hash slot with the rest of the namespace: session creation
		// (MULTI) and ending (DEL of both keys) work on a Redis Cluster
		require.True(t, strings.HasPrefix(k, "{"+ns+"}:auth:"), k)
		require.NotContains(t, k, s.Token)
		typ, err := rdb.Type(ctx, k).Result()
		require.NoError(t, err)
		var vals []string
		switch typ {
		case "string":
			v, err := rdb.Get(ctx, k).Result()
			require.NoError(t, err)
			vals = []string{v}
		case "hash":
			m, err := rdb.HGetAll(ctx, k).Result()
			require.NoError(t, err)
			for _, v := range m {
				vals = append(vals, v)
			}
		case "zset":
			vals, err = rdb.ZRange(ctx, k, 0, -1).Result()
			require.NoError(t, err)
			require.Equal(t, []string{s.ID}, vals)
		}
		for _, v := range vals {
			require.NotContains(t, v, s.Token[4:])
		}
		ttl, err := rdb.TTL(ctx, k).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 23*time.Hour)
	}
}

func TestOpenMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := setup(t, auth.Config{Open: true})
	p, err := a.Authenticate(ctx, "")
	require.NoError(t, err)
	require.True(t, p.Admin)
	// A token is still checked in open mode: a wrong one is refused.
	_, err = a.Authenticate(ctx, "tfs_nope")
	require.ErrorIs(t, err, auth.ErrInvalidToken)
	// Without an admin key, no token is the admin.
	_, err = a.Authenticate(ctx, adminKey)
	require.ErrorIs(t, err, auth.ErrInvalidToken)
}

func TestCacheExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	rdb, ns := testredis.Client(t)
	a, err := auth.New(rdb, auth.Config{Namespace: keyspace.MustParse(ns), CacheTTL: 5 * time.Second, Now: clock})
	require.NoError(t, err)
	s, err := a.CreateSession(ctx)
	require.NoError(t, err)
	_, err = a.Authenticate(ctx, s.Token)
	require.NoError(t, err)
	// Deleted behind the process's back: still cached until CacheTTL.
	other, err := auth.New(rdb, auth.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	require.NoError(t, other.DeleteSession(ctx, s.Token))
	_, err = a.Authenticate(ctx, s.Token)
	require.NoError(t, err)
	mu.Lock()
	now = now.Add(6 * time.Second)
	mu.Unlock()
	_, err = a.Authenticate(ctx, s.Token)
	require.ErrorIs(t, err, auth.ErrInvalidToken)
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		header string
		want   string
		err    error
	}{
		"None":        {"", "", nil},
		"Bearer":      {"Bearer abc", "abc", nil},
		"LowerCase":   {"bearer abc", "abc", nil},
		"Basic":       {"Basic abc", "", auth.ErrMalformedHeader},
		"EmptyToken":  {"Bearer ", "", auth.ErrMalformedHeader},
		"NoSeparator": {"Bearerabc", "", auth.ErrMalformedHeader},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			got, err := auth.BearerToken(r)
			require.ErrorIs(t, err, tc.err)
			require.Equal(t, tc.want, got)
		})
	}
}

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"", "Bearer x", "bearer  y ", "Basic z", "Bearer"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["Authorization"] = []string{h}
		tok, err := auth.BearerToken(r)
		if err == nil && h != "" && tok == "" {
			t.Fatalf("header %q: empty token without error", h)
		}
	})
}

// TestRequestToken: the header's token first; ?access_token= only where the
// caller allows it (browsers' EventSource) and only without a header.
func TestRequestToken(t *testing.T) {
	t.Parallel()
	req := func(header, query string) *http.Request {
		r := httptest.NewRequest("GET", "/x?"+query, nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		return r
	}
	for _, tc := range []struct {
		header, query string
		allow         bool
		want          string
		err           bool
	}{
		{"Bearer h", "access_token=q", true, "h", false},
		{"", "access_token=q", true, "q", false},
		{"", "access_token=q", false, "", false},
		{"", "", true, "", false},
		{"Basic x", "access_token=q", true, "", true},
	} {
		got, err := auth.RequestToken(req(tc.header, tc.query), tc.allow)
		require.Equal(t, tc.err, err != nil, "%+v: %v", tc, err)
		require.Equal(t, tc.want, got, "%+v", tc)
	}
}

// The namespace has one source: an Authenticator given none refuses to
// start instead of writing sessions under a default.
func TestNamespaceIsRequired(t *testing.T) {
	t.Parallel()
	_, err := auth.New(nil, auth.Config{})
	require.ErrorContains(t, err, "Namespace is required")
}

// TestSessionsListsTheLiveOnes: the admin's listing of sessions reads the
// index that creating and ending a session keep, newest first, without
// the expired ones (by the injected clock).
func TestSessionsListsTheLiveOnes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	a := setup(t, auth.Config{AdminKey: adminKey, SessionTTL: time.Hour, Now: clock})

	old, err := a.CreateSession(ctx)
	require.NoError(t, err)
	advance(10 * time.Minute)
	mid, err := a.CreateSession(ctx)
	require.NoError(t, err)
	advance(10 * time.Minute)
	last, err := a.CreateSession(ctx)
	require.NoError(t, err)

	got, total, err := a.Sessions(ctx, 10)
	require.NoError(t, err)
	require.EqualValues(t, 3, total)
	require.Equal(t, []string{last.ID, mid.ID, old.ID}, []string{got[0].ID, got[1].ID, got[2].ID}, "newest first")
	require.True(t, got[0].CreatedAt.Equal(last.CreatedAt))
	require.True(t, got[0].ExpiresAt.Equal(last.ExpiresAt))

	got, total, err = a.Sessions(ctx, 1)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.EqualValues(t, 3, total, "the total counts past the limit")

	require.NoError(t, a.DeleteSession(ctx, mid.Token))
	advance(45 * time.Minute) // old expired (its hour is up), last has 25 minutes left
	got, total, err = a.Sessions(ctx, 10)
	require.NoError(t, err)
	require.EqualValues(t, 1, total)
	require.Len(t, got, 1)
	require.Equal(t, last.ID, got[0].ID)
}
