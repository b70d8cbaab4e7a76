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
