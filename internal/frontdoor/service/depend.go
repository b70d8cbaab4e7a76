package service

import (
	"context"
	"errors"

	"github.com/taskflow/taskflow/internal/engine/depend"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/task"
)

// submitAfter creates r once the tasks in after have completed
// (internal/engine/depend): at once when they all have, else parked. Every
// dependency must exist and be p's (a session depends only on its own
// tasks; the admin on any).
func (s *Service) submitAfter(ctx context.Context, p auth.Principal, r store.EnqueueRequest, after []string) (Submitted, error) {
	if s.cfg.Dependencies == nil {
		return Submitted{}, Unprocessable("depends_on", "task dependencies are not enabled in this process")
	}
	if len(after) > depend.MaxDependencies {
		return Submitted{}, Unprocessable("depends_on", "depends_on lists %d tasks; at most %d", len(after), depend.MaxDependencies)
	}
	seen := make(map[string]bool, len(after))
	for _, id := range after {
		if err := validTaskID(id); err != nil {
			return Submitted{}, Unprocessable("depends_on", "depends_on: %q is not a valid task id", truncate(id, 64))
		}
		if seen[id] {
			return Submitted{}, Unprocessable("depends_on", "depends_on lists %s twice", id)
		}
		seen[id] = true
	}
	ts, err := s.st.GetMany(ctx, after)
	if err != nil {
		return Submitted{}, storeErr("", err)
	}
	found := make(map[string]*task.Task, len(ts))
	for _, t := range ts {
		found[t.ID] = t
	}
	// A dependency may itself still be parked: it exists, as PENDING.
	var missing []string
	for _, id := range after {
		if found[id] == nil {
			missing = append(missing, id)
		}
	}
	parked, err := s.cfg.Dependencies.Parked(ctx, missing)
	if err != nil {
		return Submitted{}, storeErr("", err)
	}
	for _, id := range after {
		owner := ""
		switch t, pk := found[id], parked[id]; {
		case t != nil:
			owner = t.SessionID
		case pk.Request.ID != "":
			owner = pk.Request.SessionID
		default:
			return Submitted{}, Unprocessable("depends_on", "depends_on: no task %s", id)
		}
		if !p.Admin && owner != p.SessionID { // as a missing task (authorize)
			return Submitted{}, Unprocessable("depends_on", "depends_on: no task %s", id)
		}
	}
	id, err := s.cfg.Dependencies.Submit(ctx, r, after)
	if errors.Is(err, depend.ErrInvalid) {
		return Submitted{}, Unprocessable("depends_on", "%v", err)
	}
	if err != nil {
		return Submitted{}, storeErr("", err)
	}
	if err := s.indexParked(ctx, id, r.SessionID, s.cfg.Now()); err != nil {
		return Submitted{}, storeErr(id, err)
	}
	return Submitted{TaskID: id, State: task.StatePending}, nil
}

// parkedViews returns the views of those of ids that wait on other tasks.
func (s *Service) parkedViews(ctx context.Context, ids []string) (map[string]TaskView, error) {
	if s.cfg.Dependencies == nil || len(ids) == 0 {
		return nil, nil
	}
	pks, err := s.cfg.Dependencies.Parked(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]TaskView, len(pks))
	for id, pk := range pks {
		out[id] = parkedView(id, pk)
	}
	return out, nil
}

// parkedView shows a task waiting on others as PENDING with waiting_on.
func parkedView(id string, pk depend.Parked) TaskView {
	r := pk.Request
	prio := r.Priority
	if prio == "" {
		prio = task.PriorityNormal
	}
	t := &task.Task{ID: id, Type: r.Type, Content: r.Content, Params: r.Params, SessionID: r.SessionID,
		Priority: prio, Timeout: r.Timeout, State: task.StatePending, CreatedAt: pk.Since, UpdatedAt: pk.Since,
		ErrorHistory: []task.ErrorRecord{}, StateHistory: []task.StateChange{}} // [] as a stored task's, not null
	if r.MaxRetries != nil {
		t.MaxRetries = *r.MaxRetries
	}
	return TaskView{Task: t, TimeoutSeconds: r.Timeout.Seconds(), WaitingOn: pk.After}
}

// cancelParked cancels id when it is a task waiting on others that p may
// see (getErr: why it was not found in the store). It reports whether it
// did; a parked task of another session is refused.
func (s *Service) cancelParked(ctx context.Context, p auth.Principal, id string, getErr error) (bool, error) {
	if !errors.Is(getErr, ErrNotFound) || s.cfg.Dependencies == nil {
		return false, nil
	}
	pv, err := s.parkedViews(ctx, []string{id})
	if err != nil {
		return false, storeErr(id, err)
	}
	v, ok := pv[id]
	if !ok {
		return false, nil
	}
	if err := authorize(p, v.Task); err != nil {
		return false, err
	}
	done, err := s.cfg.Dependencies.Cancel(ctx, id)
	if err != nil {
		return false, storeErr(id, err)
	}
	return done, nil
}
