package httpapi

import (
	_ "embed"
	"encoding/json"
	"net/http"

	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/service"
)

// docsHTML is a self-contained page (no CDN, no framework) that renders
// /openapi.json: it works offline.
//
//go:embed docs.html
var docsHTML []byte

func (s *Server) openapiDoc(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	s.openapiOnce.Do(func() {
		b, err := json.MarshalIndent(s.openAPI(), "", "  ")
		if err != nil {
			panic(err) // static data: a bug
		}
		s.openapiJSON = b
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(s.openapiJSON)
}

func (s *Server) docsPage(w http.ResponseWriter, _ *http.Request, _ auth.Principal) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(docsHTML)
}

func invalidEventID(id string) error {
	return service.Invalid("invalid_parameter", "Last-Event-ID", "%q is not an event id like 1700000000000-0.3", truncate(id, 64))
}
