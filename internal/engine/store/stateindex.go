package store

import (
	"context"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/task"
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
	if err := s.readDown(nil); err != nil {
		return nil, 0, err
	}
	start, stop := int64(opts.Offset), int64(opts.Offset+opts.Limit-1)
	if len(s.parts) > 1 {
		start = 0 // each partition's first Offset+Limit: enough for the merged page
	}
	pipe := s.rdb.Pipeline()
	zs := make([]*redis.ZSliceCmd, len(s.parts))
	ns := make([]*redis.IntCmd, len(s.parts))
	for p, k := range s.parts {
		key := k.stateIndex(state)
		if opts.Oldest {
			zs[p] = pipe.ZRangeWithScores(ctx, key, start, stop)
		} else {
			zs[p] = pipe.ZRevRangeWithScores(ctx, key, start, stop)
		}
		ns[p] = pipe.ZCard(ctx, key)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("store: index %s: %w", state, err)
	}
	var total int64
	var out []IndexEntry
	for p := range s.parts {
		total += ns[p].Val()
		for _, z := range zs[p].Val() {
			id, _ := z.Member.(string)
			out = append(out, IndexEntry{ID: id, Score: int64(z.Score)})
		}
	}
	if len(s.parts) == 1 {
		return out, total, nil
	}
	// several partitions: merge by score (ties by id, so pages are stable)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return (a.Score < b.Score) == opts.Oldest
		}
		return (a.ID < b.ID) == opts.Oldest
	})
	if opts.Offset >= len(out) {
		return []IndexEntry{}, total, nil
	}
	return out[opts.Offset:min(len(out), opts.Offset+opts.Limit)], total, nil
}
