package service

import (
	"context"
	"slices"
	"sort"

	"github.com/taskflow/taskflow/internal/auth"
)

// TaskTypeInfo is one task type the deployment accepts, with what a client
// needs to submit it: a description, the params' JSON Schema, who runs it
// and, for an external type, whether a live service takes it.
type TaskTypeInfo struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Params      map[string]any `json:"params_schema"`
	// HandledBy is "worker" (an in-process handler) or "service" (an
	// external service over the streams).
	HandledBy string   `json:"handled_by"`
	Services  []string `json:"services,omitempty"`
	Online    *bool    `json:"online,omitempty"`
}

// TaskTypes lists the task types the deployment accepts, sorted by name.
// Any caller may read it.
func (s *Service) TaskTypes(ctx context.Context, p auth.Principal) ([]TaskTypeInfo, error) {
	if err := requirePrincipal(p); err != nil {
		return nil, err
	}
	var names []string
	if s.cfg.TaskTypes != nil {
		names = s.cfg.TaskTypes()
	}
	sort.Strings(names)
	svcs, err := s.serviceRegistry(ctx)
	if err != nil {
		return nil, storeErr("", err)
	}
	out := make([]TaskTypeInfo, 0, len(names))
	for _, n := range names {
		ti := TaskTypeInfo{Name: n, HandledBy: "worker", Params: map[string]any{"type": "object"}}
		if s.cfg.TypeDescriptions != nil {
			ti.Description = s.cfg.TypeDescriptions[n]
		}
		if s.cfg.TypeSchema != nil {
			if sch, ok := s.cfg.TypeSchema(n); ok {
				ti.Params = sch
			}
		}
		if slices.Contains(s.cfg.ExternalTypes, n) {
			ti.HandledBy = "service"
			online := false
			for _, sv := range svcs {
				if sv.Online && slices.Contains(sv.Types, n) {
					online = true
					ti.Services = append(ti.Services, sv.Name)
				}
			}
			ti.Online = &online
		}
		out = append(out, ti)
	}
	return out, nil
}
