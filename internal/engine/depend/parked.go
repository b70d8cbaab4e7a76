package depend

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/task"
)

// Parked is a task waiting for others, as readers see it before it exists
// in the store.
type Parked struct {
	// Request is the task as it will be created.
	Request store.EnqueueRequest
	// After lists the tasks it waits for.
	After []string
	// Since is when it was parked.
	Since time.Time
}

// Parked returns those of ids that are parked, by id (one round trip).
func (g *Graph) Parked(ctx context.Context, ids []string) (map[string]Parked, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	gets := make([]*redis.StringCmd, len(ids))
	scores := make([]*redis.FloatCmd, len(ids))
	_, err := g.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			gets[i] = p.Get(ctx, g.k.waiting(id))
			scores[i] = p.ZScore(ctx, g.k.pending(), id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := map[string]Parked{}
	for i, id := range ids {
		raw, err := gets[i].Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var p parked
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		pk := Parked{Request: p.Request, After: p.After}
		if ms, err := scores[i].Result(); err == nil {
			pk.Since = time.UnixMilli(int64(ms))
		}
		out[id] = pk
	}
	return out, nil
}

// missingNotParked lists the ids of want that are neither among got (the
// stored tasks) nor parked.
func (g *Graph) missingNotParked(ctx context.Context, want []string, got []*task.Task) ([]string, error) {
	have := make(map[string]bool, len(got))
	for _, t := range got {
		have[t.ID] = true
	}
	var missing []string
	for _, id := range want {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	pks, err := g.Parked(ctx, missing)
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, id := range missing {
		if _, ok := pks[id]; !ok {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	// A parked task is created before it is unparked: one released between
	// the two reads above exists now.
	late, err := g.st.GetMany(ctx, gone)
	if err != nil {
		return nil, err
	}
	have = make(map[string]bool, len(late))
	for _, t := range late {
		have[t.ID] = true
	}
	out := gone[:0]
	for _, id := range gone {
		if !have[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// Cancel ends the parked task id: it is created and cancelled at once (as
// when a dependency fails), so it exists, CANCELLED, for its owner to see;
// then it is unparked. It reports false when id is not parked. A release
// racing with it is harmless: the task is created once (the store refuses
// a second) and the cancel applies to it.
func (g *Graph) Cancel(ctx context.Context, id string) (bool, error) {
	pks, err := g.Parked(ctx, []string{id})
	if err != nil {
		return false, err
	}
	pk, ok := pks[id]
	if !ok {
		return false, nil
	}
	if _, err := g.st.Enqueue(ctx, pk.Request); err != nil && !errors.Is(err, task.ErrDuplicateTaskID) {
		return false, err
	}
	if _, err := g.st.Cancel(ctx, id); err != nil && !errors.Is(err, task.ErrWrongState) {
		return false, err
	}
	_, err = g.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, g.k.waiting(id))
		p.ZRem(ctx, g.k.pending(), id)
		for _, d := range pk.After {
			p.SRem(ctx, g.k.waiters(d), id)
		}
		return nil
	})
	return true, err
}

// ParkedIDs pages the ids of the parked tasks by when they were parked
// (newest first, or oldest with oldest), with how many are parked in all.
func (g *Graph) ParkedIDs(ctx context.Context, offset, limit int, oldest bool) ([]string, int64, error) {
	var ids *redis.StringSliceCmd
	var total *redis.IntCmd
	stop := int64(offset + limit - 1)
	_, err := g.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if oldest {
			ids = p.ZRange(ctx, g.k.pending(), int64(offset), stop)
		} else {
			ids = p.ZRevRange(ctx, g.k.pending(), int64(offset), stop)
		}
		total = p.ZCard(ctx, g.k.pending())
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return ids.Val(), total.Val(), nil
}
