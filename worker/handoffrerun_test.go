package worker

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// handoffLost is a hook on a job's commands. The first booking round trip
// of the job loses its bookings' answers (the cancellation read answers),
// so the job task hands its recipients to their delivery tasks; the first
// delivery task's creation runs but its answer is lost, so the job task
// fails and runs again. The delivery task's read of its recipient's state
// waits until the re-run read the job's cancellation, and the first
// device outcome written waits until that read is done: the re-run and
// the delivery task both find the recipient untouched.
type handoffLost struct {
	job string

	bookLost atomic.Bool // the first booking round trip lost its bookings
	enqLost  atomic.Bool // the delivery task's creation answered an error

	rerunRead    chan struct{}
	deliveryRead chan struct{}
	once1, once2 sync.Once
}

func (h *handoffLost) kind(cmd redis.Cmder) string {
	args := cmd.Args()
	name := strings.ToLower(args[0].(string))
	switch {
	case name == "hget" && len(args) == 3 && args[1] == store.JobKey(h.job) && args[2] == store.FieldCancelled:
		return "cancel-read"
	case (name == "evalsha" || name == "eval") && len(args) > 3:
		if k, ok := args[3].(string); ok && strings.HasSuffix(k, ":t:"+task.DeliveryID(h.job, 0)) {
			return "enqueue-0"
		}
	case name == "hget" && len(args) == 3 && args[1] == store.RecpKey(h.job):
		return "delivery-read"
	case name == "hset" && len(args) > 1 && args[1] == store.DevKey(h.job):
		return "device-write"
	}
	return ""
}

func (h *handoffLost) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *handoffLost) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		switch h.kind(cmd) {
		case "enqueue-0":
			err := next(ctx, cmd)
			if h.enqLost.CompareAndSwap(false, true) {
				return errDropped // the task exists; its creator is told it failed
			}
			// The re-run hands the recipient to the task again, without
			// booking it: it is done with the recipient.
			h.once1.Do(func() { close(h.rerunRead) })
			return err
		case "cancel-read":
			err := next(ctx, cmd)
			if h.bookLost.Load() && h.enqLost.Load() {
				h.once1.Do(func() { close(h.rerunRead) })
			}
			return err
		}
		return next(ctx, cmd)
	}
}

func (h *handoffLost) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		kinds := map[string]bool{}
		for _, c := range cmds {
			kinds[h.kind(c)] = true
		}
		switch {
		case kinds["cancel-read"]:
			err := next(ctx, cmds)
			if h.bookLost.CompareAndSwap(false, true) {
				for _, c := range cmds {
					if h.kind(c) == "" {
						c.SetErr(errDropped)
					}
				}
				return nil
			}
			if h.enqLost.Load() {
				h.once1.Do(func() { close(h.rerunRead) })
			}
			return err
		case kinds["delivery-read"]:
			select {
			case <-h.rerunRead:
			case <-time.After(10 * time.Second): // no re-run read the cancellation
			}
			err := next(ctx, cmds)
			h.once2.Do(func() { close(h.deliveryRead) })
			return err
		case kinds["device-write"]:
			select {
			case <-h.deliveryRead:
			case <-time.After(10 * time.Second): // no orphan task read its state
			}
		}
		return next(ctx, cmds)
	}
}

// A recipient a job task's run hands to its delivery task, when the
// answer to that task's creation is lost (the task exists), reaches its
// device once: the job task's re-run and the delivery task do not both
// send it.
//
// Every hand-off marks the recipient before its task is made, and a re-run
// leaves a marked recipient to its task (deliverChunk). Without the
// marker the re-run finds the recipient untouched and sends it in process
// while the delivery task sends it too, both under the same limiter
// member (internal/faultsim seed 1 met it, without a kill).
func TestHandoffWithLostReplySendsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noRun: true})
	h := &handoffLost{job: "lostenq", rerunRead: make(chan struct{}), deliveryRead: make(chan struct{})}
	e.rdb.AddHook(h)
	e.start()
	t.Cleanup(e.shutdown)
	job := alertJob("lostenq", "lostenq", apnsRecipient("a", apnsToken("lostenq/a")), apnsRecipient("b", apnsToken("lostenq/b")))
	e.submit(job)
	st := e.waitDone2("lostenq", 30*time.Second)
	if !h.bookLost.Load() || !h.enqLost.Load() {
		t.Fatalf("faults not reached: bookings lost %v, delivery task's creation lost %v", h.bookLost.Load(), h.enqLost.Load())
	}
	for _, u := range []string{"a", "b"} {
		if n := len(requestsFor(e.apns.Requests(), apnsToken("lostenq/"+u))); n != 1 {
			t.Errorf("recipient %s got %d pushes, want 1", u, n)
		}
	}
	t.Logf("counts %v", st.Counts)
}
