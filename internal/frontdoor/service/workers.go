package service

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/task"
)

// WorkerLiveness is how recent a heartbeat must be for a worker to count.
const WorkerLiveness = 30 * time.Second

// Workers lists live workers (operator).
func (s *Service) Workers(ctx context.Context, p auth.Principal) ([]WorkerInfo, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	return s.workers(ctx)
}

func (s *Service) workers(ctx context.Context) ([]WorkerInfo, error) {
	if s.cfg.Workers != nil {
		ws, err := s.cfg.Workers(ctx)
		if err != nil {
			return nil, storeErr("", err)
		}
		return ws, nil
	}
	raw, err := s.st.Workers(ctx, WorkerLiveness.Milliseconds())
	if err != nil {
		return nil, storeErr("", err)
	}
	now := s.cfg.Now()
	out := make([]WorkerInfo, 0, len(raw))
	counted := false
	for _, w := range raw {
		out = append(out, workerFromFields(w, now))
		if _, ok := w.Fields["in_flight"]; !ok && !counted {
			counted = true
		}
	}
	if counted { // some worker does not publish in_flight: count its ACTIVE tasks
		byWorker, err := s.activeByWorker(ctx)
		if err != nil {
			return nil, storeErr("", err)
		}
		for i, w := range raw {
			if _, ok := w.Fields["in_flight"]; !ok {
				out[i].InFlight = byWorker[w.ID]
			}
		}
	}
	return out, nil
}

// maxActiveScan bounds the ACTIVE tasks read to count in-flight tasks per
// worker (ACTIVE tasks are bounded by the fleet's total concurrency).
const maxActiveScan = 10000

// activeByWorker counts ACTIVE tasks by the worker holding them.
func (s *Service) activeByWorker(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for off := 0; off < maxActiveScan; off += MaxPageSize {
		pg, err := s.st.ListByState(ctx, task.StateActive, store.ListOptions{Offset: off, Limit: MaxPageSize})
		if err != nil {
			return nil, err
		}
		for _, t := range pg.Tasks {
			if t.State == task.StateActive {
				out[t.Worker]++
			}
		}
		if int64(off+MaxPageSize) >= pg.Total {
			break
		}
	}
	return out, nil
}

// workerFromFields reads what a worker publishes about itself (see the
// worker package): concurrency, in_flight, started_at (unix ms), host,
// types (a JSON array) and breakers (the breaker package's snapshots: a
// JSON array of {dependency, state}, or an object dependency → state).
// Unknown or missing fields are left zero.
func workerFromFields(w store.WorkerInfo, now time.Time) WorkerInfo {
	f := w.Fields
	last := time.UnixMilli(w.LastSeen).UTC()
	wi := WorkerInfo{ID: w.ID, LastHeartbeat: last, HeartbeatAge: now.Sub(last).Seconds(), Host: f["host"],
		Breakers: map[string]string{}}
	wi.Concurrency, _ = strconv.Atoi(f["concurrency"])
	wi.InFlight, _ = strconv.Atoi(firstNonEmpty(f["in_flight"], f["inflight"]))
	if ms, err := strconv.ParseInt(f["started_at"], 10, 64); err == nil {
		wi.StartedAt = time.UnixMilli(ms).UTC()
	} else if t, err := time.Parse(time.RFC3339Nano, f["started_at"]); err == nil {
		wi.StartedAt = t
	}
	if tt := firstNonEmpty(f["task_types"], f["types"]); tt != "" {
		if json.Unmarshal([]byte(tt), &wi.TaskTypes) != nil { // a JSON array, or comma-separated
			wi.TaskTypes = strings.Split(tt, ",")
		}
	}
	if b := firstNonEmpty(f["breakers"], f["breaker"]); b != "" {
		var snaps []struct {
			Dependency string `json:"dependency"`
			State      string `json:"state"`
		}
		if json.Unmarshal([]byte(b), &snaps) == nil {
			for _, sn := range snaps {
				wi.Breakers[sn.Dependency] = sn.State
			}
		}
		var m map[string]any
		if json.Unmarshal([]byte(b), &m) == nil {
			for dep, v := range m {
				switch x := v.(type) {
				case string:
					wi.Breakers[dep] = x
				case map[string]any:
					if st, ok := x["state"].(string); ok {
						wi.Breakers[dep] = st
					}
				}
			}
		}
	}
	return wi
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
