package cron

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ErrExists: Create found a schedule with that id.
var ErrExists = errors.New("cron: a schedule with this id exists")

// ErrNotFound: Get found no schedule with that id.
var ErrNotFound = errors.New("cron: no such schedule")

// Create adds s unless a schedule with its id exists (ErrExists): two
// callers choosing the same id cannot replace each other's schedule.
func (c *Cron) Create(ctx context.Context, s Schedule) (Schedule, error) {
	if err := s.Validate(); err != nil {
		return Schedule{}, err
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = c.cfg.Clock.Now().UTC()
	}
	b, err := json.Marshal(s)
	if err != nil {
		return Schedule{}, err
	}
	ok, err := c.rdb.HSetNX(ctx, c.k.schedules(), s.ID, b).Result()
	if err != nil {
		return Schedule{}, err
	}
	if !ok {
		return Schedule{}, fmt.Errorf("%w: %q", ErrExists, s.ID)
	}
	// The first due time counts from CreatedAt (Tick's default when this
	// shortcut is missing), so a failure here changes nothing.
	if err := c.rdb.HSet(ctx, c.k.last(), s.ID, s.CreatedAt.UnixMilli()).Err(); err != nil {
		return s, err
	}
	return s, nil
}

// Get returns the schedule id, or ErrNotFound.
func (c *Cron) Get(ctx context.Context, id string) (Schedule, error) {
	raw, err := c.rdb.HGet(ctx, c.k.schedules(), id).Bytes()
	if errors.Is(err, redis.Nil) {
		return Schedule{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if err != nil {
		return Schedule{}, err
	}
	var s Schedule
	if err := json.Unmarshal(raw, &s); err != nil {
		return Schedule{}, fmt.Errorf("cron: schedule %q: %w", id, err)
	}
	return s, nil
}
