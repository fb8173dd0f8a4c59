package throttle

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lib.lua
	libLua string
	//go:embed allow.lua
	allowLua string
	//go:embed reserve.lua
	reserveLua string
	//go:embed release.lua
	releaseLua string
	//go:embed status.lua
	statusLua string
)

// scripts are built per limiter (redis.Script caches its digest under a
// lock, so they are not package-level state).
type scripts struct {
	allow, reserve, release, status *redis.Script
}

func newScripts() scripts {
	return scripts{
		allow:   redis.NewScript(libLua + allowLua),
		reserve: redis.NewScript(libLua + reserveLua),
		release: redis.NewScript(libLua + releaseLua),
		status:  redis.NewScript(libLua + statusLua),
	}
}
