package worker

import (
	"context"
	"fmt"
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
