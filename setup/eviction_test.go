package setup

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/wire"
)

// evictingRedis is a private redis-server that may evict any key with a
// TTL, as managed Redis services often are by default.
func evictingRedis(t *testing.T) *redistest.Server {
	t.Helper()
	srv := redistest.Start(t, redistest.Options{Args: []string{"--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru"}})
	if !srv.Real() {
		t.Skip("needs a real redis-server for CONFIG")
	}
	return srv
}

// TestServeRefusesAnEvictingRedis: hush serve does not start on a Redis
// whose maxmemory-policy is volatile-lru; its error names the key that
// points at Redis, the setting, the fix and the override.
func TestServeRefusesAnEvictingRedis(t *testing.T) {
	srv := evictingRedis(t)
	clearEnv(t)
	t.Setenv("HUSH_REDIS_URL", srv.URL())
	t.Setenv("HUSH_HTTP_ADDR", "127.0.0.1:0")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	var logs testkit.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, slog.New(slog.NewTextHandler(&logs, nil))) }()
	var served error
	testkit.WaitFor(t, 15*time.Second, "Serve to return or listen", func() bool {
		select {
		case served = <-done:
			return true
		default:
			return strings.Contains(logs.String(), `msg="http listening"`)
		}
	})
	if served == nil {
		cancel()
		<-done
		t.Fatalf("Serve started on a volatile-lru Redis:\n%s", logs.String())
	}
	var ke *KeyError
	if !errors.As(served, &ke) || ke.Key != "HUSH_REDIS_URL" {
		t.Errorf("Serve = %v, want a HUSH_REDIS_URL error", served)
	}
	for _, want := range []string{"maxmemory-policy", "volatile-lru", srv.Addr, "noeviction", "HUSH_REDIS_ALLOW_EVICTION=true"} {
		if !strings.Contains(served.Error(), want) {
			t.Errorf("Serve's error %q does not say %q", served, want)
		}
	}
}

// TestServeAllowsEvictionWhenTold: with HUSH_REDIS_ALLOW_EVICTION=true
// hush serves on that Redis, /readyz is 200 and its warnings (and the log)
// say why the work is at risk, naming no address.
func TestServeAllowsEvictionWhenTold(t *testing.T) {
	srv := evictingRedis(t)
	base, logs := serveFromEnv(t, map[string]string{"HUSH_REDIS_URL": srv.URL(), "HUSH_REDIS_ALLOW_EVICTION": "true"})
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h wire.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	warnings := strings.Join(h.Warnings, "; ")
	if resp.StatusCode != http.StatusOK || h.Status != "ready" || !strings.Contains(warnings, "maxmemory-policy is volatile-lru") {
		t.Errorf("/readyz: %d %+v, want 200 ready with a warning naming volatile-lru", resp.StatusCode, h)
	}
	if strings.Contains(warnings, srv.Addr) {
		t.Errorf("/readyz's warnings show the address: %q", warnings)
	}
	if !strings.Contains(logs.String(), "volatile-lru") {
		t.Errorf("the log does not say the policy:\n%s", logs.String())
	}
}

// TestServeEmbeddedRedisIsNotChecked: the embedded development Redis
// (miniredis, no CONFIG command) is served without an eviction warning.
func TestServeEmbeddedRedisIsNotChecked(t *testing.T) {
	base, logs := serveFromEnv(t, nil)
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h wire.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(h.Warnings) > 0 || strings.Contains(logs.String(), "maxmemory") {
		t.Errorf("/readyz on the embedded Redis: %d %+v, want 200 without warnings; logs:\n%s", resp.StatusCode, h, logs.String())
	}
}
