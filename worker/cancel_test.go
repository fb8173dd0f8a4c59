package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
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
		args[1] == jobKey(h.job) && args[2] == fieldCancelled
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
