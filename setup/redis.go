package setup

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// openRedis returns the process's one Redis client (shared by Asynq, the
// limiter, job records and events) and a function that closes it. With
// HUSH_REDIS_URL and HUSH_REDIS_CLUSTER_ADDRS empty it starts an embedded
// miniredis on loopback, for development only.
//
// With HUSH_REDIS_SENTINEL_ADDRS and HUSH_REDIS_SENTINEL_MASTER it returns
// go-redis's failover client: a *redis.Client (so the limiter keeps its
// one-script batches) whose connections go to whichever node the Sentinels
// name as the master. When a Sentinel announces a new master (+switch-master)
// the client drops its connections to the old one; commands that fail on a
// dead connection are retried on a fresh one, so Asynq, the limiter and the
// API carry on through a failover without a restart. HUSH_REDIS_URL then
// only gives the data nodes' user, password, DB, TLS and timeouts (its host
// is ignored, except as the name TLS certificates are checked against);
// HUSH_REDIS_SENTINEL_PASSWORD is the Sentinels' own password.
// go-redis's failover URL (redis.ParseFailoverURL) is not accepted: its
// userinfo means the Sentinels' credentials where HUSH_REDIS_URL's means the
// data nodes', and it carries the data password in a query parameter.
// OpenRedis opens the Redis that cfg's HUSH_REDIS_* keys name, as Serve
// does, without pinging it; the function closes it (and an embedded Redis).
// hush bench uses it to measure the Redis a deployment would use.
func OpenRedis(cfg Config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	return openRedis(cfg, log)
}

func openRedis(cfg Config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	// Asynq, the limiter and every in-flight delivery and held task share
	// the pool. Held tasks mostly sleep until their slots, so they count
	// for at most as many connections as the delivery slots.
	pool := cfg.Concurrency + min(cfg.HeldSlots(), cfg.Concurrency) + 30
	if len(cfg.RedisSentinelAddrs) > 0 {
		opts := &redis.FailoverOptions{
			MasterName:       cfg.RedisSentinelMaster,
			SentinelAddrs:    trimAll(cfg.RedisSentinelAddrs),
			SentinelPassword: cfg.RedisSentinelPassword,
			PoolSize:         pool,
		}
		if cfg.RedisURL != "" {
			u, err := redis.ParseURL(cfg.RedisURL)
			if err != nil {
				return nil, nil, &KeyError{Key: "HUSH_REDIS_URL", Err: err}
			}
			opts.Username, opts.Password, opts.DB, opts.TLSConfig = u.Username, u.Password, u.DB, u.TLSConfig
			opts.ClientName, opts.Protocol = u.ClientName, u.Protocol
			opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = u.DialTimeout, u.ReadTimeout, u.WriteTimeout
			opts.MaxRetries, opts.MinRetryBackoff, opts.MaxRetryBackoff = u.MaxRetries, u.MinRetryBackoff, u.MaxRetryBackoff
			opts.PoolTimeout = u.PoolTimeout
			opts.PoolSize = max(u.PoolSize, pool)
		}
		rdb := redis.NewFailoverClient(opts)
		log.Info("redis sentinel", "master", opts.MasterName, "sentinels", opts.SentinelAddrs, "db", opts.DB)
		return rdb, func() { _ = rdb.Close() }, nil
	}
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

// redisKey is the key that says where Redis is, and its value, for
// messages about a Redis that does not answer.
func (c Config) redisKey() (key, where string) {
	switch {
	case len(c.RedisSentinelAddrs) > 0:
		return "HUSH_REDIS_SENTINEL_ADDRS", strings.Join(c.RedisSentinelAddrs, ",") + " (master " + c.RedisSentinelMaster + ")"
	case len(c.RedisClusterAddrs) > 0:
		return "HUSH_REDIS_CLUSTER_ADDRS", strings.Join(c.RedisClusterAddrs, ",")
	}
	where = c.RedisURL
	if u, err := url.Parse(c.RedisURL); err == nil && u.User != nil {
		u.User = url.User("***") // never print a password
		where = u.Redacted()
	}
	return "HUSH_REDIS_URL", where
}

// RedisTarget names the Redis that cfg's HUSH_REDIS_* keys point at, for a
// message: the cluster or Sentinel addresses, or HUSH_REDIS_URL without its
// password; empty for the embedded development Redis.
func (c Config) RedisTarget() string {
	_, where := c.redisKey()
	return where
}
