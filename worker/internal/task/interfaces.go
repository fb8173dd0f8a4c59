package task

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/throttle"
)

// Limiter books and releases users' delivery slots, many users in one
// round trip (throttle.Redis and throttle.Memory satisfy it).
type Limiter interface {
	// ReserveBatch books the earliest slot of each request's member
	// (idempotent per member), refusing slots after Request.NotAfter.
	ReserveBatch(ctx context.Context, reqs []throttle.Request) ([]throttle.Reservation, error)
	// Release gives member's booking back.
	Release(ctx context.Context, user, member string) (bool, error)
	// ReleaseBatch gives many bookings back in one round trip.
	ReleaseBatch(ctx context.Context, hs []throttle.Held) ([]bool, error)
}

// PipeLimiter books a batch in the same round trip as the worker's own
// commands, queued by queue on the limiter's Redis client
// (throttle.Redis). The worker uses it only when that client is its own
// (Options.Limiter built on the rdb given to New), as setup.Serve does.
type PipeLimiter interface {
	Uses(rdb any) bool
	ReserveBatchWith(ctx context.Context, reqs []throttle.Request, queue func(redis.Pipeliner)) ([]throttle.Reservation, error)
}

// Pacer grants send times at a rate per key across every process
// (throttle.Pacer), many keys in one round trip.
type Pacer interface {
	Pace(ctx context.Context, reqs []throttle.PaceRequest) ([]throttle.Pace, error)
}

// ThrottleAdmin shows and clears one user's limiter state for the HTTP API.
type ThrottleAdmin interface {
	Status(ctx context.Context, user string, loc *time.Location) (throttle.Status, error)
	Reset(ctx context.Context, user string) error
}

// Sender delivers one push to one device and classifies the provider's
// answer.
type Sender interface {
	Send(ctx context.Context, p providers.Push) providers.Result
}

// TokenChecker is a Sender that judges device tokens at submit by what
// only the deployment knows (webpush.Sender: the egress policy for the
// endpoint a subscriber chose). CheckToken returns nil for a token
// payload.Validate refuses.
type TokenChecker interface {
	CheckToken(token string) error
}
