package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/task"
)

// IndexEntry is one entry of a per-state index: a task id and its score,
// the unix ms the task entered the state (PENDING: its due time when later;
// ACTIVE: its lease deadline).
type IndexEntry struct {
	ID    string
	Score int64
}

// StateIndex pages the per-state index of state with the scores, in score
// order (newest first unless opts.Oldest), and returns the index's size.
// Listings that sort by a field the index is not ordered by (created_at)
// use the scores to know when they have read enough: every task's
// created_at and updated_at are at most its score. O(log N + page).
func (s *Store) StateIndex(ctx context.Context, state task.State, opts ListOptions) ([]IndexEntry, int64, error) {
	opts, err := opts.norm()
	if err != nil {
		return nil, 0, err
	}
	if _, err := task.ParseState(string(state)); err != nil {
		return nil, 0, &ValidationError{Field: "state", Reason: err.Error()}
	}
	key := s.keys.stateIndex(state)
	start, stop := int64(opts.Offset), int64(opts.Offset+opts.Limit-1)
	pipe := s.rdb.Pipeline()
	var zs *redis.ZSliceCmd
	if opts.Oldest {
		zs = pipe.ZRangeWithScores(ctx, key, start, stop)
	} else {
		zs = pipe.ZRevRangeWithScores(ctx, key, start, stop)
	}
	total := pipe.ZCard(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("store: index %s: %w", state, err)
	}
	out := make([]IndexEntry, 0, len(zs.Val()))
	for _, z := range zs.Val() {
		id, _ := z.Member.(string)
		out = append(out, IndexEntry{ID: id, Score: int64(z.Score)})
	}
	return out, total.Val(), nil
}
