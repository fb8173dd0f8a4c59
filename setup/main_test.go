package setup

import (
	"log/slog"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestMain gives go-redis hush's logger, as hush serve does before it
// calls Serve (cmd/hush/serve.go): the tests that start Serve against a
// Redis that does not answer would otherwise get go-redis's own "failed to
// dial" lines on stderr, one per attempt, which hush logs at debug.
func TestMain(m *testing.M) {
	redis.SetLogger(RedisLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	os.Exit(m.Run())
}
