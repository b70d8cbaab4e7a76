package httpapi_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The dashboard is served at /ui/ without credentials (its data comes from
// the API, which checks them); a browser asking for / is sent there while
// an API client keeps the JSON 404.
func TestDashboardServedAndRootRedirect(t *testing.T) {
	t.Parallel()
	b := setup(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(t *testing.T, path, accept string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", accept)
		res, err := noFollow.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(body)
	}

	t.Run("BrowserRootRedirects", func(t *testing.T) {
		res, _ := do(t, "/", "text/html,application/xhtml+xml,*/*;q=0.8")
		require.Equal(t, http.StatusFound, res.StatusCode)
		require.Equal(t, "/ui/", res.Header.Get("Location"))
	})
	t.Run("JSONRootIs404", func(t *testing.T) {
		res, body := do(t, "/", "application/json")
		require.Equal(t, http.StatusNotFound, res.StatusCode)
		require.Contains(t, body, `"not_found"`)
	})
	t.Run("DeepRouteServesApp", func(t *testing.T) {
		for _, p := range []string{"/ui", "/ui/", "/ui/tasks/abc/"} {
			res, body := do(t, p, "text/html")
			require.Equal(t, http.StatusOK, res.StatusCode, p)
			require.Contains(t, body, `<div id="root">`, p)
		}
	})
}
