package httpapi

import (
	_ "embed"
	"encoding/json"
	"net/http"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// docsHTML is a self-contained page (no CDN, no framework) that renders
// /openapi.json: it works offline.
//
//go:embed docs.html
var docsHTML []byte

func (s *Server) openapiDoc(w http.ResponseWriter, r *http.Request, _ identity.Principal) {
	// The request body of POST /api/v1/tasks is a oneOf by task_type with
	// each type's params schema: the types (and what their services
	// published) are read now, and the document rebuilt when they changed.
	types, _ := s.svc.TaskTypes(r.Context(), identity.Principal{Admin: true}) // a failed read serves the generic body
	key, _ := json.Marshal(types)
	s.openapiMu.Lock()
	if s.openapiJSON == nil || string(key) != s.openapiKey {
		doc := s.openAPI()
		addSubmitVariants(doc, types)
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			s.openapiMu.Unlock()
			s.writeError(w, r, service.Internal(err))
			return
		}
		s.openapiJSON, s.openapiKey = b, string(key)
	}
	body := s.openapiJSON
	s.openapiMu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(body)
}

// addSubmitVariants makes POST /api/v1/tasks's body a oneOf of one schema
// per task type: SubmitRequest with task_type fixed to the type and params
// its params schema (Submit.<type>), discriminated by task_type.
func addSubmitVariants(doc map[string]any, types []service.TaskTypeInfo) {
	if len(types) == 0 {
		return
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	var oneOf []any
	mapping := map[string]any{}
	for _, t := range types {
		name := "Submit." + t.Name
		params := map[string]any{}
		for k, v := range t.Params {
			params[k] = v
		}
		if t.Description != "" {
			params["description"] = t.Description
		}
		schemas[name] = map[string]any{"allOf": []any{ref("SubmitRequest"), map[string]any{
			"type":     "object",
			"required": []string{"task_type"},
			"properties": map[string]any{
				"task_type": map[string]any{"type": "string", "enum": []string{t.Name}},
				"params":    params,
			},
		}}}
		oneOf = append(oneOf, ref(name))
		mapping[t.Name] = "#/components/schemas/" + name
	}
	schemas["SubmitByType"] = map[string]any{"oneOf": oneOf,
		"discriminator": map[string]any{"propertyName": "task_type", "mapping": mapping},
		"description":   "A submit of one of the task types the deployment accepts (GET /api/v1/task-types), with that type's params."}
	paths := doc["paths"].(map[string]map[string]any)
	if op, ok := paths["/api/v1/tasks"]["post"].(map[string]any); ok {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/json": map[string]any{"schema": ref("SubmitByType")}}}
	}
}

func (s *Server) docsPage(w http.ResponseWriter, _ *http.Request, _ identity.Principal) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(docsHTML)
}

func invalidEventID(id string) error {
	return service.Invalid("invalid_parameter", "Last-Event-ID", "%q is not an event id like 1700000000000-0.3", truncate(id, 64))
}
