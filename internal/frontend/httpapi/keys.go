package httpapi

import (
	"net/http"
	"strconv"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
)

// keyRoutes are the named API keys and the audit trail: the admin role's.
func (s *Server) keyRoutes(add func(route)) {
	add(route{method: "GET", path: "/api/v1/me", access: principal, handler: s.me, doc: opDoc{
		tag: "keys", summary: "Who the caller is: a key (its role and name) or a session (its id)",
		description: "Any credentials may ask (in open mode the answer is the open admin). The dashboard reads it to offer only what the role may do.",
		responses:   map[int]string{200: "Me"}}})
	add(route{method: "POST", path: "/api/v1/keys", access: admin, keysOnly: true, audit: true, handler: s.createKey, doc: opDoc{
		tag: "keys", summary: "Create a named API key with a role (admin, operator, viewer); its answer shows the key, once", request: "KeyRequest",
		description: "The key is sent as Authorization: Bearer KEY. admin may do anything; operator acts on tasks, queues, schedules and breakers (not keys); viewer reads (GETs, the dashboard, metrics, live feeds). Only its SHA-256 is stored.",
		responses:   map[int]string{201: "NamedKey", 409: "Error"}}})
	add(route{method: "GET", path: "/api/v1/keys", access: admin, keysOnly: true, handler: s.listKeys, doc: opDoc{
		tag: "keys", summary: "List the named API keys (names, roles, when and by whom created; never the keys)",
		responses: map[int]string{200: "KeyList"}}})
	add(route{method: "DELETE", path: "/api/v1/keys/{name}", access: admin, keysOnly: true, audit: true, handler: s.revokeKey, doc: opDoc{
		tag: "keys", summary: "Revoke a named API key: refused at once by this process, within 10 s by the others",
		params:    []paramDoc{pathParam("name", "the key's name")},
		responses: map[int]string{200: "NamedKey"}}})
	add(route{method: "GET", path: "/api/v1/audit", access: admin, keysOnly: true, handler: s.auditTrail, doc: opDoc{
		tag: "keys", summary: "The audit trail: every change made with the admin key or a named key (who, what, on what, when), newest first",
		description: "Kept TASKFLOW_AUDIT_RETENTION (90 days). A session's changes to its own tasks are not in it.",
		params: []paramDoc{queryParam("before", "string", "cursor: the next of the previous page"),
			queryParam("limit", "integer", "entries per page, 1-1000 (default 100)"),
			queryParam("actor", "string", "only this actor's entries (a key's name, admin, open)")},
		responses: map[int]string{200: "AuditPage"}}})
}

func (s *Server) me(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	m, err := s.svc.Me(p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in service.KeyRequest
	if err := decodeBody(r, s.cfg.MaxBodyBytes, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	k, err := s.svc.CreateKey(r.Context(), p, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, k)
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	ks, err := s.svc.ListKeys(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ks)
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	k, err := s.svc.RevokeKey(r.Context(), p, r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, k)
}

func (s *Server) auditTrail(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	q := r.URL.Query()
	f := service.AuditFilter{Before: q.Get("before"), Actor: q.Get("actor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.writeError(w, r, service.Invalid("invalid_parameter", "limit", "limit %q: an integer from 1 to 1000", v))
			return
		}
		f.Limit = n
	}
	page, err := s.svc.Audit(r.Context(), p, f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
