package service

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/frontdoor/auth"
)

func TestInflightRefusesASecondHolder(t *testing.T) {
	t.Parallel()
	var f inflight
	leave, err := f.enter("s:1", "k")
	require.NoError(t, err)
	_, err = f.enter("s:1", "k")
	var e *Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, KindConflict, e.Kind)
	require.Equal(t, "idempotency_key_in_use", e.Code)
	require.Equal(t, IdempotencyField, e.Field)
	other, err := f.enter("s:2", "k")
	require.NoError(t, err, "another caller's key of the same name is its own")
	other()
	leave()
	again, err := f.enter("s:1", "k")
	require.NoError(t, err, "free once the first is answered")
	again()
}

func TestIdemScopeSeparatesCallers(t *testing.T) {
	t.Parallel()
	scopes := map[string]bool{}
	for _, p := range []auth.Principal{{SessionID: "abc"}, {Admin: true, Name: "abc"}, {Admin: true, Name: "admin"}, {Admin: true, Name: "open"}} {
		scopes[idemScope(p)] = true
	}
	require.Len(t, scopes, 4, "a session and a named key of the same name do not share keys")
}

func TestValidIdempotencyKey(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		key string
		ok  bool
	}{
		"One":      {"k", true},
		"Max":      {strings.Repeat("k", 255), true},
		"Spaces":   {"a b ~", true},
		"Empty":    {"", false},
		"TooLong":  {strings.Repeat("k", 256), false},
		"Control":  {"a\tb", false},
		"NonASCII": {"clé", false},
		"Delete":   {"a\x7f", false},
	} {
		t.Run(name, func(t *testing.T) {
			err := ValidIdempotencyKey(c.key)
			if c.ok {
				require.NoError(t, err)
				return
			}
			var e *Error
			require.True(t, errors.As(err, &e))
			require.Equal(t, KindInvalid, e.Kind)
			require.Equal(t, IdempotencyField, e.Field)
		})
	}
}
