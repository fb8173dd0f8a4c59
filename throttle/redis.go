package throttle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the key prefix used when Options.Prefix is empty.
const DefaultPrefix = "hush:throttle:"

// explicitClockMinTTL is the least TTL a key gets when Options.Clock is set:
// TTLs tick in the server's real time, which an injected clock (a replay, a
// test with millisecond windows) need not follow.
const explicitClockMinTTL = time.Hour

// rediser is what the Redis limiter needs from a go-redis client; both
// *redis.Client and *redis.ClusterClient (any redis.UniversalClient) have it.
type rediser interface {
	redis.Scripter
	Del(ctx context.Context, keys ...string) *redis.IntCmd
	Pipeline() redis.Pipeliner
}

// Redis is the shared limiter: one sorted set per user, every decision one
// atomic Lua script. It is safe for concurrent use.
type Redis struct {
	rdb rediser
	// multiKey is set when one script may touch any keys: rdb is a
	// *redis.Client (standalone or Sentinel). Cluster and Ring clients
	// shard keys across servers, and unknown clients might.
	multiKey   bool
	policy     Policy
	r          rules
	prefix     string
	clock      func() time.Time
	minTTL     int64
	maxPending int   // Options.MaxPending, 0 for no cap
	rules      []any // gap, horizon, N1, W1, ... as script arguments
	scripts    scripts
}

// NewRedis returns a limiter for p on rdb (a *redis.Client, a
// *redis.ClusterClient or any redis.UniversalClient). The caller owns rdb.
func NewRedis(rdb rediser, p Policy, o Options) (*Redis, error) {
	r, err := newRules(p)
	if err != nil {
		return nil, err
	}
	if rdb == nil {
		return nil, errors.New("throttle: nil Redis client")
	}
	if err := checkOptions(o); err != nil {
		return nil, err
	}
	l := &Redis{rdb: rdb, policy: copyPolicy(p), r: r, prefix: o.Prefix, clock: o.Clock, maxPending: o.MaxPending, scripts: newScripts()}
	_, l.multiKey = rdb.(*redis.Client)
	if l.prefix == "" {
		l.prefix = DefaultPrefix
	}
	if l.clock != nil {
		l.minTTL = explicitClockMinTTL.Milliseconds()
	}
	l.rules = append(l.rules, r.gap, r.horizon)
	for i := range r.n {
		l.rules = append(l.rules, r.n[i], r.w[i])
	}
	return l, nil
}

// Policy returns the policy the limiter enforces.
func (l *Redis) Policy() Policy { return copyPolicy(l.policy) }

// Key returns the Redis key holding user's entries.
func (l *Redis) Key(user string) string { return l.prefix + "{" + user + "}" }

// Uses reports whether the limiter runs on the client rdb: a caller of
// ReserveBatchWith queues its commands on the limiter's client, so it
// checks that this is its own.
func (l *Redis) Uses(rdb any) bool { return any(l.rdb) == rdb }

// now is the first script argument: the injected clock, or "" for the
// server's TIME.
func (l *Redis) now() string {
	if l.clock == nil {
		return ""
	}
	return strconv.FormatInt(l.clock().UnixMilli(), 10)
}

func (l *Redis) allowArgs(mode string) []any {
	args := make([]any, 0, 4+len(l.rules))
	args = append(args, l.now(), mode, newMember(), l.minTTL)
	return append(args, l.rules...)
}

// reserveArgs are reserve_one.lua's arguments.
func (l *Redis) reserveArgs(q Request) []any {
	args := make([]any, 0, 5+len(l.rules))
	args = append(args, l.now(), q.Member, notAfterArg(q.NotAfter), l.maxPending, l.minTTL)
	return append(args, l.rules...)
}

// notAfterArg is a script's not-after argument: ms, or "" for none.
func notAfterArg(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// Allow decides whether user may act now and records the action when
// allowed. A denial is a Decision, not an error.
func (l *Redis) Allow(ctx context.Context, user string) (Decision, error) {
	return l.decide(ctx, user, "allow")
}

// Peek answers like Allow but records nothing.
func (l *Redis) Peek(ctx context.Context, user string) (Decision, error) {
	return l.decide(ctx, user, "peek")
}

func (l *Redis) decide(ctx context.Context, user, mode string) (Decision, error) {
	if user == "" {
		return Decision{}, ErrEmptyUser
	}
	v, err := l.scripts.allow.Run(ctx, l.rdb, []string{l.Key(user)}, l.allowArgs(mode)...).Result()
	if err != nil {
		return Decision{}, fmt.Errorf("throttle: %s %q: %w", mode, user, err)
	}
	return l.parseDecision(v)
}

// Reserve books the earliest slot at which user may act and records it under
// member; a member already booked gets its slot back (Existing). With
// Options.MaxPending a new member may be refused (RefusedFull).
func (l *Redis) Reserve(ctx context.Context, user, member string) (Reservation, error) {
	if err := checkMember(ctx, user, member); err != nil {
		return Reservation{}, err
	}
	q := Request{User: user, Member: member}
	v, err := l.scripts.reserve.Run(ctx, l.rdb, []string{l.Key(user)}, l.reserveArgs(q)...).Result()
	if err != nil {
		return Reservation{}, fmt.Errorf("throttle: reserve %q: %w", user, err)
	}
	return parseReservation(v)
}

// Release removes member's booking; it reports whether there was one.
func (l *Redis) Release(ctx context.Context, user, member string) (bool, error) {
	if err := checkMember(ctx, user, member); err != nil {
		return false, err
	}
	v, err := l.scripts.release.Run(ctx, l.rdb, []string{l.Key(user)}, l.now(), member, l.r.horizon).Result()
	if err != nil {
		return false, fmt.Errorf("throttle: release %q: %w", user, err)
	}
	n, ok := v.(int64)
	if !ok || (n != 0 && n != 1) {
		return false, fmt.Errorf("%w: release: %#v", ErrUnexpectedReply, v)
	}
	return n == 1, nil
}

// Status describes user's entries, remaining counts and next allowed time.
func (l *Redis) Status(ctx context.Context, user string) (Status, error) {
	if err := check(ctx, user); err != nil {
		return Status{}, err
	}
	args := append([]any{l.now()}, l.rules...)
	v, err := l.scripts.status.Run(ctx, l.rdb, []string{l.Key(user)}, args...).Result()
	if err != nil {
		return Status{}, fmt.Errorf("throttle: status %q: %w", user, err)
	}
	return l.parseStatus(v)
}

// Reset forgets everything about user.
func (l *Redis) Reset(ctx context.Context, user string) error {
	if err := check(ctx, user); err != nil {
		return err
	}
	if err := l.rdb.Del(ctx, l.Key(user)).Err(); err != nil {
		return fmt.Errorf("throttle: reset %q: %w", user, err)
	}
	return nil
}

// newMember names an Allow entry; 64 random bits keep members unique.
func newMember() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "allow:" + hex.EncodeToString(b[:])
}
