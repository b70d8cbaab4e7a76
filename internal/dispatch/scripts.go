package dispatch

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/admit.lua
var admitLua string

var admitScript = redis.NewScript(admitLua)
