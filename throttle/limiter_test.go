package throttle_test

import (
	"context"
	"strings"
	"testing"
	"time"

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

func newMemoryLimiter(t *testing.T, p throttle.Policy, clock func() time.Time) limiter {
	t.Helper()
	l, err := throttle.NewMemory(p, throttle.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// redisLimiters builds Redis limiters on rdb, each under its own prefix,
// whose keys are deleted when the test ends.
func redisLimiters(rdb redis.UniversalClient) newLimiterFunc {
	return func(t *testing.T, p throttle.Policy, clock func() time.Time) limiter {
		t.Helper()
		prefix := redistest.Prefix(t)
		l, err := throttle.NewRedis(rdb, p, throttle.Options{Prefix: prefix, Clock: clock})
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
