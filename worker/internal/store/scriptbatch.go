package store

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker/internal/groupcommit"
)

// ScriptBatcher runs the calls of one script that arrive within its
// linger of each other in one pipeline: a group commit of script calls
// (worker/internal/groupcommit), each answered on its own, as if it had
// run alone. The chunks of a batch's single-recipient jobs finish
// together, each with its own record.lua call (no script spans two jobs'
// records); they share a round trip.
//
// A call's answer, errors included, is its own: the caller retries it
// (Persist) as it would a call of its own. A call whose script the server
// does not know (NOSCRIPT: a restarted or new server) runs again alone
// with the script's source. On Redis Cluster the pipeline splits by node.
//
// The events of a batch's calls (the outcomes' events, the worker's jobStore.write) are
// appended to hush:events before the calls run. On one Redis node they
// lead the calls' own pipeline: Redis runs a connection's commands in
// order, so no call runs before its events are appended, and the batch
// costs no round trip more. On a Cluster, which splits a pipeline by node
// and runs the parts concurrently, they are a pipeline of their own, one
// round trip before the calls'.
type ScriptBatcher struct {
	rdb    redis.UniversalClient
	script *redis.Script
	events *Events // nil: calls carry no events
	group  *groupcommit.Group[scriptCall, *redis.Cmd]
}

// scriptCall is one call's keys and arguments, and the events to append
// before it runs.
type scriptCall struct {
	keys   []string
	args   []any
	events []Event
}

// NewRecordBatcher is a Worker's batcher of record.lua calls.
func NewRecordBatcher(rdb redis.UniversalClient, ev *Events) *ScriptBatcher {
	return NewScriptBatcher(rdb, RecordScript, ev, RecordLinger)
}

// NewScriptBatcher is a batcher of script's calls, each batch waiting
// linger for more.
func NewScriptBatcher(rdb redis.UniversalClient, script *redis.Script, ev *Events, linger time.Duration) *ScriptBatcher {
	b := &ScriptBatcher{rdb: rdb, script: script, events: ev}
	b.group = groupcommit.New(b.runAll, groupcommit.Options{Linger: linger, Timeout: RecordTimeout})
	return b
}

// Run runs the script with keys and args in the next batch, after evs are
// appended, and returns its answer, or ctx's error when ctx ends first
// (the call may still run).
func (b *ScriptBatcher) Run(ctx context.Context, keys []string, evs []Event, args ...any) *redis.Cmd {
	cmd, err := b.group.Do(ctx, scriptCall{keys: keys, args: args, events: evs})
	if err != nil {
		cmd = redis.NewCmd(ctx)
		cmd.SetErr(err)
	}
	return cmd
}

// runAll appends the calls' events, then runs the calls in one pipeline
// and answers each.
func (b *ScriptBatcher) runAll(ctx context.Context, calls []scriptCall) ([]*redis.Cmd, error) {
	var evs []Event
	for _, c := range calls {
		evs = append(evs, c.events...)
	}
	_, oneNode := b.rdb.(*redis.Client)
	if !oneNode {
		b.events.EmitOrCount(ctx, evs)
	}
	cmds := make([]*redis.Cmd, len(calls))
	var appends []*redis.StringCmd
	// A failed pipeline sets its error on every call; each caller sees it
	// and tries its call again, events and all.
	_, _ = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if oneNode && b.events != nil && len(evs) > 0 {
			appends, _ = b.events.queueAll(ctx, p, evs)
		}
		for i, c := range calls {
			cmds[i] = b.script.EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	if b.events != nil {
		b.events.countFailed(appends)
	}
	for i, c := range calls {
		if err := cmds[i].Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			cmds[i] = b.script.Run(ctx, b.rdb, c.keys, c.args...)
		}
	}
	return cmds, nil
}

// Drain runs the calls waiting and waits for every batch under way, or for
// ctx to end.
func (b *ScriptBatcher) Drain(ctx context.Context) error { return b.group.Drain(ctx) }

// RecordLinger is how long the first answer of a group commit of device
// outcomes or record.lua calls waits for others to join it.
const RecordLinger = 2 * time.Millisecond

// RecordTimeout bounds one group commit, retries during a Redis outage
// included.
const RecordTimeout = 30 * time.Second
