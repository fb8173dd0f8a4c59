package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker/internal/store"
)

// The reset mark's keys, writes and reads (resetmark.go explains the mark).

// raiseResetMark raises every shard of the reset mark to at (the
// limiter's clock).
func (s jobStore) raiseResetMark(ctx context.Context, at time.Time) error {
	ms := at.UnixMilli()
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range resetMarkShards {
			store.RaiseScript.Eval(ctx, p, []string{store.ResetMarkKeyOf(i)}, ms)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write the reset mark: %w", err)
	}
	return nil
}

// resetMarkOf reads a reset mark's GET: Unix ms, 0 for none. A mark that
// could not be read (its node did not answer, or the key holds something
// else) is the latest instant: every booking is looked up, which is always
// safe.
func resetMarkOf(g *redis.StringCmd) int64 {
	v, err := g.Int64()
	switch {
	case errors.Is(err, redis.Nil):
		return 0
	case err != nil:
		return math.MaxInt64
	}
	return v
}
