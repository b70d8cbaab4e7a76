package dispatch

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/dispatch.lua
var dispatchLua string

var dispatchScript = redis.NewScript(dispatchLua)

//go:embed scripts/release.lua
var releaseLua string

var releaseScript = redis.NewScript(releaseLua)
