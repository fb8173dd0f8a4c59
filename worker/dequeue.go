package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Asynq takes a task by running its dequeue script on each served queue in
// a weighted random order until one answers (asynq's rdb.Dequeue): one
// script call, and one round trip, per empty queue it meets first. With
// the default weights (critical 6, high 3, normal 1) and the work on
// normal, most dequeues probe two empty queues first, a large share of a
// delivery's Redis CPU; shard queues multiply the queues, and the probes
// with them.
//
// dequeueGate is the Redis client the worker's Asynq server runs on: the
// shared client, with the dequeue script of a queue that just answered
// "empty" answered empty again without asking Redis, for a pause that
// starts at idleFirst and doubles on each empty answer up to idleMax. A
// queue that answers a task is probed on every dequeue again. Only one
// probe of a queue known empty is under way at a time. Nothing else passes
// through the gate: it never takes or moves a task, so at worst a task
// that reaches a queue found empty waits up to idleMax longer to be taken.
type dequeueGate struct {
	redis.UniversalClient
	now func() time.Time
	// count, when set, counts each dequeue by queue and result: task,
	// empty, spared (answered here) or error (hush_dequeues_total).
	count func(queue, result string)

	mu   sync.Mutex
	idle map[string]*idleQueue // by queue name
}

// idleQueue is what the gate knows of a queue that answered empty.
type idleQueue struct {
	wait    time.Duration // the pause since its last empty answer
	until   time.Time     // probes are answered empty until then
	probing bool          // a probe of it is under way
}

// Pauses of a queue found empty: the first, and the longest (the most a
// task reaching such a queue waits longer to be taken).
const (
	idleFirst = time.Millisecond
	idleMax   = 25 * time.Millisecond
)

func newDequeueGate(rdb redis.UniversalClient) *dequeueGate {
	return &dequeueGate{UniversalClient: rdb, now: time.Now, idle: map[string]*idleQueue{}}
}

// EvalSha runs a script by its digest, as Asynq's scripts run first.
func (g *dequeueGate) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return g.gate(ctx, keys, func() *redis.Cmd { return g.UniversalClient.EvalSha(ctx, sha, keys, args...) })
}

// Eval runs a script by its source, as Asynq's scripts run when Redis
// does not know their digest yet.
func (g *dequeueGate) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return g.gate(ctx, keys, func() *redis.Cmd { return g.UniversalClient.Eval(ctx, script, keys, args...) })
}

// gate runs call unless keys are a dequeue's on a queue to be spared now,
// and notes what a dequeue answered.
func (g *dequeueGate) gate(ctx context.Context, keys []string, call func() *redis.Cmd) *redis.Cmd {
	q, ok := dequeueQueue(keys)
	if !ok {
		return call()
	}
	if !g.admit(q) {
		g.counted(q, "spared")
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(redis.Nil) // what the script answers for an empty queue
		return cmd
	}
	cmd := call()
	if result := g.answered(q, cmd.Err()); result != "" {
		g.counted(q, result)
	}
	return cmd
}

func (g *dequeueGate) counted(q, result string) {
	if g.count != nil {
		g.count(q, result)
	}
}

// admit reports whether a dequeue of queue q goes to Redis now.
func (g *dequeueGate) admit(q string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	iq := g.idle[q]
	if iq == nil {
		return true // not known empty: every dequeue asks
	}
	if iq.probing || g.now().Before(iq.until) {
		return false
	}
	iq.probing = true
	return true
}

// answered notes a dequeue's answer from Redis for queue q: a task, empty
// (nil), or an error (which changes nothing). It returns the answer's
// result for hush_dequeues_total: "task", "empty", "error", or "" for a
// NOSCRIPT answer (the dequeue runs again with the script's source).
func (g *dequeueGate) answered(q string, err error) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	iq := g.idle[q]
	switch {
	case err == nil:
		delete(g.idle, q)
		return "task"
	case errors.Is(err, redis.Nil):
		if iq == nil {
			iq = &idleQueue{}
			g.idle[q] = iq
		}
		iq.wait = min(max(2*iq.wait, idleFirst), idleMax)
		iq.until = g.now().Add(iq.wait)
		iq.probing = false
		return "empty"
	}
	if iq != nil {
		iq.probing = false
	}
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		return ""
	}
	return "error"
}

// dequeueQueue recognizes the keys of Asynq's dequeue script
// (asynq:{<q>}:pending, :paused, :active, :lease) and returns the queue.
func dequeueQueue(keys []string) (string, bool) {
	if len(keys) != 4 {
		return "", false
	}
	q, ok := strings.CutPrefix(keys[0], "asynq:{")
	if !ok {
		return "", false
	}
	if q, ok = strings.CutSuffix(q, "}:pending"); !ok {
		return "", false
	}
	tag := "asynq:{" + q + "}:"
	if keys[1] != tag+"paused" || keys[2] != tag+"active" || keys[3] != tag+"lease" {
		return "", false
	}
	return q, true
}
