package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// releaseFails is a limiter whose first release of a booking of user
// answers a Redis error: the connection dropped, nothing given back.
type releaseFails struct {
	Limiter
	user   string
	failed atomic.Bool
}

func (l *releaseFails) ReleaseBatch(ctx context.Context, hs []throttle.Held) ([]bool, error) {
	for _, h := range hs {
		if h.User == l.user && l.failed.CompareAndSwap(false, true) {
			return make([]bool, len(hs)), errDropped
		}
	}
	return l.Limiter.ReleaseBatch(ctx, hs)
}

// recordFails is a hook on job's commands: the first record of
// recipient index's next attempt is refused by Redis (out of memory), a
// reply error that record does not try again.
type recordFails struct {
	job    string
	index  int
	failed atomic.Bool
}

// oom is the reply of a Redis at its maxmemory.
type oom struct{}

func (oom) Error() string { return "OOM command not allowed when used memory > 'maxmemory'." }
func (oom) RedisError()   {}

func (h *recordFails) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *recordFails) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *recordFails) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			args := c.Args()
			if len(args) == 4 && strings.EqualFold(fmt.Sprint(args[0]), "hincrby") && args[1] == store.DevKey(h.job) &&
				args[2] == strconv.Itoa(h.index)+"/a" && h.failed.CompareAndSwap(false, true) {
				for _, c := range cmds {
					c.SetErr(oom{})
				}
				return oom{}
			}
		}
		return next(ctx, cmds)
	}
}

// A fan-out's device answers 429 with a Retry-After, and carrying out the
// retry fails on Redis: giving the attempt's booking back
// (TestChunkRetryAfterHoldsWhenTheReleaseFails) or recording the next
// attempt (TestChunkRetryAfterHoldsWhenTheRecordFails). The recipient is
// handed to its delivery task with the Retry-After as its delay, as a
// delivery task's own retry waits it (carryOut): the provider is not
// asked again sooner, neither by the chunk's re-run after Asynq's backoff
// nor by a delivery task made at once.
func TestChunkRetryAfterHoldsWhenTheReleaseFails(t *testing.T) {
	t.Parallel()
	lim := &releaseFails{user: "u-busy"}
	e := newEnv(t, envOptions{wrap: func(l Limiter) Limiter { lim.Limiter = l; return lim }})
	checkChunkRetryAfter(e, "chunkretry-release", &lim.failed)
}

func TestChunkRetryAfterHoldsWhenTheRecordFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noRun: true})
	h := &recordFails{job: "chunkretry-record", index: 0}
	e.rdb.AddHook(h)
	e.start()
	t.Cleanup(e.shutdown)
	checkChunkRetryAfter(e, "chunkretry-record", &h.failed)
}

// checkChunkRetryAfter submits job id, whose recipient 0 (u-busy) answers
// 429 with a Retry-After of 3 s and then OK, and whose recipient 1 answers
// OK, and checks that both end delivered, the fault (failed) was reached,
// and u-busy's device was not asked again before its Retry-After.
func checkChunkRetryAfter(e *env, id string, failed *atomic.Bool) {
	e.t.Helper()
	const retryAfter = 3 * time.Second
	busy, calm := fcmToken(id+"-busy"), fcmToken(id+"-calm")
	e.fcm.Script(busy, fake.TooMany(retryAfter), fake.OK())
	job := payload.Job{ID: id, Content: payload.Content{Alert: &payload.Alert{Title: "r"}}, Recipients: []payload.Recipient{
		{UserID: "u-busy", Devices: []payload.Device{{Platform: payload.FCM, Token: busy}}},
		{UserID: "u-calm", Devices: []payload.Device{{Platform: payload.FCM, Token: calm}}},
	}}
	st := e.waitDone(e.submit(job), 30*time.Second)
	if !failed.Load() {
		e.t.Fatal("the fault was never reached")
	}
	if diff := cmp.Diff(counts(2, 0, 0, 0), st.Counts); diff != "" {
		e.t.Errorf("counts (-want +got):\n%s", diff)
	}
	reqs := requestsFor(e.fcm.Requests(), busy)
	if len(reqs) != 2 {
		e.t.Fatalf("%d requests to the throttled device, want 2 (429, then OK)", len(reqs))
	}
	if wait := reqs[1].At.Sub(reqs[0].At); wait < retryAfter {
		e.t.Errorf("asked again %s after a 429 with Retry-After %s", wait, retryAfter)
	}
}

// TestUnrecordedRetryKeepsTheDelay: a retry whose record failed keeps its
// verdict's delay and kind, and its cause names both errors.
func TestUnrecordedRetryKeepsTheDelay(t *testing.T) {
	cause, down := errors.New("QUOTA_EXCEEDED"), errors.New("redis down")
	tests := []struct {
		name string
		v    decide.Verdict
	}{
		{"throttled with a Retry-After", decide.Verdict{Act: decide.ActRetry, Throttled: true, Delay: 3 * time.Second, Cause: cause}},
		{"transient", decide.Verdict{Act: decide.ActRetry, Transient: true, Delay: time.Second, Cause: cause}},
		{"devices left late", decide.Verdict{Act: decide.ActRetry, Cause: cause}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := unrecordedRetry(tt.v, down)
			if n.delay != tt.v.Delay || n.throttled != tt.v.Throttled || n.failed != "" || n.stop {
				t.Errorf("next = %+v, want delay %s, throttled %v", n, tt.v.Delay, tt.v.Throttled)
			}
			if !errors.Is(n.cause, cause) || !errors.Is(n.cause, down) {
				t.Errorf("cause %q does not wrap both %q and %q", n.cause, cause, down)
			}
		})
	}
}

// A device answers 429 with a Retry-After while shutdown is stopping the
// worker (after ShutdownTimeout, before its calls are halted), and another
// process takes the delivery over at once. The retry is recorded with its
// Retry-After (decide.Attempts.RetryAt), so the run that takes it over, a
// chunk's re-run or a delivery task, does not ask the provider sooner.
func TestRetryAfterHoldsAcrossAShutdown(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		recipients int
	}{{"fan-out", 2}, {"single", 1}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const retryAfter = 3 * time.Second
			e := newEnv(t, envOptions{shutdownTimeout: 200 * time.Millisecond})
			id := "shutdown429-" + tt.name
			busy := fcmToken(id + "-busy")
			e.fcm.Script(busy, fake.TooMany(retryAfter).WithLatency(800*time.Millisecond), fake.OK())
			job := payload.Job{ID: id, Content: payload.Content{Alert: &payload.Alert{Title: "r"}}, Recipients: []payload.Recipient{
				{UserID: "u-busy", Devices: []payload.Device{{Platform: payload.FCM, Token: busy}}},
			}}
			if tt.recipients == 2 {
				job.Recipients = append(job.Recipients, payload.Recipient{UserID: "u-calm", Devices: []payload.Device{{Platform: payload.FCM, Token: fcmToken(id + "-calm")}}})
			}
			e.submit(job)
			waitFor(t, 10*time.Second, "the throttled device asked", func() bool { return len(requestsFor(e.fcm.Requests(), busy)) > 0 })
			e.restart()
			st := e.waitDone(id, 30*time.Second)
			if diff := cmp.Diff(counts(tt.recipients, 0, 0, 0), st.Counts); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			reqs := requestsFor(e.fcm.Requests(), busy)
			if len(reqs) != 2 {
				t.Fatalf("%d requests to the throttled device, want 2 (429, then OK)", len(reqs))
			}
			if reqs[0].Answered.IsZero() {
				t.Fatal("the 429 never reached the worker: the shutdown did not happen during its call")
			}
			if wait := reqs[1].At.Sub(reqs[0].Answered); wait < retryAfter {
				t.Errorf("asked again %s after a 429 with Retry-After %s", wait, retryAfter)
			}
		})
	}
}

// enqueueFails is a hook on the worker's Redis: once armed, the first
// command that makes delivery task id fails as a dropped connection would,
// after Redis may or may not have run it.
type enqueueFails struct {
	id     string
	armed  func() bool
	failed atomic.Bool
}

func (h *enqueueFails) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *enqueueFails) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		for _, a := range c.Args() {
			if s, ok := a.(string); ok && strings.Contains(s, h.id) && h.armed() && h.failed.CompareAndSwap(false, true) {
				c.SetErr(errDropped)
				return errDropped
			}
		}
		return next(ctx, c)
	}
}

func (h *enqueueFails) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A fan-out's device answers 429 with a Retry-After; the retry is
// recorded, but making the recipient's delivery task fails, so the
// chunk's re-run hands the recipient over again, at once. The delivery
// task waits out the recorded Retry-After (decide.Attempts.RetryAt) before it
// asks the provider again.
func TestChunkRetryAfterHoldsWhenTheHandoffFails(t *testing.T) {
	t.Parallel()
	const id = "chunkretry-handoff"
	e := newEnv(t, envOptions{noRun: true})
	busy := fcmToken(id + "-busy")
	h := &enqueueFails{id: task.DeliveryID(id, 0), armed: func() bool {
		reqs := requestsFor(e.fcm.Requests(), busy)
		return len(reqs) > 0 && !reqs[0].Answered.IsZero()
	}}
	e.rdb.AddHook(h)
	e.start()
	t.Cleanup(e.shutdown)
	checkChunkRetryAfter(e, id, &h.failed)
}
