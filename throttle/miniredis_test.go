package throttle_test

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// The embedded development Redis (`hush demo`, serve without
// HUSH_REDIS_URL) is miniredis, whose Lua is gopher-lua: the scripts must
// behave the same there. This is a compatibility check on top of TestRedis,
// not a substitute for the real server.
func TestMiniredisCompatible(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	testLimiter(t, redisLimiters(rdb))
}
