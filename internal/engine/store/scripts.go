package store

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// LuaLib is the source of scripts/lib.lua, the helpers every script of
// the store starts with. A script of another package that completes
// attempts together with writes of its own (the outcome consumer's
// settle.lua) starts with it too, and uses its complete_fields,
// complete_code, complete_task and complete_flush with CompletionKeys.
func LuaLib() string {
	lib, err := scriptFS.ReadFile("scripts/lib.lua")
	if err != nil {
		panic("store: missing scripts/lib.lua: " + err.Error())
	}
	return string(lib)
}

// load returns the script name.lua with the shared helpers of lib.lua in
// front of it. Scripts run with EVALSHA, falling back to EVAL once.
func load(name string) *redis.Script {
	src, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic("store: missing script " + name + ": " + err.Error())
	}
	return redis.NewScript(LuaLib() + "\n" + string(src))
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
