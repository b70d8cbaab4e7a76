package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSessionRateLimit: POST /api/v1/sessions is limited per client
// address (429 rate_limited with Retry-After); the window slides; other
// endpoints are not limited.
func TestSessionRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{sessionLimit: 3})
	var tok string
	for range 3 {
		r := b.do("POST", "/api/v1/sessions", "", nil)
		require.Equal(t, http.StatusCreated, r.code, string(r.raw))
		tok = r.body["token"].(string)
	}
	r := b.do("POST", "/api/v1/sessions/", "", nil)
	require.Equal(t, http.StatusTooManyRequests, r.code, string(r.raw))
	require.Equal(t, "rate_limited", r.errCode())
	require.Equal(t, "60", r.hdr.Get("Retry-After"))
	require.Contains(t, r.body["error"].(map[string]any)["message"], "at most 3 sessions per 1m0s")
	require.Equal(t, http.StatusOK, b.do("GET", "/api/v1/tasks", tok, nil).code, "the sessions opened still work")

	b.clock.Advance(30 * time.Second)
	r = b.do("POST", "/api/v1/sessions", "", nil)
	require.Equal(t, http.StatusTooManyRequests, r.code)
	require.Equal(t, "30", r.hdr.Get("Retry-After"))
	b.clock.Advance(31 * time.Second)
	r = b.do("POST", "/api/v1/sessions", "", nil)
	require.Equal(t, http.StatusCreated, r.code, "the window slid: %s", r.raw)
}

// TestSessionRateLimitBehindProxy: with ClientIPHeader the address is the
// header's last value (the one the proxy added), so each client has its own
// budget and a client cannot pick another's by prepending addresses.
func TestSessionRateLimitBehindProxy(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{sessionLimit: 1, clientIPHeader: "X-Forwarded-For"})
	post := func(xff string) int {
		req, err := http.NewRequest("POST", b.srv.URL+"/api/v1/sessions", nil)
		require.NoError(t, err)
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		res, err := b.srv.Client().Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	require.Equal(t, http.StatusCreated, post("203.0.113.7"))
	require.Equal(t, http.StatusTooManyRequests, post("203.0.113.7"))
	require.Equal(t, http.StatusTooManyRequests, post("198.51.100.1, 203.0.113.7"), "spoofed first hop")
	require.Equal(t, http.StatusCreated, post("198.51.100.1"))
	require.Equal(t, http.StatusCreated, post("2001:db8:1:2::1"))
	require.Equal(t, http.StatusTooManyRequests, post("2001:db8:1:2::99"), "IPv6 by its /64")
	require.Equal(t, http.StatusCreated, post(""), "no header: the connection's address")
	require.Equal(t, http.StatusTooManyRequests, post("not-an-ip"), "an unparsable header: the connection's address")
}
