package worker

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptBatcher runs the calls of one script that arrive within its
// linger of each other in one pipeline: a group commit of script calls,
// each answered on its own, as if it had run alone. The chunks of a
// batch's single-recipient jobs finish together, each with its own
// record.lua call (no script spans two jobs' records); they now share a
// round trip.
//
// A call's answer, errors included, is its own: the caller retries it
// (persist) as it would a call of its own. A call whose script the server
// does not know (NOSCRIPT: a restarted or new server) runs again alone
// with the script's source. On Redis Cluster the pipeline splits by node.
type scriptBatcher struct {
	rdb    redis.UniversalClient
	script *redis.Script
	linger time.Duration
	busy   *tracker // batches gathered or under way (Worker.Run waits for them)

	mu  sync.Mutex
	cur *scriptBatch // the batch being gathered, nil when none
}

// scriptBatch is one pipeline of calls.
type scriptBatch struct {
	calls []*batchedCall
	done  chan struct{}
}

type batchedCall struct {
	keys []string
	args []any
	cmd  *redis.Cmd
}

func newScriptBatcher(rdb redis.UniversalClient, script *redis.Script, linger time.Duration, busy *tracker) *scriptBatcher {
	return &scriptBatcher{rdb: rdb, script: script, linger: linger, busy: busy}
}

// run runs the script with keys and args in the next batch and returns its
// answer, or ctx's error when ctx ends first (the call may still run).
func (b *scriptBatcher) run(ctx context.Context, keys []string, args ...any) *redis.Cmd {
	call := &batchedCall{keys: keys, args: args}
	b.mu.Lock()
	s := b.cur
	if s == nil {
		s = &scriptBatch{done: make(chan struct{})}
		b.cur = s
		b.busy.add()
		time.AfterFunc(b.linger, func() { b.flush(s) })
	}
	s.calls = append(s.calls, call)
	b.mu.Unlock()
	select {
	case <-s.done:
		return call.cmd
	case <-ctx.Done():
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(ctx.Err())
		return cmd
	}
}

// flush closes s to new calls and runs them.
func (b *scriptBatcher) flush(s *scriptBatch) {
	defer b.busy.done()
	b.mu.Lock()
	if b.cur == s {
		b.cur = nil
	}
	b.mu.Unlock()
	defer close(s.done)
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	// A failed pipeline sets its error on every call; each caller sees it.
	_, _ = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range s.calls {
			c.cmd = b.script.EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	for _, c := range s.calls {
		if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.cmd = b.script.Run(ctx, b.rdb, c.keys, c.args...)
		}
	}
}
