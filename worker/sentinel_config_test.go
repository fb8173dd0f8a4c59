package worker

import (
	"errors"
	"strings"
	"testing"
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
