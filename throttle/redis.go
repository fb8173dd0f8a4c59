package throttle

import (
	"cmp"
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
	TxPipeline() redis.Pipeliner
}

// Redis is the shared limiter: one sorted set per user, every decision one
// atomic Lua script. It is safe for concurrent use.
type Redis struct {
	rdb rediser
	// multiKey is set when one script may touch any keys: rdb is a
	// *redis.Client (standalone or Sentinel). Cluster and Ring clients
	// shard keys across servers, and unknown clients might.
	multiKey bool
	// cluster is rdb when it is a *redis.ClusterClient: bookings of
	// users on one node share a call (reserve.lua's node form).
	cluster    *redis.ClusterClient
	policy     Policy
	c          compiled
	r          *rules // the global rules (Allow, Peek)
	prefix     string
	scope      string // Options.Scope
	clock      func() time.Time
	minTTL     int64
	maxPending int   // pendingCap(Options), 0 for no cap
	margin     int64 // Options.CollapseMargin in ms
	rules      []any // the global gap, horizon, N1, W1, ... as allow.lua's arguments
	scripts    scripts
}

// NewRedis returns a limiter for p on rdb (a *redis.Client, a
// *redis.ClusterClient or any redis.UniversalClient). The caller owns rdb.
func NewRedis(rdb rediser, p Policy, o Options) (*Redis, error) {
	p = mutantPolicy(p)
	c, err := compile(p)
	if err != nil {
		return nil, err
	}
	if rdb == nil {
		return nil, errors.New("throttle: nil Redis client")
	}
	if err := checkOptions(o); err != nil {
		return nil, err
	}
	l := &Redis{rdb: rdb, policy: copyPolicy(p), c: c, r: &c.global, prefix: o.Prefix, scope: o.Scope, clock: o.Clock,
		maxPending: pendingCap(o), margin: o.CollapseMargin.Milliseconds(), scripts: newScripts()}
	_, l.multiKey = rdb.(*redis.Client)
	l.cluster, _ = rdb.(*redis.ClusterClient)
	if l.prefix == "" {
		l.prefix = DefaultPrefix
	}
	if l.clock != nil {
		l.minTTL = explicitClockMinTTL.Milliseconds()
	}
	l.rules = append(l.rules, c.global.gap, c.global.horizon)
	for i := range c.global.n {
		l.rules = append(l.rules, c.global.n[i], c.global.w[i])
	}
	return l, nil
}

// Policy returns the policy the limiter enforces.
func (l *Redis) Policy() Policy { return copyPolicy(l.policy) }

// Key returns the Redis key holding user's entries under the global rules:
// Prefix + "{" + tag + "}", with the tag of user under the limiter's scope
// (userTag). Every key of the user starts with it.
func (l *Redis) Key(user string) string {
	return l.prefix + "{" + userTag(l.scope, user) + "}"
}

// setKey is the key of user's set cat: the global set for "", else
// Key(user) + ":c:" + cat. A category name has no ":" or "}", so a key
// ends in "}" (a global set), "}:k" (a collapse hash) or ":c:" and a
// category: read from its end, a key names one set of one tag.
func (l *Redis) setKey(user, cat string) string {
	if cat == "" {
		return l.Key(user)
	}
	return l.Key(user) + ":c:" + cat
}

// collapseKey is the key of user's collapse hash.
func (l *Redis) collapseKey(user string) string { return l.Key(user) + ":k" }

// userKeys are the keys of every set user may have and their horizons as
// script arguments, after first (release.lua and status.lua's ARGV).
func (l *Redis) userKeys(user string, first ...any) ([]string, []any) {
	sets := l.c.allSets()
	keys := make([]string, len(sets))
	args := append(make([]any, 0, len(first)+len(sets)), first...)
	for i, s := range sets {
		keys[i] = l.setKey(user, s.cat)
		args = append(args, s.r.horizon)
	}
	return keys, args
}

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

// msArg is a script's time argument: ms, or "" for none (0).
func msArg(t int64) string {
	if t == 0 {
		return ""
	}
	return strconv.FormatInt(t, 10)
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

// Reserve books the earliest slot at which user may act (global rules,
// quiet hours in UTC) and records it under member; a member already booked
// gets its slot back (Existing). With Options.MaxPending a new member may
// be refused (RefusedFull). ReserveBatch takes every Request field.
func (l *Redis) Reserve(ctx context.Context, user, member string) (Reservation, error) {
	if err := checkMember(ctx, user, member); err != nil {
		return Reservation{}, err
	}
	rs, err := l.ReserveBatch(ctx, []Request{{User: user, Member: member}})
	if err != nil {
		return Reservation{}, err
	}
	return rs[0], nil
}

// Release removes member's booking from every set of user; it reports
// whether there was one.
func (l *Redis) Release(ctx context.Context, user, member string) (bool, error) {
	if err := checkMember(ctx, user, member); err != nil {
		return false, err
	}
	keys, args := l.userKeys(user, l.now(), member)
	v, err := l.scripts.release.Run(ctx, l.rdb, keys, args...).Result()
	if err != nil {
		return false, fmt.Errorf("throttle: release %q: %w", user, err)
	}
	n, ok := v.(int64)
	if !ok || (n != 0 && n != 1) {
		return false, fmt.Errorf("%w: release: %#v", ErrUnexpectedReply, v)
	}
	return n == 1, nil
}

// ReleaseBatch is Release for many bookings in one round trip (a pipeline
// of the release script); found[i] says whether hs[i] was there. A
// booking's error does not stop the others': the first is returned.
func (l *Redis) ReleaseBatch(ctx context.Context, hs []Held) (found []bool, err error) {
	calls := make([]scriptCall, len(hs))
	now := l.now()
	for i, h := range hs {
		if err := checkMember(ctx, h.User, h.Member); err != nil {
			return nil, err
		}
		calls[i].keys, calls[i].args = l.userKeys(h.User, now, h.Member)
	}
	found = make([]bool, len(hs))
	for i, c := range l.pipeline(ctx, nil, l.scripts.release, calls) {
		v, cerr := c.Result()
		n, ok := v.(int64)
		switch {
		case cerr != nil:
			cerr = fmt.Errorf("throttle: release %q: %w", hs[i].User, cerr)
		case !ok || (n != 0 && n != 1):
			cerr = fmt.Errorf("%w: release: %#v", ErrUnexpectedReply, v)
		}
		if cerr != nil {
			err = cmp.Or(err, cerr)
			continue
		}
		found[i] = n == 1
	}
	return found, err
}

// Status describes user's entries, remaining counts, next allowed times
// and quiet hours per category, with loc (nil: UTC) as the user's time
// zone.
func (l *Redis) Status(ctx context.Context, user string, loc *time.Location) (Status, error) {
	if err := check(ctx, user); err != nil {
		return Status{}, err
	}
	keys, args := l.userKeys(user, l.now())
	v, err := l.scripts.status.Run(ctx, l.rdb, keys, args...).Result()
	if err != nil {
		return Status{}, fmt.Errorf("throttle: status %q: %w", user, err)
	}
	return l.parseStatus(v, loc)
}

// Reset forgets everything about user: every set and the collapse hash.
func (l *Redis) Reset(ctx context.Context, user string) error {
	if err := check(ctx, user); err != nil {
		return err
	}
	keys, _ := l.userKeys(user)
	// The keys share the user's hash tag: one DEL works on Redis Cluster.
	if err := l.rdb.Del(ctx, append(keys, l.collapseKey(user))...).Err(); err != nil {
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
