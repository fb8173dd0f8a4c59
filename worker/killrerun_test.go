package worker

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/task"
)

// leaseExpired is a hook on Asynq's dequeue script: the first time it hands
// out the delivery task of task, it tells the worker the task was retried
// once, as Asynq's recoverer does when the lease of a killed process's run
// expires. Asynq encodes the count as field 6 of its task message
// (proto3, a varint), and a field given twice keeps its last value.
type leaseExpired struct {
	task string
	done atomic.Bool
}

func (h *leaseExpired) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *leaseExpired) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		name := strings.ToLower(args[0].(string))
		if err != nil || (name != "evalsha" && name != "eval") || len(args) < 4 {
			return err
		}
		if k, _ := args[3].(string); !strings.HasSuffix(k, ":pending") {
			return err
		}
		c, ok := cmd.(*redis.Cmd)
		if !ok {
			return err
		}
		if msg, ok := c.Val().(string); ok && strings.Contains(msg, h.task) && h.done.CompareAndSwap(false, true) {
			c.SetVal(msg + "\x30\x01") // retried = 1
		}
		return err
	}
}

func (h *leaseExpired) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A task run again after a run was killed during its provider call keeps
// the booking that run found late: the push may have reached the user at
// that slot, so the slot stays in the user's rules, and the re-run books
// under the next attempt instead of giving it back. The delivery task
// knows it from its own retry count; a job task's re-run, which hands a
// booking an earlier run made to the delivery task, tells it so.
//
// The kill's aftermath is built here: the recipient's first booking made
// and left late with nothing recorded (what the killed run leaves), and the
// re-run told by Asynq it ran before (the recoverer's retry after the
// lease expired). Given back, the slot would leave room in the user's
// window for one more push than the rules allow (internal/faultsim seed 1
// met a third push within 2 s under a kill, rule 2/2s).
func TestRerunAfterKillKeepsLateBooking(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		task func(job string) string // the task the kill hit
	}{
		{"delivery task", func(job string) string { return task.DeliveryID(job, 0) }},
		{"job task", task.JobID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := "killed-" + strings.Fields(tt.name)[0]
			e := newEnv(t, envOptions{noRun: true})
			h := &leaseExpired{task: tt.task(job)}
			e.rdb.AddHook(h)
			ctx := context.Background()
			member := task.Member(job, 0, 0)
			r, err := e.lim.Reserve(ctx, "u", member)
			if err != nil || r.Refused != "" || r.Existing {
				t.Fatalf("first booking: %+v, %v", r, err)
			}
			booked := time.Now()
			waitFor(t, 10*time.Second, "the booking to be late", func() bool { return time.Since(booked) > 2*decide.LateRebook })
			e.start()
			t.Cleanup(e.shutdown)
			e.submit(alertJob(job, job, apnsRecipient("u", apnsToken(job+"/a"))))
			e.waitDone(job, 30*time.Second)
			if !h.done.Load() {
				t.Fatal("the re-run never ran")
			}
			e.lim.mu.Lock()
			released := slices.Clone(e.lim.released)
			e.lim.mu.Unlock()
			if slices.Contains(released, member) {
				t.Errorf("released %v: the booking a killed run's push may have gone out under was given back", released)
			}
			if _, ok := e.lim.slot(task.Member(job, 0, 1)); !ok {
				t.Errorf("no booking under the next attempt (%s)", task.Member(job, 0, 1))
			}
			if n := len(requestsFor(e.apns.Requests(), apnsToken(job+"/a"))); n != 1 {
				t.Errorf("the device got %d pushes in this run, want 1", n)
			}
		})
	}
}
