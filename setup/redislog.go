package setup

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// RedisLogger adapts log for go-redis's own messages (redis.SetLogger), so
// they come out in hush's format and level instead of as plain text beside
// it. Pool dial failures go to debug: hush says itself, once and naming the
// key, when Redis does not answer (Serve at start, /readyz later), and
// go-redis repeats them per attempt. Sentinel's messages (a new master) go
// to info; anything else to warn.
func RedisLogger(log *slog.Logger) interface {
	Printf(ctx context.Context, format string, v ...any)
} {
	return redisLogger{log: log.With("component", "go-redis")}
}

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	level := slog.LevelWarn
	switch {
	case strings.Contains(msg, "failed to dial"), strings.Contains(msg, "connection refused"):
		level = slog.LevelDebug
	case strings.Contains(msg, "sentinel"):
		level = slog.LevelInfo
	}
	l.log.Log(ctx, level, msg)
}
