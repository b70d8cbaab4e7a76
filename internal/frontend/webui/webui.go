// Package webui serves the web dashboard: the production build of web/,
// embedded in the binary, at /ui/. Hashed assets are cached for good;
// every other path under /ui/ answers the app's index.html so client-side
// routes survive a reload.
package webui

import (
	"compress/gzip"
	"embed"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed all:dist
var dist embed.FS

// Prefix is the path the dashboard is served under.
const Prefix = "/ui/"

// Handler serves the embedded build under Prefix.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embed pattern guarantees dist exists
	}
	return &handler{fsys: sub}
}

type handler struct{ fsys fs.FS }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(r.URL.Path, "/ui")), "/")
	asset := strings.HasPrefix(name, "assets/")
	data, err := fs.ReadFile(h.fsys, name)
	if name == "" || err != nil {
		if asset {
			http.NotFound(w, r) // a missing hashed file is not the app
			return
		}
		name = "index.html"
		if data, err = fs.ReadFile(h.fsys, name); err != nil {
			http.Error(w, "the dashboard is not built (make ui)", http.StatusNotFound)
			return
		}
	}
	hdr := w.Header()
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	hdr.Set("Content-Type", ctype)
	hdr.Set("X-Content-Type-Options", "nosniff")
	if asset {
		hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hdr.Set("Cache-Control", "no-cache")
	}
	hdr.Add("Vary", "Accept-Encoding")
	if compressible(ctype) && acceptsGzip(r) {
		hdr.Set("Content-Encoding", "gzip")
		if r.Method == http.MethodHead {
			return
		}
		zw := gzip.NewWriter(w)
		_, _ = zw.Write(data)
		_ = zw.Close()
		return
	}
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, strings.NewReader(string(data)))
}

func compressible(ctype string) bool {
	return strings.HasPrefix(ctype, "text/") || strings.Contains(ctype, "javascript") ||
		strings.Contains(ctype, "json") || strings.Contains(ctype, "svg")
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}

// WantsHTML reports whether a request for / comes from a browser (it
// accepts text/html) rather than an API client.
func WantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}
