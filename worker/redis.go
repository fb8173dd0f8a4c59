package worker

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// openRedis returns the process's one Redis client (shared by Asynq, the
// limiter, job records and events) and a function that closes it. With
// HUSH_REDIS_URL and HUSH_REDIS_CLUSTER_ADDRS empty it starts an embedded
// miniredis on loopback, for development only.
func openRedis(cfg Config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	// Asynq, the limiter and every in-flight delivery share the pool.
	pool := cfg.Concurrency + 30
	if len(cfg.RedisClusterAddrs) > 0 {
		opts := &redis.ClusterOptions{Addrs: trimAll(cfg.RedisClusterAddrs), PoolSize: pool}
		if cfg.RedisURL != "" {
			u, err := redis.ParseURL(cfg.RedisURL)
			if err != nil {
				return nil, nil, &KeyError{Key: "HUSH_REDIS_URL", Err: err}
			}
			opts.Username, opts.Password, opts.TLSConfig = u.Username, u.Password, u.TLSConfig
		}
		rdb := redis.NewClusterClient(opts)
		log.Info("redis cluster", "addrs", opts.Addrs)
		return rdb, func() { _ = rdb.Close() }, nil
	}
	if cfg.RedisURL != "" {
		opts, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, nil, &KeyError{Key: "HUSH_REDIS_URL", Err: err}
		}
		opts.PoolSize = max(opts.PoolSize, pool)
		rdb := redis.NewClient(opts)
		log.Info("redis", "addr", opts.Addr, "db", opts.DB)
		return rdb, func() { _ = rdb.Close() }, nil
	}
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, nil, fmt.Errorf("start the embedded development Redis: %w", err)
	}
	// miniredis TTLs only tick with this on; limiter keys and job records
	// must expire.
	m.ClockTTL(true)
	log.Warn("HUSH_REDIS_URL is empty: using an EMBEDDED IN-MEMORY Redis at " + m.Addr() +
		" - DEVELOPMENT ONLY: every queued job, limiter state and event is LOST when this process exits," +
		" and other processes do not share it. Set HUSH_REDIS_URL for anything real.")
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), PoolSize: pool})
	return rdb, func() { _ = rdb.Close(); m.Close() }, nil
}

func trimAll(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
