package throttle_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	testLimiter(t, newMemoryLimiter)
}

func TestRedis(t *testing.T) {
	t.Parallel()
	testLimiter(t, redisLimiters(redistest.Client(t)))
}

func newMemoryLimiter(t *testing.T, p throttle.Policy, o throttle.Options) limiter {
	t.Helper()
	l, err := throttle.NewMemory(p, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// redisLimiters builds Redis limiters on rdb, each under its own prefix,
// whose keys are deleted when the test ends.
func redisLimiters(rdb redis.UniversalClient) newLimiterFunc {
	return func(t *testing.T, p throttle.Policy, o throttle.Options) limiter {
		t.Helper()
		prefix := redistest.Prefix(t)
		o.Prefix = prefix
		l, err := throttle.NewRedis(rdb, p, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
		return l
	}
}

// deleteKeys removes the keys under prefix (keys written with an explicit
// clock live an hour otherwise).
func deleteKeys(t testing.TB, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	pattern := strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(prefix) + "*"
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		if err := rdb.Del(ctx, iter.Val()).Err(); err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
	}
	if err := iter.Err(); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

func TestNegativeMaxPendingIsAnError(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, "1/1m", "")
	o := throttle.Options{MaxPending: -2}
	if _, err := throttle.NewMemory(p, o); err == nil {
		t.Error("NewMemory with MaxPending -2: no error")
	}
	if _, err := throttle.NewRedis(redistest.Client(t), p, o); err == nil {
		t.Error("NewRedis with MaxPending -2: no error")
	}
}
