package plan

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/taskflow/taskflow/internal/plan/batch"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

func buildViewer(cc *compileCtx, n *Node) (execFn, error) {
	epID, err := cc.endpoint(n, "redis")
	if err != nil {
		return nil, err
	}
	countryKey := cc.countryKey()
	dead := cc.columnsDead(n)
	return func(ctx context.Context, nr *nodeRun, _ []batch.RowSet) (batch.RowSet, error) {
		uid := nr.r.req.UserID
		ids := []int64{uid}
		if dead && !nr.r.e.cfg.ReadDeadColumns {
			// Only ops making new rows read the viewer: its id is all
			// they use.
			return batch.Of(batch.New(ids)), nil
		}
		ep, err := nr.r.e.endpoint(epID)
		if err != nil {
			return batch.RowSet{}, err
		}
		countries, err := nr.hydrate(ctx, ep, ids)
		if err != nil {
			return batch.RowSet{}, fmt.Errorf("viewer: %w", err)
		}
		b := batch.New(ids)
		if countryKey != 0 {
			b = b.WithString(countryKey, countries)
		}
		return batch.Of(b), nil
	}, nil
}

type listKind struct {
	name    string
	key     string // the key kind in keys.go
	hydrate bool
}

var (
	listFollow         = listKind{"follow", followKind, true}
	listRecommendation = listKind{"recommendation", recommendationKind, true}
	listMedia          = listKind{"media", mediaKind, false}
)

// buildList builds follow, recommendation and media: one pipelined LRANGE
// per input row (all rows in one round trip, chunked by the endpoint's
// in-flight limit), then — for users — one pipelined round trip hydrating
// their country. They are steppers: the engine sends the commands of list
// nodes that become ready together in one pipeline (see run.runGroup).
func buildList(kind listKind) builder {
	return func(cc *compileCtx, n *Node) (execFn, error) {
		epID, err := cc.endpoint(n, "redis")
		if err != nil {
			return nil, err
		}
		fanout := n.Params.int("fanout")
		countryKey := cc.countryKey()
		dead := cc.columnsDead(n)
		n.step = func(nr *nodeRun, in []batch.RowSet) (*ioStep, batch.RowSet, error) {
			ep, err := nr.r.e.endpoint(epID)
			if err != nil {
				return nil, batch.RowSet{}, err
			}
			src := in[0]
			prefix := nr.r.e.cfg.KeyPrefix
			keys := idKeys(prefix, kind.key, src.Len(), func(i int) int64 { return src.Batch.IDs[src.Row(i)] })
			b := ep.client.B()
			cmds := make(rueidis.Commands, len(keys))
			for i, k := range keys {
				cmds[i] = b.Lrange().Key(k).Start(0).Stop(fanout - 1).Build()
			}
			return &ioStep{ep: ep, cmds: cmds, next: func(res []rueidis.RedisResult) (*ioStep, batch.RowSet, error) {
				lists := make([][]string, len(res))
				total := 0
				for i, r := range res {
					v, err := r.AsStrSlice()
					if err != nil {
						return nil, batch.RowSet{}, fmt.Errorf("%s: %w", kind.name, err)
					}
					lists[i] = v
					total += len(v)
				}
				ids := make([]int64, 0, total)
				for _, l := range lists {
					for _, s := range l {
						if id, err := strconv.ParseInt(s, 10, 64); err == nil {
							ids = append(ids, id)
						}
					}
				}
				out := batch.New(ids)
				if !kind.hydrate || countryKey == 0 || (dead && !nr.r.e.cfg.ReadDeadColumns) {
					return nil, batch.Of(out), nil
				}
				if len(ids) == 0 {
					return nil, batch.Of(out.WithString(countryKey, &batch.StringCol{Vals: []string{}, Valid: []bool{}})), nil
				}
				return hydrateStep(nr, ep, ids, func(col *batch.StringCol, err error) (*ioStep, batch.RowSet, error) {
					if err != nil {
						return nil, batch.RowSet{}, fmt.Errorf("%s: %w", kind.name, err)
					}
					return nil, batch.Of(out.WithString(countryKey, col)), nil
				}), batch.RowSet{}, nil
			}}, batch.RowSet{}, nil
		}
		return stepExec(n.step), nil
	}
}

// hydrateStep reads the country of each user id in one step.
func hydrateStep(nr *nodeRun, ep *redisEndpoint, ids []int64,
	then func(*batch.StringCol, error) (*ioStep, batch.RowSet, error)) *ioStep {
	keys := idKeys(nr.r.e.cfg.KeyPrefix, userKind, len(ids), func(i int) int64 { return ids[i] })
	b := ep.client.B()
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = b.Hget().Key(k).Field(countryField).Build()
	}
	return &ioStep{ep: ep, cmds: cmds, next: func(res []rueidis.RedisResult) (*ioStep, batch.RowSet, error) {
		col := &batch.StringCol{Vals: make([]string, len(ids)), Valid: make([]bool, len(ids))}
		for i, r := range res {
			v, err := r.ToString()
			if rueidis.IsRedisNil(err) {
				continue
			}
			if err != nil {
				return then(nil, err)
			}
			col.Vals[i], col.Valid[i] = v, true
		}
		return then(col, nil)
	}}
}

// ioStep is one round of an IO node: commands for one endpoint, and what
// to make of their replies (another step, or the node's output).
type ioStep struct {
	ep   *redisEndpoint
	cmds rueidis.Commands
	next func(res []rueidis.RedisResult) (*ioStep, batch.RowSet, error)
}

// stepFn starts an IO node: its first step, or its output at once.
type stepFn func(nr *nodeRun, in []batch.RowSet) (*ioStep, batch.RowSet, error)

// stepExec runs a stepper alone: its steps one after another.
func stepExec(step stepFn) execFn {
	return func(ctx context.Context, nr *nodeRun, in []batch.RowSet) (batch.RowSet, error) {
		st, out, err := step(nr, in)
		for st != nil && err == nil {
			res := make([]rueidis.RedisResult, len(st.cmds))
			if err := nr.r.send(ctx, st.ep, st.cmds, res, nr); err != nil {
				return batch.RowSet{}, err
			}
			st, out, err = st.next(res)
		}
		return out, err
	}
}

// send sends cmds to ep in pipelines of at most ep.chunk (the endpoint's
// in-flight limit) commands, one after another, filling res; each of nrs
// is charged the dependent round trips.
func (r *run) send(ctx context.Context, ep *redisEndpoint, cmds rueidis.Commands, res []rueidis.RedisResult, nrs ...*nodeRun) error {
	n := len(cmds)
	if n == 0 {
		return nil
	}
	for _, nr := range nrs {
		nr.roundTrips += (n + ep.chunk - 1) / ep.chunk
	}
	ctx, cancel := ep.bounded(ctx)
	defer cancel()
	for lo := 0; lo < n; lo += ep.chunk {
		hi := min(lo+ep.chunk, n)
		if err := ep.limit.acquire(ctx, int64(hi-lo)); err != nil {
			return err
		}
		copy(res[lo:hi], ep.client.DoMulti(ctx, cmds[lo:hi]...))
		ep.limit.release(int64(hi - lo))
	}
	return nil
}

// countryKey is the key id hydrated from the user hash (0: none registered).
func (cc *compileCtx) countryKey() int {
	if k := cc.reg.KeysByName["country"]; k != nil && k.Type == registry.TypeString {
		return k.ID
	}
	return 0
}

// hydrate reads the country of each user id, pipelined.
func (nr *nodeRun) hydrate(ctx context.Context, ep *redisEndpoint, ids []int64) (*batch.StringCol, error) {
	col := &batch.StringCol{Vals: make([]string, len(ids)), Valid: make([]bool, len(ids))}
	keys := idKeys(nr.r.e.cfg.KeyPrefix, userKind, len(ids), func(i int) int64 { return ids[i] })
	err := nr.pipelined(ctx, ep, len(ids), func(b rueidis.Builder, i int) rueidis.Completed {
		return b.Hget().Key(keys[i]).Field(countryField).Build()
	}, func(i int, r rueidis.RedisResult) error {
		v, err := r.ToString()
		if rueidis.IsRedisNil(err) {
			return nil
		}
		col.Vals[i], col.Valid[i] = v, err == nil
		return err
	})
	return col, err
}

// pipelined sends n commands to ep in pipelines of at most ep.chunk (the
// endpoint's in-flight limit) commands, and counts the node's dependent
// round trips.
func (nr *nodeRun) pipelined(ctx context.Context, ep *redisEndpoint, n int,
	build func(b rueidis.Builder, i int) rueidis.Completed, read func(i int, r rueidis.RedisResult) error) error {
	if n == 0 {
		return nil
	}
	// A chunk holds up to the whole in-flight budget, so chunks follow one
	// another: ⌈n/limit⌉ dependent round trips.
	nr.roundTrips += (n + ep.chunk - 1) / ep.chunk
	b := ep.client.B()
	one := func(lo, hi int) error {
		if err := ep.limit.acquire(ctx, int64(hi-lo)); err != nil {
			return err
		}
		defer ep.limit.release(int64(hi - lo))
		cmds := make(rueidis.Commands, hi-lo)
		for i := lo; i < hi; i++ {
			cmds[i-lo] = build(b, i)
		}
		ctx, cancel := ep.bounded(ctx)
		defer cancel()
		// One DoMulti is one pipeline; commands that other nodes and runs
		// issue at the same moment share its write.
		for i, r := range ep.client.DoMulti(ctx, cmds...) {
			if err := read(lo+i, r); err != nil {
				return err
			}
		}
		return nil
	}
	for lo := 0; lo < n; lo += ep.chunk {
		if err := one(lo, min(lo+ep.chunk, n)); err != nil {
			return err
		}
	}
	return nil
}

func buildSleep(_ *compileCtx, n *Node) (execFn, error) {
	d := time.Duration(n.Params.int("duration_ms")) * time.Millisecond
	failAfter := n.Params.bool("fail_after_sleep")
	return func(ctx context.Context, _ *nodeRun, in []batch.RowSet) (batch.RowSet, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return batch.RowSet{}, ctx.Err()
		}
		if failAfter {
			return batch.RowSet{}, errors.New("sleep: failed after sleeping (fail_after_sleep)")
		}
		return in[0], nil
	}, nil
}

func buildFixedSource(_ *compileCtx, n *Node) (execFn, error) {
	count := n.Params.int("row_count")
	return func(context.Context, *nodeRun, []batch.RowSet) (batch.RowSet, error) {
		ids := make([]int64, count)
		for i := range ids {
			ids[i] = int64(i + 1)
		}
		return batch.Of(batch.New(ids)), nil
	}, nil
}
