package throttle

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// batchChunk is the most users one batch script call decides for. The
// server runs nothing else while a script runs (a few microseconds per
// user), so a huge batch is split into several calls of one pipeline.
const batchChunk = 256

// AllowBatch is Allow for many users in one network round trip. Users may
// repeat; their decisions are made in order.
//
// On a standalone or Sentinel-managed Redis (a *redis.Client) one script
// call decides for up to batchChunk users at once, all at one instant (the
// server's TIME is read once per call). On Redis Cluster, and with any
// other client, every user's key may live on another node, so AllowBatch
// pipelines one single-key script call per user instead (the pipeline is
// split by slot). The decisions are the same either way.
//
// When err is non-nil some decisions may still have been made: a Decision
// whose Now is zero marks a user whose call failed, and err joins one error
// per failed user.
func (l *Redis) AllowBatch(ctx context.Context, users []string) ([]Decision, error) {
	if err := checkUsers(users); err != nil {
		return nil, err
	}
	keys := make([]string, len(users))
	for i, u := range users {
		keys[i] = l.Key(u)
	}
	vals, errs := l.replies(ctx, keys, nil,
		l.scripts.allow, func(int) []any { return l.allowArgs("allow") },
		l.scripts.allowBatch, func(from, to int) []any {
			members := make([]any, to-from)
			for i := range members {
				members[i] = newMember()
			}
			return l.batchArgs(members)
		})
	out := make([]Decision, len(users))
	var failed []error
	for i, v := range vals {
		err := errs[i]
		if err == nil {
			out[i], err = l.parseDecision(v)
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("throttle: allow %q: %w", users[i], err))
		}
	}
	return out, errors.Join(failed...)
}

// ReserveBatch is Reserve for many requests in one network round trip, in
// order, with one script call per chunk of requests on a *redis.Client,
// one per node's chunk on Redis Cluster (see the package doc), or one per
// request with any other client. Each request may carry a NotAfter; each answer is
// booked, existing or refused on its own, and a refused request takes no
// place from the requests after it. A Reservation whose Now is zero marks
// a failed request.
func (l *Redis) ReserveBatch(ctx context.Context, reqs []Request) ([]Reservation, error) {
	return l.ReserveBatchWith(ctx, reqs, nil)
}

// batchArgs are allow_batch.lua's arguments: now, minttl, the members, the
// rules.
func (l *Redis) batchArgs(members []any) []any {
	args := make([]any, 0, 2+len(members)+len(l.rules))
	args = append(args, l.now(), l.minTTL)
	args = append(args, members...)
	return append(args, l.rules...)
}

// scriptCall is one script call: its keys and arguments.
type scriptCall struct {
	keys []string
	args []any
}

// replies runs a batch in one pipeline (after the commands before queues,
// when not nil) and returns each key's reply or error. With a client that may run multi-key scripts (l.multiKey) it calls
// multi once per chunk of batchChunk keys with chunkArgs(from, to), whose
// reply holds one element per key (an error element for a key that
// failed); otherwise it calls one once per key with args(i).
func (l *Redis) replies(ctx context.Context, keys []string, before func(redis.Pipeliner),
	one *redis.Script, args func(i int) []any,
	multi *redis.Script, chunkArgs func(from, to int) []any,
) ([]any, []error) {
	vals := make([]any, len(keys))
	errs := make([]error, len(keys))
	if !l.multiKey {
		calls := make([]scriptCall, len(keys))
		for i, k := range keys {
			calls[i] = scriptCall{keys: []string{k}, args: args(i)}
		}
		for i, c := range l.pipeline(ctx, before, one, calls) {
			vals[i], errs[i] = c.Result()
		}
		return vals, errs
	}
	var calls []scriptCall
	for from := 0; from < len(keys); from += batchChunk {
		to := min(from+batchChunk, len(keys))
		calls = append(calls, scriptCall{keys: keys[from:to], args: chunkArgs(from, to)})
	}
	for c, cmd := range l.pipeline(ctx, before, multi, calls) {
		from, n := c*batchChunk, len(calls[c].keys)
		v, err := cmd.Result()
		a, ok := v.([]any)
		if err == nil && (!ok || len(a) != n) {
			err = fmt.Errorf("%w: batch: want an array of %d replies, got %#v", ErrUnexpectedReply, n, v)
		}
		for j := range n {
			if err != nil {
				errs[from+j] = err
			} else if e, isErr := a[j].(error); isErr {
				errs[from+j] = e
			} else {
				vals[from+j] = a[j]
			}
		}
	}
	return vals, errs
}

// pipeline runs script once per call with EVALSHA in one pipeline, after
// the commands before queues (see pipelineScript).
func (l *Redis) pipeline(ctx context.Context, before func(redis.Pipeliner), s *redis.Script, calls []scriptCall) []*redis.Cmd {
	return pipelineScript(ctx, l.rdb, before, s, calls)
}

// pipelineScript runs s once per call with EVALSHA in one pipeline on rdb,
// after the commands before queues (nil: none). Calls that find the script
// missing (a fresh or flushed server, a new cluster node) are run again
// with EVAL, which also caches it: a second round trip only then.
func pipelineScript(ctx context.Context, rdb rediser, before func(redis.Pipeliner), s *redis.Script, calls []scriptCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 0 && before == nil {
		return cmds
	}
	pipe := rdb.Pipeline()
	if before != nil {
		before(pipe)
	}
	for i, c := range calls {
		cmds[i] = s.EvalSha(ctx, pipe, c.keys, c.args...)
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
	pipe = rdb.Pipeline()
	for _, i := range again {
		cmds[i] = s.Eval(ctx, pipe, calls[i].keys, calls[i].args...)
	}
	_, _ = pipe.Exec(ctx)
	return cmds
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}
