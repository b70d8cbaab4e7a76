package plan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/taskflow/taskflow/internal/plan/batch"
	"github.com/taskflow/taskflow/internal/plan/ir"
	"github.com/taskflow/taskflow/internal/plan/registry"
)

// evalError is a failure of the plan's own computation on this request's
// data (not of Redis or the engine): it matches ir.ErrEval, so the HTTP
// endpoint answers 422 and a plan task fails for good instead of retrying,
// and its message is the reference's, without a prefix.
type evalError string

func (e evalError) Error() string        { return string(e) }
func (e evalError) Is(target error) bool { return target == ir.ErrEval }

func buildVM(cc *compileCtx, n *Node) (execFn, error) {
	exprID := n.Params.str("expr_id")
	prog := cc.exprs[exprID]
	if prog == nil {
		return nil, fmt.Errorf("unknown expr_id '%s'", exprID)
	}
	keyID := int(n.Params.int("out_key"))
	key := cc.reg.Keys[keyID]
	switch {
	case key == nil:
		return nil, fmt.Errorf("out_key %d is not a registered key", keyID)
	case key.ID == registry.IDKey || !key.Writable():
		return nil, fmt.Errorf("out_key %d (%s) is not writable", keyID, key.Name)
	case key.Type != registry.TypeFloat:
		return nil, fmt.Errorf("out_key %d (%s) is a %s key; vm writes float keys", keyID, key.Name, key.Type)
	}
	nullable := key.Nullable
	return func(_ context.Context, nr *nodeRun, in []batch.RowSet) (batch.RowSet, error) {
		src := in[0]
		f, err := prog.Bind(src.Batch, nr.r.req.Params)
		if err != nil {
			return batch.RowSet{}, err
		}
		n := src.Batch.Len()
		col := &batch.FloatCol{Vals: make([]float64, n), Valid: make([]bool, n)}
		if old := src.Batch.Float(keyID); old != nil {
			copy(col.Vals, old.Vals)
			copy(col.Valid, old.Valid)
		}
		m := src.Len()
		for i := 0; i < m; i++ {
			r := src.Row(i)
			v, ok := prog.Eval(f, r)
			if !ok {
				if !nullable {
					return batch.RowSet{}, evalError(fmt.Sprintf("vm: null written to non-nullable key '%s' (row id %d)", key.Name, src.Batch.IDs[r]))
				}
				col.Vals[r], col.Valid[r] = 0, false
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return batch.RowSet{}, evalError(fmt.Sprintf("vm: non-finite result %v for key '%s' (row id %d)", v, key.Name, src.Batch.IDs[r]))
			}
			col.Vals[r], col.Valid[r] = v, true
		}
		return src.WithBatch(src.Batch.WithFloat(keyID, col)), nil
	}, nil
}

func buildFilter(cc *compileCtx, n *Node) (execFn, error) {
	predID := n.Params.str("pred_id")
	prog := cc.preds[predID]
	if prog == nil {
		return nil, fmt.Errorf("unknown pred_id '%s'", predID)
	}
	return func(_ context.Context, nr *nodeRun, in []batch.RowSet) (batch.RowSet, error) {
		src := in[0]
		f, err := prog.Bind(src.Batch, nr.r.req.Params)
		if err != nil {
			return batch.RowSet{}, err
		}
		m := src.Len()
		idx := make([]int32, 0, m)
		for i := 0; i < m; i++ {
			r := src.Row(i)
			if prog.Test(f, r) {
				idx = append(idx, r)
			}
		}
		return src.WithIndex(idx), nil
	}, nil
}

func buildSort(cc *compileCtx, n *Node) (execFn, error) {
	keyID := int(n.Params.int("by"))
	key := cc.reg.Keys[keyID]
	if key == nil {
		return nil, fmt.Errorf("sort key %d is not a registered key", keyID)
	}
	if key.ID != registry.IDKey && key.Type != registry.TypeFloat && key.Type != registry.TypeString {
		return nil, fmt.Errorf("sort key %d (%s) is a %s key; sort takes id, float and string keys", keyID, key.Name, key.Type)
	}
	desc := n.Params.str("order") == "desc"
	return func(_ context.Context, _ *nodeRun, in []batch.RowSet) (batch.RowSet, error) {
		src := in[0]
		idx := src.Rows()
		b := src.Batch
		var c func(x, y int32) int
		switch {
		case keyID == registry.IDKey:
			c = func(x, y int32) int { return cmp.Compare(b.IDs[x], b.IDs[y]) }
		case key.Type == registry.TypeFloat:
			col := b.Float(keyID)
			if col == nil {
				return src.WithIndex(idx), nil // every value null: order unchanged
			}
			c = nullsLast(col.Valid, desc, func(x, y int32) int { return cmp.Compare(col.Vals[x], col.Vals[y]) })
		default:
			col := b.String(keyID)
			if col == nil {
				return src.WithIndex(idx), nil
			}
			c = nullsLast(col.Valid, desc, func(x, y int32) int { return cmp.Compare(col.Vals[x], col.Vals[y]) })
		}
		if desc && keyID == registry.IDKey {
			asc := c
			c = func(x, y int32) int { return asc(y, x) }
		}
		slices.SortStableFunc(idx, c)
		return src.WithIndex(idx), nil
	}, nil
}

// nullsLast orders nulls after every value in both directions; values
// compare by less, reversed when desc. Ties keep their order (stable sort).
func nullsLast(valid []bool, desc bool, less func(x, y int32) int) func(x, y int32) int {
	return func(x, y int32) int {
		vx, vy := valid[x], valid[y]
		switch {
		case !vx && !vy:
			return 0
		case !vx:
			return 1
		case !vy:
			return -1
		}
		if desc {
			return less(y, x)
		}
		return less(x, y)
	}
}

func buildTake(_ *compileCtx, n *Node) (execFn, error) {
	count := int(n.Params.int("count"))
	return func(_ context.Context, _ *nodeRun, in []batch.RowSet) (batch.RowSet, error) {
		src := in[0]
		if src.Len() <= count {
			return src, nil
		}
		if src.Index == nil {
			idx := make([]int32, count)
			for i := range idx {
				idx[i] = int32(i)
			}
			return src.WithIndex(idx), nil
		}
		return src.WithIndex(src.Index[:count:count]), nil
	}, nil
}

func buildConcat(_ *compileCtx, _ *Node) (execFn, error) {
	return func(_ context.Context, _ *nodeRun, in []batch.RowSet) (batch.RowSet, error) {
		return batch.Concat(in[0], in[1]), nil
	}, nil
}

func buildBusyCPU(_ *compileCtx, n *Node) (execFn, error) {
	d := time.Duration(n.Params.int("busy_wait_ms")) * time.Millisecond
	return func(ctx context.Context, nr *nodeRun, in []batch.RowSet) (batch.RowSet, error) {
		start := time.Now()
		x := 0
		for time.Since(start) < d {
			for i := 0; i < 10_000; i++ {
				x += i
			}
			if ctx.Err() != nil {
				return batch.RowSet{}, ctx.Err()
			}
		}
		if x < 0 {
			return batch.RowSet{}, errors.New("unreachable")
		}
		return in[0], nil
	}, nil
}
