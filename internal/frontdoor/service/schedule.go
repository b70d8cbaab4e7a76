package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/taskflow/taskflow/internal/engine/cron"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/task"
)

// ScheduleInput creates a recurring task: at every due time of Cron a task
// of TaskType with Params is created, owned by the caller's session.
type ScheduleInput struct {
	// ID names the schedule (1–64 of A-Z a-z 0-9 _ -); empty = a new UUID.
	ID string `json:"id,omitempty" openapi:"pattern=^[A-Za-z0-9_-]{1,64}$" jsonschema:"schedule id; absent = a new UUID"`
	// Cron is a 5-field cron expression (minute hour day-of-month month
	// day-of-week, UTC) or a descriptor (@hourly, @daily, @every 30s).
	Cron     string          `json:"cron" openapi:"required;example=*/5 * * * *" jsonschema:"5-field cron expression (UTC) or @hourly, @daily, @every 30s"`
	TaskType string          `json:"task_type" openapi:"required;example=report.generate" jsonschema:"a registered task type"`
	Params   json.RawMessage `json:"params,omitempty" openapi:"type=object" jsonschema:"handler parameters of every task created"`
	// Content is each task's input text (required for summarize).
	Content  *string `json:"content,omitempty" jsonschema:"input text of every task created (required for summarize)"`
	Priority string  `json:"priority,omitempty" openapi:"enum=high|normal|low"`
	// Timeout bounds each run, whole seconds 1..86400; absent = the
	// worker's default.
	Timeout *int `json:"timeout,omitempty" jsonschema:"seconds each run may take, 1..86400"`
}

// ScheduleView is a schedule as the API shows it.
type ScheduleView struct {
	ID        string          `json:"schedule_id"`
	Cron      string          `json:"cron"`
	TaskType  string          `json:"task_type"`
	Params    json.RawMessage `json:"params,omitempty" openapi:"type=object"`
	Content   string          `json:"content,omitempty"`
	Priority  task.Priority   `json:"priority"`
	Timeout   int             `json:"timeout,omitempty" jsonschema:"seconds"`
	SessionID string          `json:"session_id,omitempty" jsonschema:"the owning session"`
	CreatedAt time.Time       `json:"created_at"`
	// NextRunAt is the next due time after now (absent: never due again).
	NextRunAt time.Time `json:"next_run_at,omitzero" jsonschema:"the next due time (absent: never due again)"`
	// LastRunAt is the latest due time it fired for (absent: not yet).
	LastRunAt time.Time `json:"last_run_at,omitzero" jsonschema:"the latest due time it fired for (absent: not yet)"`
}

var scheduleIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (s *Service) schedules() (*cron.Cron, error) {
	if s.cfg.Schedules == nil {
		return nil, Conflict("schedules_unavailable", "recurring schedules are not enabled in this process")
	}
	return s.cfg.Schedules, nil
}

func (s *Service) viewSchedule(sc cron.Schedule) ScheduleView {
	v := ScheduleView{ID: sc.ID, Cron: sc.Expr, TaskType: sc.TaskType, Params: sc.Params, Content: sc.Content, Priority: sc.Priority,
		Timeout: sc.TimeoutSeconds, SessionID: sc.SessionID, CreatedAt: sc.CreatedAt}
	if v.Priority == "" {
		v.Priority = task.PriorityNormal
	}
	if sched, err := cron.ParseExpr(sc.Expr, s.cfg.Now()); err == nil {
		v.NextRunAt = sched.Next(s.cfg.Now()).UTC()
	}
	return v
}

// CreateSchedule validates in and stores the schedule, owned by p's
// session (none for the admin). An id in use is a 409.
func (s *Service) CreateSchedule(ctx context.Context, p auth.Principal, in ScheduleInput) (ScheduleView, error) {
	if err := requirePrincipal(p); err != nil {
		return ScheduleView{}, err
	}
	cr, err := s.schedules()
	if err != nil {
		return ScheduleView{}, err
	}
	sc, err := s.validateSchedule(ctx, in)
	if err != nil {
		return ScheduleView{}, err
	}
	sc.SessionID = p.SessionID
	sc.CreatedAt = s.cfg.Now().UTC()
	id := sc.ID
	sc, err = cr.Create(ctx, sc)
	switch {
	case errors.Is(err, cron.ErrExists):
		return ScheduleView{}, &Error{Kind: KindConflict, Code: "duplicate_schedule_id", Field: "id",
			Message: "a schedule with id " + id + " exists; choose another id or omit it"}
	case errors.Is(err, cron.ErrInvalid):
		return ScheduleView{}, Unprocessable("cron", "%v", err)
	case err != nil:
		return ScheduleView{}, storeErr("", err)
	}
	return s.viewSchedule(sc), nil
}

func (s *Service) validateSchedule(ctx context.Context, in ScheduleInput) (cron.Schedule, error) {
	var sc cron.Schedule
	sc.ID = in.ID
	if sc.ID == "" {
		sc.ID = uuid.NewString()
	} else if !scheduleIDRe.MatchString(sc.ID) {
		return sc, Unprocessable("id", "id must be 1 to 64 of A-Z a-z 0-9 _ - (got %q)", truncate(in.ID, 80))
	}
	sc.Expr = strings.TrimSpace(in.Cron)
	if sc.Expr == "" {
		return sc, Unprocessable("cron", "cron is required: a cron expression like \"*/5 * * * *\" or \"@hourly\"")
	}
	if len(sc.Expr) > 200 {
		return sc, Unprocessable("cron", "cron is longer than 200 characters")
	}
	if strings.HasPrefix(sc.Expr, "TZ=") || strings.HasPrefix(sc.Expr, "CRON_TZ=") {
		return sc, Unprocessable("cron", "cron: time zones are not supported; schedules run in UTC")
	}
	if err := s.parseCron(sc.Expr); err != nil {
		if errors.Is(err, cron.ErrNeverDue) {
			return sc, Unprocessable("cron", "cron %q %v: nothing would ever run", truncate(sc.Expr, 80), err)
		}
		return sc, Unprocessable("cron", "cron %q is not a cron expression (minute hour day-of-month month day-of-week, or @hourly, @every 30s): %v", truncate(sc.Expr, 80), err)
	}
	// The task template is checked as a submit of it would be.
	ti := SubmitInput{TaskType: in.TaskType, Params: in.Params, Content: in.Content, Priority: in.Priority}
	if in.Timeout != nil {
		if *in.Timeout < 1 || *in.Timeout > int(MaxTimeout.Seconds()) {
			return sc, Unprocessable("timeout", "timeout must be whole seconds between 1 and %d (got %d)", int(MaxTimeout.Seconds()), *in.Timeout)
		}
		sc.TimeoutSeconds = *in.Timeout
	}
	r, err := s.validate(ctx, ti)
	if err != nil {
		return sc, err
	}
	sc.TaskType, sc.Priority, sc.Content = r.Type, r.Priority, r.Content
	if len(r.Params) > 0 && !bytes.Equal(r.Params, []byte("null")) {
		sc.Params = r.Params
	}
	return sc, nil
}

// ListSchedules lists p's schedules (the admin: all), oldest first.
func (s *Service) ListSchedules(ctx context.Context, p auth.Principal) ([]ScheduleView, error) {
	if err := requirePrincipal(p); err != nil {
		return nil, err
	}
	cr, err := s.schedules()
	if err != nil {
		return nil, err
	}
	all, err := cr.List(ctx)
	if err != nil {
		return nil, storeErr("", err)
	}
	var mine []cron.Schedule
	for _, sc := range all {
		if p.Admin || sc.SessionID == p.SessionID {
			mine = append(mine, sc)
		}
	}
	last, err := cr.LastRuns(ctx, mine)
	if err != nil {
		return nil, storeErr("", err)
	}
	out := []ScheduleView{}
	for _, sc := range mine {
		v := s.viewSchedule(sc)
		v.LastRunAt = last[sc.ID]
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (s *Service) ownSchedule(ctx context.Context, p auth.Principal, id string) (*cron.Cron, cron.Schedule, error) {
	if err := requirePrincipal(p); err != nil {
		return nil, cron.Schedule{}, err
	}
	cr, err := s.schedules()
	if err != nil {
		return nil, cron.Schedule{}, err
	}
	if !scheduleIDRe.MatchString(id) {
		return nil, cron.Schedule{}, Invalid("invalid_parameter", "schedule_id", "schedule_id %q is not a valid schedule id", truncate(id, 64))
	}
	sc, err := cr.Get(ctx, id)
	if err == nil && !p.Admin && sc.SessionID != p.SessionID {
		err = cron.ErrNotFound // another session's: as a missing one (authorize)
	}
	if errors.Is(err, cron.ErrNotFound) {
		return nil, cron.Schedule{}, &Error{Kind: KindNotFound, Code: "schedule_not_found", Field: "schedule_id", Message: "no schedule " + id}
	}
	if err != nil {
		return nil, cron.Schedule{}, storeErr("", err)
	}
	return cr, sc, nil
}

// GetSchedule returns the schedule id if p may see it.
func (s *Service) GetSchedule(ctx context.Context, p auth.Principal, id string) (ScheduleView, error) {
	cr, sc, err := s.ownSchedule(ctx, p, id)
	if err != nil {
		return ScheduleView{}, err
	}
	last, err := cr.LastRuns(ctx, []cron.Schedule{sc})
	if err != nil {
		return ScheduleView{}, storeErr("", err)
	}
	v := s.viewSchedule(sc)
	v.LastRunAt = last[sc.ID]
	return v, nil
}

// DeleteSchedule removes the schedule id (owner or admin); tasks it
// created stay.
func (s *Service) DeleteSchedule(ctx context.Context, p auth.Principal, id string) error {
	cr, _, err := s.ownSchedule(ctx, p, id)
	if err != nil {
		return err
	}
	if err := cr.Remove(ctx, id); err != nil {
		return storeErr("", err)
	}
	return nil
}

// parseCron checks expr (cron.ParseExpr: it must parse and come due).
func (s *Service) parseCron(expr string) error {
	_, err := cron.ParseExpr(expr, s.cfg.Now())
	return err
}
