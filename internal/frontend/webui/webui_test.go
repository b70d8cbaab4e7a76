package webui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/frontend/webui"
)

func TestHandler(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(webui.Handler())
	t.Cleanup(srv.Close)

	get := func(t *testing.T, path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}

	t.Run("IndexAndDeepRoute", func(t *testing.T) {
		t.Parallel()
		for _, p := range []string{"/ui/", "/ui/tasks/0190abcd"} {
			resp, body := get(t, p)
			require.Equal(t, http.StatusOK, resp.StatusCode, p)
			require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
			require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
			require.Contains(t, body, `<div id="root">`)
		}
	})
	t.Run("HashedAssetImmutableGzip", func(t *testing.T) {
		t.Parallel()
		_, body := get(t, "/ui/")
		i := strings.Index(body, "/ui/assets/")
		require.Positive(t, i)
		asset := body[i : i+strings.IndexByte(body[i:], '"')]
		resp, js := get(t, asset) // the client decompresses transparently
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, resp.Header.Get("Cache-Control"), "immutable")
		require.True(t, resp.Uncompressed, "served gzip")
		require.NotEmpty(t, js)
	})
	t.Run("MissingAssetIs404", func(t *testing.T) {
		t.Parallel()
		resp, _ := get(t, "/ui/assets/nope-123.js")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}
