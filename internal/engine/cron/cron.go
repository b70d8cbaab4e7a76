// Package cron runs recurring tasks: a schedule is a standard 5-field cron
// expression plus the task to create at each due time. Any number of
// schedulers may run: the task of a due time has a deterministic id
// (cron-<schedule>-<unix seconds>), and the store refuses a second task
// with the same id, so each due time fires exactly once.
package cron

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	rcron "github.com/robfig/cron/v3"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/task"
)

//go:embed scripts/advance.lua
var advanceLua string

// advanceScript moves a schedule's last-handled marker forward only.
var advanceScript = redis.NewScript(advanceLua)

// Schedule is one recurring task.
type Schedule struct {
	ID string `json:"id"`
	// Expr is a standard cron expression (minute hour dom month dow), or a
	// descriptor such as @hourly or @every 30s.
	Expr     string          `json:"expr"`
	TaskType string          `json:"task_type"`
	Params   json.RawMessage `json:"params,omitempty"`
	// Content is the input text of each task (e.g. summarize's).
	Content   string        `json:"content,omitempty"`
	SessionID string        `json:"session_id,omitempty"`
	Priority  task.Priority `json:"priority,omitempty"`
	// TimeoutSeconds bounds each run; 0 means the worker's default.
	TimeoutSeconds int       `json:"timeout,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

// ParseExpr parses a 5-field cron expression (UTC) or a descriptor
// (@hourly, @every 30s) and checks that it comes due at least once after
// now: "0 0 30 2 *" (30 February) parses but would never fire, so it is
// refused. The parser's panics on odd input become errors.
func ParseExpr(expr string, now time.Time) (sched rcron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("unparsable: %v", r)
		}
	}()
	sched, err = rcron.ParseStandard(expr)
	if err != nil {
		return nil, err
	}
	if sched.Next(now).IsZero() {
		return nil, ErrNeverDue
	}
	return sched, nil
}

// ErrNeverDue is ParseExpr's error for an expression with no due time.
var ErrNeverDue = errors.New("never comes due (no such date in the next five years, e.g. 30 February)")

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid schedule")

var idRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate says what is wrong with s.
func (s Schedule) Validate() error {
	if !idRe.MatchString(s.ID) {
		return fmt.Errorf("%w: id %q must be 1–64 of A-Z a-z 0-9 _ -", ErrInvalid, s.ID)
	}
	if _, err := ParseExpr(s.Expr, time.Now()); err != nil {
		return fmt.Errorf("%w: expr %q: %v", ErrInvalid, s.Expr, err)
	}
	if s.TaskType == "" {
		return fmt.Errorf("%w: task_type is required", ErrInvalid)
	}
	if _, err := task.ParsePriority(string(s.Priority)); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if s.TimeoutSeconds < 0 {
		return fmt.Errorf("%w: timeout is negative", ErrInvalid)
	}
	return nil
}

// Config configures a Cron.
type Config struct {
	// Interval between ticks. Default 1s.
	Interval time.Duration
	// MaxCatchUp is the most missed due times one schedule fires in a tick
	// (after downtime, older ones are skipped). Default 1.
	MaxCatchUp int
	// Clock gives now. Default clock.Real{}.
	Clock clock.Clock
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
}

// Cron stores schedules and fires them.
type Cron struct {
	st  *store.Store
	rdb redis.UniversalClient
	cfg Config
	k   keys
}

// New returns a Cron over st.
func New(st *store.Store, cfg Config) *Cron {
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.MaxCatchUp == 0 {
		cfg.MaxCatchUp = 1
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Cron{st: st, rdb: st.Client(), cfg: cfg, k: newKeys(st.Namespace())}
}

// Put creates or replaces a schedule; due times from now on fire.
func (c *Cron) Put(ctx context.Context, s Schedule) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = c.cfg.Clock.Now().UTC()
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, c.k.schedules(), s.ID, b)
		p.HSet(ctx, c.k.last(), s.ID, s.CreatedAt.UnixMilli())
		return nil
	})
	return err
}

// Remove deletes a schedule.
func (c *Cron) Remove(ctx context.Context, id string) error {
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HDel(ctx, c.k.schedules(), id)
		p.HDel(ctx, c.k.last(), id)
		return nil
	})
	return err
}

// List returns every schedule.
func (c *Cron) List(ctx context.Context) ([]Schedule, error) {
	m, err := c.rdb.HGetAll(ctx, c.k.schedules()).Result()
	if err != nil {
		return nil, err
	}
	out := make([]Schedule, 0, len(m))
	for _, v := range m {
		var s Schedule
		if json.Unmarshal([]byte(v), &s) == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// TaskID is the id of the task a schedule creates for one due time.
func TaskID(scheduleID string, due time.Time) string {
	return "cron-" + scheduleID + "-" + strconv.FormatInt(due.Unix(), 10)
}

// Tick fires every due time up to now not fired yet (at most MaxCatchUp per
// schedule, the latest ones) and returns the tasks it created.
func (c *Cron) Tick(ctx context.Context) ([]string, error) {
	now := c.cfg.Clock.Now()
	scheds, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	lasts, err := c.rdb.HGetAll(ctx, c.k.last()).Result()
	if err != nil {
		return nil, err
	}
	var created []string
	for _, s := range scheds {
		sched, err := rcron.ParseStandard(s.Expr)
		if err != nil {
			continue
		}
		from := s.CreatedAt
		if ms, err := strconv.ParseInt(lasts[s.ID], 10, 64); err == nil && ms > from.UnixMilli() {
			from = time.UnixMilli(ms)
		}
		var due []time.Time
		for t := sched.Next(from); !t.IsZero() && !t.After(now); t = sched.Next(t) { // zero: never due (Feb 31)
			due = append(due, t)
			if len(due) > c.cfg.MaxCatchUp {
				due = due[1:]
			}
		}
		for _, t := range due {
			req := store.EnqueueRequest{ID: TaskID(s.ID, t), Type: s.TaskType, Params: s.Params, Content: s.Content, SessionID: s.SessionID,
				Priority: s.Priority, Timeout: time.Duration(s.TimeoutSeconds) * time.Second}
			_, err := c.st.Enqueue(ctx, req)
			switch {
			case err == nil:
				created = append(created, req.ID)
				c.cfg.Logger.Info("Task created", "task_id", req.ID, "type", s.TaskType, "session", s.SessionID, "schedule", s.ID)
			case errors.Is(err, task.ErrDuplicateTaskID):
				// Another scheduler fired this due time.
			default:
				return created, fmt.Errorf("cron: fire %s: %w", s.ID, err)
			}
		}
		if len(due) > 0 {
			last := due[len(due)-1]
			if _, err := c.advance(ctx, s.ID, last); err != nil {
				return created, err
			}
		}
	}
	return created, nil
}

// advance records due as schedule id's latest handled due time unless a
// later one is recorded or the schedule is gone; it reports whether the
// marker moved.
func (c *Cron) advance(ctx context.Context, id string, due time.Time) (bool, error) {
	n, err := advanceScript.Run(ctx, c.rdb, []string{c.k.last(), c.k.schedules()}, id, due.UnixMilli()).Int()
	return n == 1, err
}

// Run ticks every Interval until ctx ends.
func (c *Cron) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := c.Tick(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("cron tick failed", "err", err)
		}
	}
}

// LastRuns returns, for each schedule id that has fired, the latest due
// time it handled (its task created, or found already created); a
// schedule that has not fired yet is left out.
func (c *Cron) LastRuns(ctx context.Context, schedules []Schedule) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(schedules) == 0 {
		return out, nil
	}
	ids := make([]string, len(schedules))
	for i, s := range schedules {
		ids[i] = s.ID
	}
	vals, err := c.rdb.HMGet(ctx, c.k.last(), ids...).Result()
	if err != nil {
		return nil, err
	}
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue
		}
		ms, err := strconv.ParseInt(str, 10, 64)
		if err != nil || ms <= schedules[i].CreatedAt.UnixMilli() { // the marker starts at creation
			continue
		}
		out[ids[i]] = time.UnixMilli(ms).UTC()
	}
	return out, nil
}
