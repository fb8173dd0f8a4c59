package main

import (
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
	"github.com/hushpush/hush/worker/httpapi"
)

// realAPI serves the real HTTP API (worker/httpapi) for policy on a
// private Redis (its tasks are not run), with token as the API token (""
// none), and returns its URL and its limiter; HUSH_API_TOKEN is set to
// token for the commands.
func realAPI(t *testing.T, policy throttle.Policy, token string) (string, *throttle.Redis) {
	t.Helper()
	url, lim, _ := realAPIRedis(t, policy, token)
	return url, lim
}

// realAPIRedis is realAPI, with the Redis client of its Redis.
func realAPIRedis(t *testing.T, policy throttle.Policy, token string) (string, *throttle.Redis, *redis.Client) {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	lim, err := throttle.NewRedis(rdb, policy, throttle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(rdb, worker.Options{Limiter: lim, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(w, w.Client(), httpapi.Options{Token: token}))
	t.Cleanup(srv.Close)
	t.Setenv("HUSH_API_TOKEN", token)
	return srv.URL, lim, rdb
}
