package service

import (
	"context"
	"slices"

	"github.com/taskflow/taskflow/internal/frontdoor/auth"
)

// TaskTypeInfo is one task type the deployment accepts, with what a client
// needs to submit it: a description, the params' JSON Schema, who runs it
// and, for an external type, whether a live service takes it.
type TaskTypeInfo struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Params      map[string]any `json:"params_schema" jsonschema:"a JSON Schema of the task's params"`
	// HandledBy is "worker" (an in-process handler) or "service" (an
	// external service over the streams).
	HandledBy string   `json:"handled_by" openapi:"enum=worker|service"`
	Services  []string `json:"services,omitempty" jsonschema:"live services taking the type"`
	Online    *bool    `json:"online,omitempty" jsonschema:"external types: a live service takes it"`
	// PublishedBy is the service whose registration published the
	// description and schema of an external type.
	PublishedBy string `json:"published_by,omitempty" jsonschema:"external types: the service that published the description and schema"`
}

// TaskTypes lists the task types the deployment accepts, sorted by name.
// Any caller may read it.
func (s *Service) TaskTypes(ctx context.Context, p auth.Principal) ([]TaskTypeInfo, error) {
	if err := requirePrincipal(p); err != nil {
		return nil, err
	}
	if s.cfg.Types == nil {
		return []TaskTypeInfo{}, nil
	}
	svcs, err := s.serviceRegistry(ctx)
	if err != nil {
		return nil, storeErr("", err)
	}
	types := s.cfg.Types.List(ctx)
	out := make([]TaskTypeInfo, 0, len(types))
	for _, t := range types {
		ti := TaskTypeInfo{Name: t.Name, Description: t.Description, HandledBy: "worker", Params: t.Schema()}
		if t.External {
			ti.HandledBy, ti.PublishedBy = "service", t.Service
			online := false
			for _, sv := range svcs {
				if sv.Online && slices.Contains(sv.Types, t.Name) {
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
