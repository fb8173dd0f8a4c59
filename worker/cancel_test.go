package worker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// cancelReads is a go-redis hook on a worker's client that sees each read
// of job's cancellation (an HGET of its cancelled_at, alone or inside a
// pipeline): before runs ahead of the round trip carrying it, after once
// the read has its answer: it gets the read's error (redis.Nil: not
// cancelled) and returns the one the reader sees.
type cancelReads struct {
	job    string
	before func(ctx context.Context)
	after  func(ctx context.Context, err error) error
}

func (h *cancelReads) is(cmd redis.Cmder) bool {
	args := cmd.Args()
	return len(args) == 3 && strings.EqualFold(args[0].(string), "hget") &&
		args[1] == store.JobKey(h.job) && args[2] == store.FieldCancelled
}

func (h *cancelReads) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cancelReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.is(cmd) {
			return next(ctx, cmd)
		}
		if h.before != nil {
			h.before(ctx)
		}
		err := next(ctx, cmd)
		if h.after != nil {
			err = h.after(ctx, err)
		}
		return err // the client sets it on cmd
	}
}

func (h *cancelReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var reads []redis.Cmder
		for _, c := range cmds {
			if h.is(c) {
				reads = append(reads, c)
			}
		}
		if len(reads) > 0 && h.before != nil {
			h.before(ctx)
		}
		err := next(ctx, cmds)
		for _, c := range reads {
			if h.after != nil {
				c.SetErr(h.after(ctx, c.Err()))
			}
		}
		return err
	}
}

// A cancel that is not the first waits on its own clock: the process that
// cancelled first runs 5 s behind, and a push allowed by a read just
// before that first cancellation, sent 1 s after the read (well within
// the cancellation window), still reaches the provider before the second
// cancel's answer.
func TestRepeatedCancelWaitsOnItsOwnClock(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{bypass: []payload.Priority{payload.PriorityCritical}, noRun: true})
	read, answered := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.rdb.AddHook(&cancelReads{job: "late", after: func(ctx context.Context, err error) error {
		if !errors.Is(err, redis.Nil) {
			return err // cancelled
		}
		once.Do(func() {
			// The first cancel, stamped by a clock 5 s behind, lands
			// right after the read...
			if _, err := e.client.store.cancel(ctx, "late", time.Now().Add(-5*time.Second)); err != nil {
				t.Error(err)
			}
			close(read)
			// ... and this process stalls between the read and its send.
			stall := time.NewTimer(time.Second)
			defer stall.Stop()
			select {
			case <-answered:
			case <-stall.C:
			}
		})
		return err
	}})
	e.start()
	t.Cleanup(e.shutdown)
	job, tok := tokenJob("late", "u", func(j *payload.Job) { j.Priority = payload.PriorityCritical })
	e.submit(job)
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("the job's cancellation was never read")
	}
	if _, err := e.client.Cancel(context.Background(), "late"); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	close(answered)
	e.waitDone2("late", 10*time.Second)
	for _, r := range requestsFor(e.apns.Requests(), tok) {
		if r.At.After(at) {
			t.Errorf("a push arrived %s after the second cancel's answer", r.At.Sub(at))
		}
	}
}

// TestCancelHeldDelivery cancels a job with one recipient delivered and
// one held for its slot: the answer comes once nothing can be sent and
// says so, the held delivery ends cancelled with its booking given back
// and a dropped event, the delivered one stays delivered; cancelling again
// changes nothing. (The HTTP API's DELETE /v1/notifications/{id} answers
// with this Cancel's result: worker/httpapi's tests.)
func TestCancelHeldDelivery(t *testing.T) {
	e := newEnv(t, envOptions{limits: "5/1m", gap: "1h"})
	e.waitDone(e.submit(alertJob("first", "1", apnsRecipient("u-1", apnsToken("first")))), 10*time.Second)
	held, sent := apnsToken("held"), apnsToken("sent")
	// u-1 had a push: its delivery is deferred by the hour's gap.
	id := e.submit(alertJob("c-1", "c", apnsRecipient("u-1", held), apnsRecipient("u-2", sent)))
	waitFor(t, 10*time.Second, "u-2 delivered, u-1 held for its slot", func() bool {
		st, err := e.client.Status(t.Context(), id)
		if err != nil || st.Counts[task.Delivered] != 1 || st.Deferrals != 1 {
			return false
		}
		// Held: created to run at its slot (or handed back until then), in
		// the task its held marker names.
		info, err := e.heldTask(id, 0)
		return err == nil && (info.State == asynq.TaskStateScheduled || info.State == asynq.TaskStateRetry)
	})
	if _, ok := e.lim.slot("c-1/0"); !ok {
		t.Fatal("the held delivery has no booking")
	}

	asked := time.Now()
	got, err := e.client.Cancel(t.Context(), id)
	took := time.Since(asked)
	if err != nil || !got.Cancelled || got.State != jobCancelled {
		t.Fatalf("Cancel: %+v %v, want cancelled", got, err)
	}
	if took < cancelGrace {
		t.Errorf("Cancel answered after %s, want at least the grace %s (a delivery was pending)", took, cancelGrace)
	}
	// The held delivery was woken at once and has most likely dropped
	// itself by now; the answer may still count it pending.
	if c := got.Counts; c[task.Delivered] != 1 || c[task.Cancelled]+c["pending"] != 1 {
		t.Errorf("Cancel counts %v, want 1 delivered and 1 cancelled (or still pending)", c)
	}
	if at := got.CancelledAt; at.Before(asked.Add(-time.Second)) || at.After(asked.Add(time.Second)) {
		t.Errorf("cancelled at %s, want about %s", at, asked.UTC())
	}

	var st JobStatus
	waitFor(t, 10*time.Second, "the held delivery cancelled", func() bool {
		st, err = e.client.Status(t.Context(), id)
		return err == nil && st.Counts[task.Cancelled] == 1
	})
	wantCounts := map[string]int{"delivered": 1, "expired": 0, "token_invalid": 0, "failed": 0, "throttle_full": 0, "collapsed": 0, "cancelled": 1, "opted_out": 0, "pending": 0}
	if diff := cmp.Diff(wantCounts, st.Counts); diff != "" {
		t.Errorf("Status counts (-want +got):\n%s", diff)
	}
	if st.State != jobCancelled || !st.CancelledAt.Equal(got.CancelledAt) {
		t.Errorf("Status after the cancel: %+v, want state cancelled and cancelled at %s", st, got.CancelledAt)
	}

	again, err := e.client.Cancel(t.Context(), id)
	if err != nil || again.Cancelled || !again.CancelledAt.Equal(got.CancelledAt) {
		t.Errorf("second Cancel: %+v %v, want cancelled false, the first cancellation's instant", again, err)
	}

	if n := len(requestsFor(e.apns.Requests(), held)); n != 0 {
		t.Errorf("the cancelled delivery was sent (%d requests)", n)
	}
	if n := len(requestsFor(e.apns.Requests(), sent)); n != 1 {
		t.Errorf("the delivered recipient got %d requests, want 1", n)
	}
	// A cancelled delivery gives its booking back.
	if ls, err := e.lim.Status(t.Context(), "u-1", time.UTC); err != nil || slices.ContainsFunc(ls.Entries, func(en throttle.Entry) bool { return en.At.After(ls.Now) }) {
		t.Errorf("u-1's limiter after the cancel: %+v %v, want no booking after now", ls.Entries, err)
	}
	// Events are at least once: one for u-1, perhaps repeated.
	var dropped []Event
	for _, ev := range e.events() {
		if ev.Type == EventDropped {
			dropped = append(dropped, ev)
		}
	}
	if len(dropped) == 0 || slices.ContainsFunc(dropped, func(ev Event) bool {
		return ev.Reason != task.Cancelled || ev.Job != id || ev.UserID != "u-1"
	}) {
		t.Errorf("dropped events %+v, want u-1's of %s with reason cancelled", dropped, id)
	}

	if _, err := e.client.Cancel(t.Context(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Cancel of an unknown job: %v, want ErrNotFound", err)
	}
}
