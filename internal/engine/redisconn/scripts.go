package redisconn

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ScriptCall is one call of a script in RunScripts: its keys and args.
type ScriptCall struct {
	Keys []string
	Args []any
}

// RunScripts runs script once per call in one round trip (EVALSHA in a
// pipeline) and returns each call's reply, in order. A call the server
// answered NOSCRIPT (its script cache was flushed: the call did not run)
// is run again alone with Script.Run, which loads the script; any other
// error stays the call's own. The pipeline is not a transaction: each call
// is atomic by itself, as with separate calls.
func RunScripts(ctx context.Context, rdb redis.Scripter, script *redis.Script, calls []ScriptCall) []*redis.Cmd {
	out := make([]*redis.Cmd, len(calls))
	if len(calls) == 0 {
		return out
	}
	p, ok := rdb.(interface{ Pipeline() redis.Pipeliner })
	if !ok || len(calls) == 1 {
		for i, c := range calls {
			out[i] = script.Run(ctx, rdb, c.Keys, c.Args...)
		}
		return out
	}
	pipe := p.Pipeline()
	for i, c := range calls {
		out[i] = script.EvalSha(ctx, pipe, c.Keys, c.Args...)
	}
	_, _ = pipe.Exec(ctx) // each command keeps its own error
	for i, c := range calls {
		if err := out[i].Err(); err != nil && isNoScript(err) {
			out[i] = script.Run(ctx, rdb, c.Keys, c.Args...)
		}
	}
	return out
}

func isNoScript(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// EvalStrings runs the script call cmd — "evalsha", the script's hash, the
// number of keys, the keys, the arguments (EvalCmd starts one) — of a
// script that answers an array of strings (false elements read as ""),
// read straight into a []string: Script.Run reads every element into an
// interface value first, two allocations each. A server that does not have
// the script (NOSCRIPT: the call did not run) loads it, and the call is
// made once more.
func EvalStrings(ctx context.Context, rdb redis.UniversalClient, script *redis.Script, cmd []any) ([]string, error) {
	c, err := eval(ctx, rdb, script, func() *redis.StringSliceCmd { return redis.NewStringSliceCmd(ctx, cmd...) })
	return c.Val(), err
}

// EvalInt is EvalStrings for a script that answers an integer.
func EvalInt(ctx context.Context, rdb redis.UniversalClient, script *redis.Script, cmd []any) (int64, error) {
	c, err := eval(ctx, rdb, script, func() *redis.IntCmd { return redis.NewIntCmd(ctx, cmd...) })
	return c.Val(), err
}

// eval processes the command mk makes, then once more after loading the
// script when the server did not have it.
func eval[C redis.Cmder](ctx context.Context, rdb redis.UniversalClient, script *redis.Script, mk func() C) (C, error) {
	c := mk()
	err := rdb.Process(ctx, c)
	if err != nil && isNoScript(err) {
		if err = script.Load(ctx, rdb).Err(); err != nil {
			return c, err
		}
		c = mk()
		err = rdb.Process(ctx, c)
	}
	return c, err
}

// EvalCmd starts EvalStrings' call of script with keys, with room for
// args arguments to be appended.
func EvalCmd(script *redis.Script, keys []string, args int) []any {
	cmd := EvalHead(script, len(keys), len(keys)+args)
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return cmd
}

// EvalHead starts the call of script with nkeys keys — EVALSHA, its hash,
// nkeys — with room for size more values (the keys, then the arguments),
// for a caller that appends its keys as it goes.
func EvalHead(script *redis.Script, nkeys, size int) []any {
	return append(make([]any, 0, 3+size), "evalsha", script.Hash(), nkeys)
}

// Boxed boxes a call's values once per run of equal ones: the same key or
// argument repeated from one item of a batch to the next is one interface
// value, not one allocation each.
type Boxed[T comparable] struct {
	last T
	v    any
}

// Of is x as an interface value, the previous one when x equals it.
func (b *Boxed[T]) Of(x T) any {
	if b.v == nil || x != b.last {
		b.last, b.v = x, x
	}
	return b.v
}
