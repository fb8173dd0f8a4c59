package throttle

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// AllowBatch is Allow for many users in one network round trip: one
// pipelined EVALSHA per user, each touching only that user's key, so it works
// on Redis Cluster (the pipeline is split by slot). Users may repeat; their
// calls run in order.
//
// When err is non-nil some decisions may still have been made: a Decision
// whose Now is zero marks a user whose call failed.
func (l *Redis) AllowBatch(ctx context.Context, users []string) ([]Decision, error) {
	if err := checkUsers(users); err != nil {
		return nil, err
	}
	keys := make([]string, len(users))
	args := make([][]any, len(users))
	for i, u := range users {
		keys[i], args[i] = l.Key(u), l.allowArgs("allow")
	}
	cmds := l.pipeline(ctx, l.scripts.allow, keys, args)
	out := make([]Decision, len(users))
	var errs []error
	for i, c := range cmds {
		v, err := c.Result()
		if err == nil {
			out[i], err = l.parseDecision(v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("throttle: allow %q: %w", users[i], err))
		}
	}
	return out, errors.Join(errs...)
}

// ReserveBatch is Reserve for many requests in one network round trip (see
// AllowBatch). A Reservation whose Now is zero marks a failed request.
func (l *Redis) ReserveBatch(ctx context.Context, reqs []Request) ([]Reservation, error) {
	if err := checkRequests(reqs); err != nil {
		return nil, err
	}
	keys := make([]string, len(reqs))
	args := make([][]any, len(reqs))
	for i, q := range reqs {
		keys[i], args[i] = l.Key(q.User), l.reserveArgs(q.Member)
	}
	cmds := l.pipeline(ctx, l.scripts.reserve, keys, args)
	out := make([]Reservation, len(reqs))
	var errs []error
	for i, c := range cmds {
		v, err := c.Result()
		if err == nil {
			out[i], err = parseReservation(v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("throttle: reserve %q: %w", reqs[i].User, err))
		}
	}
	return out, errors.Join(errs...)
}

// pipeline runs script once per key with EVALSHA in one pipeline. Calls that
// find the script missing (a fresh or flushed server, a new cluster node) are
// run again with EVAL, which also caches it: a second round trip only then.
func (l *Redis) pipeline(ctx context.Context, s *redis.Script, keys []string, args [][]any) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(keys))
	if len(keys) == 0 {
		return cmds
	}
	pipe := l.rdb.Pipeline()
	for i, k := range keys {
		cmds[i] = s.EvalSha(ctx, pipe, []string{k}, args[i]...)
	}
	_, _ = pipe.Exec(ctx) // errors are per command
	var again []int
	for i, c := range cmds {
		if isNoScript(c.Err()) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return cmds
	}
	pipe = l.rdb.Pipeline()
	for _, i := range again {
		cmds[i] = s.Eval(ctx, pipe, []string{keys[i]}, args[i]...)
	}
	_, _ = pipe.Exec(ctx)
	return cmds
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}
