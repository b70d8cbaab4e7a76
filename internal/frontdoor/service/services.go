package service

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/task"
)

// ServiceInfo is one external service as its registration says.
type ServiceInfo struct {
	Name  string   `json:"name"`
	Types []string `json:"task_types"`
	// Online: a registration is in force (an instance heartbeated within
	// three heartbeats); Consumer and LastHeartbeat are the instance that
	// wrote it last.
	Online        bool       `json:"online" jsonschema:"an instance heartbeated within three heartbeats"`
	Consumer      string     `json:"consumer,omitempty" jsonschema:"the instance that registered last"`
	LastHeartbeat *time.Time `json:"last_heartbeat,omitempty"`
}

// ExternalTypeStatus says whether a running service takes an external
// task type.
type ExternalTypeStatus struct {
	TaskType string   `json:"task_type"`
	Online   bool     `json:"online" jsonschema:"a live service takes this type"`
	Services []string `json:"services,omitempty"`
	// InFlight: attempts dispatched and not finished, within their
	// deadline; InFlightBound: the most the dispatchers admit at once
	// (TASKFLOW_EXTERNAL_INFLIGHT as this process reads it; -1: no bound).
	InFlight      int64 `json:"in_flight" jsonschema:"attempts dispatched and not finished, within their deadline"`
	InFlightBound int   `json:"in_flight_bound" jsonschema:"the most the dispatchers admit at once (TASKFLOW_EXTERNAL_INFLIGHT); -1: no bound"`
}

// ServicesView is GET /api/v1/services.
type ServicesView struct {
	Services      []ServiceInfo        `json:"services"`
	ExternalTypes []ExternalTypeStatus `json:"external_types"`
	// Groups are the consumer groups of the task.create stream (one per
	// service): consumers, entries delivered and not acknowledged with
	// the age of the oldest, and entries not delivered yet.
	Groups []protocol.Group `json:"groups" jsonschema:"the consumer groups of the task.create stream (one per service)"`
}

// WaitingFor tells why a PENDING task is not picked up, when the reason is
// outside the engine: no service runs for its type.
type WaitingFor struct {
	Reason  string `json:"reason" openapi:"enum=no_service"`
	Message string `json:"message" jsonschema:"e.g. no service for data.export is running: the task has waited 4m0s and runs when one registers"`
}

// Services lists the external services that registered and, for every
// external task type, whether a live service takes it. Any caller may
// see it (it says nothing about tasks).
func (s *Service) Services(ctx context.Context, p auth.Principal) (ServicesView, error) {
	if err := requirePrincipal(p); err != nil {
		return ServicesView{}, err
	}
	svcs, err := s.serviceRegistry(ctx)
	if err != nil {
		return ServicesView{}, storeErr("", err)
	}
	out := ServicesView{Services: svcs, ExternalTypes: []ExternalTypeStatus{}}
	if out.Groups, err = protocol.Groups(ctx, s.rdb, protocol.NewKeys(s.st.Namespace()).Create(), s.cfg.Now()); err != nil {
		return ServicesView{}, storeErr("", err)
	}
	bound := s.cfg.ExternalInFlight
	var caps map[string]int // sized by the live services (bound 0)
	switch {
	case bound == 0:
		if caps, err = dispatch.Capacity(ctx, s.rdb, s.st.Namespace(), s.cfg.Now()); err != nil {
			return ServicesView{}, storeErr("", err)
		}
	case bound < 0:
		bound = -1
	}
	types := s.externalTypes()
	counts, err := dispatch.InFlightOf(ctx, s.rdb, s.st.Namespace(), types, s.cfg.Now())
	if err != nil {
		return ServicesView{}, storeErr("", err)
	}
	for i, typ := range types {
		st := ExternalTypeStatus{TaskType: typ, InFlight: counts[i], InFlightBound: bound}
		if caps != nil || bound == 0 {
			if st.InFlightBound = caps[typ]; st.InFlightBound <= 0 {
				st.InFlightBound = dispatch.DefaultInFlight
			}
		}
		for _, sv := range svcs {
			if sv.Online && slices.Contains(sv.Types, typ) {
				st.Online = true
				st.Services = append(st.Services, sv.Name)
			}
		}
		out.ExternalTypes = append(out.ExternalTypes, st)
	}
	return out, nil
}

// externalTypes are the names of the external task types, sorted.
func (s *Service) externalTypes() []string {
	if s.cfg.Types == nil {
		return nil
	}
	var out []string
	for _, n := range s.cfg.Types.Names() {
		if s.cfg.Types.IsExternal(n) {
			out = append(out, n)
		}
	}
	return out
}

// serviceRegistry reads every registration: the set of names, then each
// hash (gone once it expired: offline).
func (s *Service) serviceRegistry(ctx context.Context) ([]ServiceInfo, error) {
	k := protocol.NewKeys(s.st.Namespace())
	names, err := s.rdb.SMembers(ctx, k.Services()).Result()
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	cmds := make([]*redis.MapStringStringCmd, len(names))
	if len(names) > 0 {
		if _, err := s.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
			for i, n := range names {
				cmds[i] = pl.HGetAll(ctx, k.Service(n))
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	out := make([]ServiceInfo, 0, len(names))
	for i, n := range names {
		h := cmds[i].Val()
		si := ServiceInfo{Name: n, Online: len(h) > 0, Consumer: h["consumer"], Types: []string{}}
		if t := strings.TrimSpace(h["types"]); t != "" {
			si.Types = strings.Split(t, ",")
		}
		if ms, err := strconv.ParseInt(h["heartbeat_ms"], 10, 64); err == nil {
			at := time.UnixMilli(ms).UTC()
			si.LastHeartbeat = &at
		}
		out = append(out, si)
	}
	return out, nil
}

// waitingFor explains an external task that waits for a service: PENDING,
// or ACTIVE (its worker only dispatches it) with no live service to take it;
// nil when the task is not waiting for that reason (or on a read error:
// the hint is a courtesy, never a failure of the request).
func (s *Service) waitingFor(ctx context.Context, t *task.Task) *WaitingFor {
	if !s.mayWaitForService(t) {
		return nil
	}
	svcs, err := s.serviceRegistry(ctx)
	if err != nil {
		return nil
	}
	return s.waitingForIn(svcs, t)
}

// mayWaitForService: t is an external task not yet finished, so whether a
// live service takes its type matters.
func (s *Service) mayWaitForService(t *task.Task) bool {
	return t != nil && s.cfg.Types != nil && s.cfg.Types.IsExternal(t.Type) &&
		(t.State == task.StatePending || t.State == task.StateActive)
}

// waitingForIn is waitingFor against a registry already read (a listing
// reads it once for its page).
func (s *Service) waitingForIn(svcs []ServiceInfo, t *task.Task) *WaitingFor {
	if !s.mayWaitForService(t) {
		return nil
	}
	for _, sv := range svcs {
		if sv.Online && slices.Contains(sv.Types, t.Type) {
			return nil
		}
	}
	waited := s.cfg.Now().Sub(t.CreatedAt).Round(time.Second)
	return &WaitingFor{Reason: "no_service", Message: fmt.Sprintf(
		"no service for %s is running: the task has waited %s and runs when one registers (taskflow service NAME, or taskflow dev --services)",
		t.Type, waited)}
}
