package httpapi

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// opDoc documents one route for /openapi.json. The document is generated
// from the route table, so a route cannot exist undocumented.
type opDoc struct {
	summary     string
	description string
	tag         string
	params      []paramDoc
	request     string         // schema name of the JSON body, "" for none
	responses   map[int]string // status → schema name ("" = no body, "binary" = a file); errors are added
	stream      bool           // text/event-stream response
	selfAuth    bool           // a public mount that checks the bearer itself
}

type paramDoc struct {
	name, in, typ, description string
	required                   bool
	enum                       []string
}

func pathParam(name, desc string) paramDoc {
	return paramDoc{name: name, in: "path", typ: "string", description: desc, required: true}
}

func queryParam(name, typ, desc string, enum ...string) paramDoc {
	return paramDoc{name: name, in: "query", typ: typ, description: desc, enum: enum}
}

// openAPI builds the OpenAPI 3.0 document of the routes.
func (s *Server) openAPI() map[string]any {
	paths := map[string]map[string]any{}
	for _, r := range s.router.routes {
		p := paths[r.path]
		if p == nil {
			p = map[string]any{}
			paths[r.path] = p
		}
		p[strings.ToLower(r.method)] = s.operation(r)
	}
	for _, m := range s.mountDocs {
		p := paths[m.path]
		if p == nil {
			p = map[string]any{}
			paths[m.path] = p
		}
		p[strings.ToLower(m.method)] = s.operation(m)
	}
	schemas := map[string]any{}
	for k, v := range apiSchemas() {
		schemas[k] = v
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":       "taskflow API",
			"version":     s.version,
			"description": "Durable tasks on Redis: submit, inspect, retry, cancel; queues, DLQ, workers, live status. Errors are {\"error\":{\"code\",\"message\",\"field\"}}; a trailing slash on any path is accepted. See docs/api.md.",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer",
					"description": "A session token (POST /api/v1/sessions) or the admin key (TASKFLOW_ADMIN_KEY)."},
			},
		},
	}
}

func (s *Server) operation(r route) map[string]any {
	op := map[string]any{
		"summary":     r.doc.summary,
		"operationId": operationID(r.method, r.path),
		"tags":        []string{r.doc.tag},
	}
	desc := r.doc.description
	if r.doc.selfAuth {
		op["security"] = []any{map[string]any{"bearer": []string{}}}
	}
	if r.access != public {
		op["security"] = []any{map[string]any{"bearer": []string{}}}
		desc = strings.TrimSpace(desc + "\n\nAccess: " + r.access.String() + ".")
	}
	if desc != "" {
		op["description"] = desc
	}
	var params []any
	for _, p := range r.doc.params {
		sch := map[string]any{"type": p.typ}
		if len(p.enum) > 0 {
			sch["enum"] = p.enum
		}
		params = append(params, map[string]any{"name": p.name, "in": p.in, "required": p.required,
			"description": p.description, "schema": sch})
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if r.doc.request != "" {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/json": map[string]any{"schema": ref(r.doc.request)}}}
	}
	resp := map[string]any{}
	for code, schema := range r.doc.responses {
		entry := map[string]any{"description": http.StatusText(code)}
		switch {
		case r.doc.stream:
			entry["content"] = map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string"}}}
		case schema == "binary": // a file, in its own content type
			entry["content"] = map[string]any{"*/*": map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}
		case schema != "":
			entry["content"] = map[string]any{"application/json": map[string]any{"schema": ref(schema)}}
		}
		resp[strconv.Itoa(code)] = entry
	}
	errCodes := []int{}
	if r.doc.request != "" {
		errCodes = append(errCodes, 400, 413, 422)
	} else if len(r.doc.params) > 0 {
		errCodes = append(errCodes, 400)
	}
	if r.access != public {
		errCodes = append(errCodes, 401, 403)
	}
	for _, p := range r.doc.params {
		if p.in == "path" {
			errCodes = append(errCodes, 404)
			break
		}
	}
	for _, c := range errCodes {
		if _, ok := resp[strconv.Itoa(c)]; !ok {
			resp[strconv.Itoa(c)] = map[string]any{"description": http.StatusText(c),
				"content": map[string]any{"application/json": map[string]any{"schema": ref("Error")}}}
		}
	}
	op["responses"] = resp
	return op
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func operationID(method, path string) string {
	parts := []string{strings.ToLower(method)}
	for _, seg := range strings.Split(strings.Trim(path, "/"), "/") {
		if seg == "api" || seg == "v1" || seg == "" {
			continue
		}
		seg = strings.Trim(seg, "{}")
		for _, w := range strings.FieldsFunc(seg, func(r rune) bool { return r == '-' || r == '_' }) {
			parts = append(parts, strings.ToUpper(w[:1])+w[1:])
		}
	}
	return strings.Join(parts, "")
}

// routeList returns "METHOD path" of every documented route, sorted (tests).
func (s *Server) routeList() []string {
	var out []string
	for _, r := range s.router.routes {
		out = append(out, r.method+" "+r.path)
	}
	sort.Strings(out)
	return out
}
