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
	//go:embed allow_one.lua
	allowOneLua string
	//go:embed allow_batch.lua
	allowBatchLua string
	//go:embed reserve.lua
	reserveLua string
	//go:embed release.lua
	releaseLua string
	//go:embed status.lua
	statusLua string
)

// scripts are built per limiter (redis.Script caches its digest under a
// lock, so they are not package-level state). Allow's single-user and
// batch scripts share their decision code: allow.lua defines it, the
// allow_one.lua and allow_batch.lua entry points call it. reserve.lua
// takes one request or many.
type scripts struct {
	allow, allowBatch, reserve, release, status *redis.Script
}

func newScripts() scripts {
	return scripts{
		allow:      redis.NewScript(libLua + allowLua + allowOneLua),
		allowBatch: redis.NewScript(libLua + allowLua + allowBatchLua),
		reserve:    redis.NewScript(libLua + reserveLua),
		release:    redis.NewScript(libLua + releaseLua),
		status:     redis.NewScript(libLua + statusLua),
	}
}
