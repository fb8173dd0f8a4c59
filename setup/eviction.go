package setup

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker"
)

// embeddedRedis reports whether cfg names no Redis, so Serve runs the
// embedded development one.
func (c Config) embeddedRedis() bool {
	return c.RedisURL == "" && len(c.RedisClusterAddrs) == 0 && len(c.RedisSentinelAddrs) == 0
}

// eviction is what the worker's readiness makes of a Redis that may evict
// keys: never read on the embedded one (miniredis has no CONFIG), allowed
// with HUSH_REDIS_ALLOW_EVICTION, refused otherwise.
func (c Config) eviction() worker.EvictionCheck {
	switch {
	case c.embeddedRedis():
		return worker.EvictionUnchecked
	case c.RedisAllowEviction:
		return worker.EvictionAllowed
	}
	return worker.EvictionRefused
}

// checkEviction refuses a Redis with a master whose maxmemory-policy is not
// noeviction, unless HUSH_REDIS_ALLOW_EVICTION allows it. A Redis that
// refuses CONFIG GET (managed services may) is served: the worker logs
// that it cannot tell and /readyz's warnings say so.
func checkEviction(ctx context.Context, cfg Config, rdb redis.UniversalClient) error {
	if cfg.eviction() != worker.EvictionRefused {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nodes, err := worker.EvictionPolicies(ctx, rdb)
	if err != nil {
		return nil
	}
	var evicting []string
	for _, n := range nodes {
		if n.Evicts() {
			evicting = append(evicting, n.Addr+" has "+n.Policy)
		}
	}
	if len(evicting) == 0 {
		return nil
	}
	key, _ := cfg.redisKey()
	return keyErr(key, "Redis may evict hush's keys (queued tasks, job records, limiter entries) when it reaches maxmemory: maxmemory-policy is not noeviction (%s). "+
		"Set maxmemory-policy noeviction (redis.conf, CONFIG SET maxmemory-policy noeviction, or the managed service's parameter group), "+
		"or set HUSH_REDIS_ALLOW_EVICTION=true to serve at that risk (docs/operations.md#eviction)", strings.Join(evicting, "; "))
}
