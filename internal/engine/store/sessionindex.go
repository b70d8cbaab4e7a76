package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// SessionTasksKeys are the keys of a session's task index (ZSET: task id →
// created at, unix ms), one per partition, written by Enqueue with each
// task of the session in the task's partition. A listing of the session
// merges them.
func (s *Store) SessionTasksKeys(sessionID string) []string {
	out := make([]string, len(s.parts))
	for i, k := range s.parts {
		out[i] = k.sessionTasks(sessionID)
	}
	return out
}

// SessionTasksKeyOf is the session index key that holds task id (its
// partition's).
func (s *Store) SessionTasksKeyOf(sessionID, id string) string {
	return s.part(id).sessionTasks(sessionID)
}

// IndexSessionTask adds task id to its session's task index (its
// partition's key) with score at (unix ms), and makes the index live ttl
// from now. Enqueue indexes each task it creates; this is for a task the
// session should list before the store holds it (one parked until its
// dependencies end, which Enqueue indexes again when it creates it).
func (s *Store) IndexSessionTask(ctx context.Context, sessionID, id string, at time.Time, ttl time.Duration) error {
	if sessionID == "" {
		return nil
	}
	k := s.SessionTasksKeyOf(sessionID, id)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, k, redis.Z{Score: float64(at.UnixMilli()), Member: id})
		p.Expire(ctx, k, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: session index: %w", err)
	}
	return nil
}

// UnindexSessionTasks drops ids from their session's task index, from
// every partition's key (an entry is written in its task's partition's;
// a reader dropping the entries of tasks gone leaves none behind
// elsewhere). Entries of deleted or purged tasks are otherwise left for
// the session's listing to drop.
func (s *Store) UnindexSessionTasks(ctx context.Context, sessionID string, ids ...string) error {
	if sessionID == "" || len(ids) == 0 {
		return nil
	}
	members := make([]any, len(ids))
	for i, id := range ids {
		members[i] = id
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range s.SessionTasksKeys(sessionID) {
			p.ZRem(ctx, k, members...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: session index: %w", err)
	}
	return nil
}
