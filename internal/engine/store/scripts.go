package store

import (
	"context"
	"embed"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// load returns the script name.lua with the shared helpers of lib.lua in
// front of it. Scripts run with EVALSHA, falling back to EVAL once.
func load(name string) *redis.Script {
	lib, err := scriptFS.ReadFile("scripts/lib.lua")
	if err != nil {
		panic("store: missing scripts/lib.lua: " + err.Error())
	}
	src, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic("store: missing script " + name + ": " + err.Error())
	}
	return redis.NewScript(string(lib) + "\n" + string(src))
}

// One script per transition (see the header of each .lua file).
var (
	scriptEnqueue      = load("enqueue")
	scriptFetch        = load("fetch")
	scriptComplete     = load("complete")
	scriptFail         = load("fail")
	scriptRelease      = load("release")
	scriptReap         = load("reap")
	scriptPromote      = load("promote")
	scriptCancel       = load("cancel")
	scriptCancelActive = load("cancelactive")
	scriptTimeout      = load("timeout")
	scriptRetry        = load("retry")
	scriptDelete       = load("delete")
	scriptHeartbeat    = load("heartbeat")
	scriptSweep        = load("sweep")
	scriptHandoff      = load("handoff")
	scriptDispatch     = load("dispatch")
	scriptPurge        = load("purge")
	scriptControl      = load("control")
)

// evalStrings runs the script whose call cmd is — "evalsha", its hash,
// the number of keys, the keys, the arguments — for a script that
// answers an array of strings, read straight into a []string (Script.Run
// reads every element into an interface value first: two allocations
// each). A server that does not have the script loads it, and the call is
// made once more.
func evalStrings(ctx context.Context, rdb redis.UniversalClient, sc *redis.Script, cmd []any) ([]string, error) {
	c := redis.NewStringSliceCmd(ctx, cmd...)
	err := rdb.Process(ctx, c)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		if err = sc.Load(ctx, rdb).Err(); err != nil {
			return nil, err
		}
		c = redis.NewStringSliceCmd(ctx, cmd...)
		err = rdb.Process(ctx, c)
	}
	return c.Val(), err
}

// evalCmd starts the call of sc with keys for evalStrings, with room for
// args more arguments.
func evalCmd(sc *redis.Script, keys []string, args int) []any {
	cmd := make([]any, 0, 3+len(keys)+args)
	cmd = append(cmd, "evalsha", sc.Hash(), len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return cmd
}
