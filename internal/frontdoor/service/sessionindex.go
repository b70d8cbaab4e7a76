package service

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/task"
)

// sessionIndex walks a session's task index — one ZSET per partition
// (store.SessionTasksKeys; member task id, score created-at ms) — as one
// index: merged in score order, newest first (oldest first when asc),
// ties in the order ZREVRANGE (ZRANGE) gives them, an id indexed in two
// partitions once. With one partition it pages the one ZSET as before.
type sessionIndex struct {
	rdb  redis.UniversalClient
	keys []string
	asc  bool
	buf  [][]redis.Z // read, not yet taken, per key
	off  []int64     // the next offset to read, per key
	done []bool      // the key has nothing more to read
	seen map[string]bool
}

func (s *Service) sessionIndex(sessionID string, asc bool) *sessionIndex {
	keys := s.st.SessionTasksKeys(sessionID)
	return &sessionIndex{rdb: s.rdb, keys: keys, asc: asc, buf: make([][]redis.Z, len(keys)),
		off: make([]int64, len(keys)), done: make([]bool, len(keys)), seen: map[string]bool{}}
}

// next takes the next n entries of the merge: their ids (the duplicates
// of ids taken before left out), and whether any entry is left. Each key is read MaxPageSize entries at a time, all in
// one pipelined round trip (one ZRANGE per partition: a cluster has them
// in different slots).
func (x *sessionIndex) next(ctx context.Context, n int) (ids []string, more bool, err error) {
	pipe := x.rdb.Pipeline()
	cmds := make([]*redis.ZSliceCmd, len(x.keys))
	for i, k := range x.keys {
		if !x.done[i] && len(x.buf[i]) < n { // then a read keeps every head in view for n takes
			if x.asc {
				cmds[i] = pipe.ZRangeWithScores(ctx, k, x.off[i], x.off[i]+MaxPageSize-1)
			} else {
				cmds[i] = pipe.ZRevRangeWithScores(ctx, k, x.off[i], x.off[i]+MaxPageSize-1)
			}
		}
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx)
		for i, c := range cmds {
			if c == nil {
				continue
			}
			zs, err := c.Result()
			if err != nil {
				return nil, false, err
			}
			x.buf[i] = append(x.buf[i], zs...)
			x.off[i] += int64(len(zs))
			x.done[i] = len(zs) < MaxPageSize
		}
	}
	for taken := 0; taken < n; taken++ {
		best := -1
		for i, b := range x.buf {
			if len(b) > 0 && (best < 0 || x.before(b[0], x.buf[best][0])) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		z := x.buf[best][0]
		x.buf[best] = x.buf[best][1:]
		id, _ := z.Member.(string)
		if x.seen[id] {
			continue
		}
		x.seen[id] = true
		ids = append(ids, id)
	}
	for i := range x.keys {
		if len(x.buf[i]) > 0 || !x.done[i] {
			more = true
		}
	}
	return ids, more, nil
}

func (x *sessionIndex) before(a, b redis.Z) bool {
	am, _ := a.Member.(string)
	bm, _ := b.Member.(string)
	if x.asc {
		return a.Score < b.Score || (a.Score == b.Score && am < bm)
	}
	return a.Score > b.Score || (a.Score == b.Score && am > bm)
}

// listSession pages a session's own tasks from its task index.
func (s *Service) listSession(ctx context.Context, sessionID string, q listQuery) (listing, error) {
	idx := s.sessionIndex(sessionID, q.asc)
	var all []*task.Task
	var missing []string
	waiting := map[string][]string{}
	partial := false
	for read := 0; ; read += MaxPageSize {
		ids, more, err := idx.next(ctx, MaxPageSize)
		if err != nil {
			return listing{}, err
		}
		ts, err := s.st.GetMany(ctx, ids)
		if err != nil {
			return listing{}, err
		}
		found := make(map[string]bool, len(ts))
		for _, t := range ts {
			found[t.ID] = true
			if q.match(t) {
				all = append(all, t)
			}
		}
		var absent []string
		for _, id := range ids {
			if !found[id] {
				absent = append(absent, id)
			}
		}
		// tasks waiting on others are listed as PENDING, and stay indexed
		parked, err := s.parkedViews(ctx, absent)
		if err != nil {
			return listing{}, err
		}
		for _, id := range absent {
			if v, ok := parked[id]; ok {
				if q.match(v.Task) {
					all = append(all, v.Task)
					waiting[id] = v.WaitingOn
				}
				continue
			}
			missing = append(missing, id)
		}
		if !more {
			break
		}
		if read+MaxPageSize >= MaxMergeWindow {
			partial = true
			break
		}
	}
	// deleted or expired tasks: drop them from the index
	_ = s.st.UnindexSessionTasks(ctx, sessionID, missing...)
	sortTasks(all, q)
	total := int64(len(all))
	if q.offset >= len(all) {
		return listing{waiting: waiting, total: total, partial: partial}, nil
	}
	return listing{tasks: all[q.offset:min(len(all), q.offset+q.size)], waiting: waiting, total: total, partial: partial}, nil
}

// SessionSummary is a live session in the admin's listing: when it
// started and ends, and how many tasks its index holds.
type SessionSummary struct {
	ID        string    `json:"session_id"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Tasks     int64     `json:"tasks" jsonschema:"entries of its task index (tasks deleted since may still count until its listing drops them)"`
}

// SessionList is GET /api/v1/sessions.
type SessionList struct {
	Sessions []SessionSummary `json:"sessions" jsonschema:"the newest first"`
	Count    int              `json:"count" jsonschema:"sessions in this answer"`
	Total    int64            `json:"total" jsonschema:"live sessions in all"`
}

// DefaultSessionList and MaxSessionList bound a listing of sessions.
const (
	DefaultSessionList = 100
	MaxSessionList     = 1000
)

// Sessions lists the live sessions, newest first, each with the size of
// its task index (operator): what the dashboard's session picker offers.
// limit 0 means DefaultSessionList.
func (s *Service) Sessions(ctx context.Context, p auth.Principal, limit int) (SessionList, error) {
	if err := requireAdmin(p); err != nil {
		return SessionList{}, err
	}
	if limit == 0 {
		limit = DefaultSessionList
	}
	if limit < 1 || limit > MaxSessionList {
		return SessionList{}, Invalid("invalid_parameter", "limit", "limit must be between 1 and %d", MaxSessionList)
	}
	infos, total, err := s.cfg.Auth.Sessions(ctx, limit)
	if err != nil {
		return SessionList{}, storeErr("", err)
	}
	out := SessionList{Sessions: make([]SessionSummary, len(infos)), Count: len(infos), Total: total}
	cards := make([][]*redis.IntCmd, len(infos))
	if len(infos) > 0 {
		if _, err := s.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
			for i, si := range infos {
				for _, k := range s.st.SessionTasksKeys(si.ID) {
					cards[i] = append(cards[i], pl.ZCard(ctx, k))
				}
			}
			return nil
		}); err != nil {
			return SessionList{}, storeErr("", err)
		}
	}
	for i, si := range infos {
		out.Sessions[i] = SessionSummary{ID: si.ID, CreatedAt: si.CreatedAt, ExpiresAt: si.ExpiresAt}
		for _, c := range cards[i] {
			out.Sessions[i].Tasks += c.Val()
		}
	}
	return out, nil
}
