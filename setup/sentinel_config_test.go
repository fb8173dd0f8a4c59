package setup

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/testkit"
)

func TestLoadConfigSentinel(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		key  string // the key the error must name; "" when the configuration is valid
	}{
		{"addrs and master", map[string]string{"HUSH_REDIS_SENTINEL_ADDRS": "10.0.0.1:26379, 10.0.0.2:26379", "HUSH_REDIS_SENTINEL_MASTER": "mymaster"}, ""},
		{"with the data nodes' URL and the Sentinels' password", map[string]string{
			"HUSH_REDIS_SENTINEL_ADDRS": "s1:26379", "HUSH_REDIS_SENTINEL_MASTER": "mymaster",
			"HUSH_REDIS_SENTINEL_PASSWORD": "s3cret", "HUSH_REDIS_URL": "rediss://hush:pw@redis.internal/2",
		}, ""},
		{"ipv6 sentinel", map[string]string{"HUSH_REDIS_SENTINEL_ADDRS": "[::1]:26379", "HUSH_REDIS_SENTINEL_MASTER": "m"}, ""},
		{"addrs without master", map[string]string{"HUSH_REDIS_SENTINEL_ADDRS": "s1:26379"}, "HUSH_REDIS_SENTINEL_MASTER"},
		{"blank master", map[string]string{"HUSH_REDIS_SENTINEL_ADDRS": "s1:26379", "HUSH_REDIS_SENTINEL_MASTER": " "}, "HUSH_REDIS_SENTINEL_MASTER"},
		{"master without addrs", map[string]string{"HUSH_REDIS_SENTINEL_MASTER": "mymaster"}, "HUSH_REDIS_SENTINEL_ADDRS"},
		{"password without addrs", map[string]string{"HUSH_REDIS_SENTINEL_PASSWORD": "s3cret"}, "HUSH_REDIS_SENTINEL_PASSWORD"},
		{"addr without port", map[string]string{"HUSH_REDIS_SENTINEL_ADDRS": "s1", "HUSH_REDIS_SENTINEL_MASTER": "m"}, "HUSH_REDIS_SENTINEL_ADDRS"},
		{"addr without host", map[string]string{"HUSH_REDIS_SENTINEL_ADDRS": ":26379", "HUSH_REDIS_SENTINEL_MASTER": "m"}, "HUSH_REDIS_SENTINEL_ADDRS"},
		{"empty addr in the list", map[string]string{"HUSH_REDIS_SENTINEL_ADDRS": "s1:26379,,s2:26379", "HUSH_REDIS_SENTINEL_MASTER": "m"}, "HUSH_REDIS_SENTINEL_ADDRS"},
		{"addr as a URL", map[string]string{"HUSH_REDIS_SENTINEL_ADDRS": "redis://s1:26379", "HUSH_REDIS_SENTINEL_MASTER": "m"}, "HUSH_REDIS_SENTINEL_ADDRS"},
		{"with cluster", map[string]string{"HUSH_REDIS_SENTINEL_ADDRS": "s1:26379", "HUSH_REDIS_SENTINEL_MASTER": "m", "HUSH_REDIS_CLUSTER_ADDRS": "c1:6379"}, "HUSH_REDIS_SENTINEL_ADDRS"},
		{"unix URL", map[string]string{"HUSH_REDIS_SENTINEL_ADDRS": "s1:26379", "HUSH_REDIS_SENTINEL_MASTER": "m", "HUSH_REDIS_URL": "unix:///run/redis.sock"}, "HUSH_REDIS_URL"},
		{"go-redis failover URL", map[string]string{"HUSH_REDIS_URL": "redis://s1:26379?master_name=mymaster&addr=s2:26379"}, "HUSH_REDIS_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, err := LoadConfig()
			if tt.key == "" {
				if err != nil {
					t.Fatalf("LoadConfig rejected %v: %v", tt.env, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("LoadConfig accepted %v", tt.env)
			}
			if !strings.Contains(err.Error(), tt.key) {
				t.Errorf("error %q does not name %s", err, tt.key)
			}
			var ke *KeyError
			if errors.As(err, &ke) && ke.Key != tt.key {
				t.Errorf("KeyError names %s, want %s", ke.Key, tt.key)
			}
		})
	}
}

// TestOpenRedisSentinelTakesTheURLsDataNodeSettings: with the Sentinel keys,
// HUSH_REDIS_URL's user, password, DB, TLS and timeouts reach the
// connections to the master, and the pool is sized as for a plain URL.
func TestOpenRedisSentinelTakesTheURLsDataNodeSettings(t *testing.T) {
	cfg := Config{
		RedisURL:            "rediss://hush:pw@redis.internal:6380/3?dial_timeout=2s&pool_size=500",
		RedisSentinelAddrs:  []string{" 127.0.0.1:1 ", "127.0.0.1:2"},
		RedisSentinelMaster: "mymaster",
		Concurrency:         20,
	}
	var logs testkit.Buffer
	rdb, closeRedis, err := openRedis(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer closeRedis()
	c, ok := rdb.(*redis.Client)
	if !ok {
		t.Fatalf("openRedis returned a %T, want the failover *redis.Client (the limiter's one-script batches need it)", rdb)
	}
	o := c.Options()
	got := fmt.Sprintf("user=%s password=%s db=%d tls=%v server_name=%s dial_timeout=%s pool=%d",
		o.Username, o.Password, o.DB, o.TLSConfig != nil, serverName(o.TLSConfig), o.DialTimeout, o.PoolSize)
	want := "user=hush password=pw db=3 tls=true server_name=redis.internal dial_timeout=2s pool=500"
	if got != want {
		t.Errorf("master connection options:\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(logs.String(), `master=mymaster sentinels="[127.0.0.1:1 127.0.0.1:2]"`) {
		t.Errorf("log does not name the master and the Sentinels:\n%s", logs.String())
	}

	cfg.RedisURL = ""
	rdb2, closeRedis2, err := openRedis(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer closeRedis2()
	if o := rdb2.(*redis.Client).Options(); o.PoolSize != 2*cfg.Concurrency+30 || o.TLSConfig != nil || o.Password != "" {
		t.Errorf("without HUSH_REDIS_URL: pool %d tls %v password %q, want %d, no TLS, no password", o.PoolSize, o.TLSConfig != nil, o.Password, 2*cfg.Concurrency+30)
	}
}

func serverName(c *tls.Config) string {
	if c == nil {
		return ""
	}
	return c.ServerName
}
