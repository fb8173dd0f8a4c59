package worker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// TestStoreRecordWritesAFoldedDevice: record.lua writes the device state
// folded into it (dev_field) with the keys' TTL whenever its job does not
// retire in that call: the job goes on, the recipient was final already,
// or the record is gone (as store.Recorder would write it); the call that
// retires the job writes none, so the job never has a device-state hash.
func TestStoreRecordWritesAFoldedDevice(t *testing.T) {
	ctx := context.Background()
	s := newStore(redistest.Client(t), DefaultJobRetention)
	prefix := redistest.Prefix(t)
	record := func(c *task.Chunk, recipient int, final string) {
		t.Helper()
		rec := &chunkRecord{folded: &foldedAnswer{pending: true,
			o: store.DeviceOutcome{Job: c.Job, Field: store.DevField(recipient, 0), State: task.Delivered, TTL: c.TTL()}}}
		rec.final(recipient, final, Event{})
		if _, err := s.record(ctx, c, rec); err != nil {
			t.Fatal(err)
		}
	}
	device := func(id string, recipient int) (string, time.Duration) {
		t.Helper()
		return s.rdb.HGet(ctx, store.DevKey(id), store.DevField(recipient, 0)).Val(), s.rdb.PTTL(ctx, store.DevKey(id)).Val()
	}
	newJob := func(name string, recipients int) *task.Chunk {
		c := &task.Chunk{Job: prefix + name, AcceptedAt: time.Now()}
		t.Cleanup(func() { s.rdb.Del(context.Background(), store.JobKeys(c.Job)...) })
		s.rdb.HSet(ctx, store.JobKey(c.Job), "queue", "normal", "state", store.JobFannedOut, "recipients", recipients,
			"accepted_at", "2026-11-25T10:00:00Z")
		return c
	}

	// The job goes on (recipient 1 has no final state): written.
	on := newJob("on", 2)
	record(on, 0, task.Delivered)
	if st, ttl := device(on.Job, 0); st != task.Delivered || ttl <= 0 {
		t.Errorf("job going on: device 0/0 %q with TTL %v, want delivered with a TTL", st, ttl)
	}
	// Recipient 0 again (already final, nothing new): written all the same.
	s.rdb.HDel(ctx, store.DevKey(on.Job), store.DevField(0, 0))
	record(on, 0, task.Delivered)
	if st, _ := device(on.Job, 0); st != task.Delivered {
		t.Errorf("recipient already final: device 0/0 %q, want delivered", st)
	}
	// The last recipient retires the job: no device-state hash left.
	record(on, 1, task.Delivered)
	if n := s.rdb.Exists(ctx, store.JobKeys(on.Job)...).Val(); n != 0 {
		t.Errorf("%d of the retired job's keys left, want none", n)
	}

	// A job of one recipient retires in the call: the hash is never made.
	one := newJob("one", 1)
	record(one, 0, task.Delivered)
	if n := s.rdb.Exists(ctx, store.DevKey(one.Job)).Val(); n != 0 {
		t.Error("the retiring call left a device-state hash")
	}
	if st, err := s.status(ctx, one.Job); err != nil || st.State != jobDone || st.Counts[task.Delivered] != 1 {
		t.Errorf("status %+v, %v: want done with 1 delivered", st, err)
	}

	// The record is gone (its TTL ran out): the device state is written,
	// with a TTL, as store.Recorder would.
	gone := &task.Chunk{Job: prefix + "gone", AcceptedAt: time.Now()}
	t.Cleanup(func() { s.rdb.Del(context.Background(), store.JobKeys(gone.Job)...) })
	record(gone, 0, task.Delivered)
	if st, ttl := device(gone.Job, 0); st != task.Delivered || ttl <= 0 {
		t.Errorf("record gone: device 0/0 %q with TTL %v, want delivered with a TTL", st, ttl)
	}
	if n := s.rdb.Exists(ctx, store.JobKey(gone.Job)).Val(); n != 0 {
		t.Error("the call made a job record where there was none")
	}
}

// TestFoldedAnswerOnlyForOneDevice: a single-recipient job with one device
// writes that device's answer in its record call (no write of the
// device-state hash at all: the job retires in that call); one with two
// devices writes each answer as it comes, before the record call, since
// the first answer would otherwise wait for the second's.
func TestFoldedAnswerOnlyForOneDevice(t *testing.T) {
	e := newEnv(t, envOptions{})
	l := &commandLog{}
	e.rdb.AddHook(l)
	one := e.submit(alertJob("fold-one", "f", apnsRecipient("u-f1", apnsToken("fold-one"))))
	two := e.submit(alertJob("fold-two", "f", apnsRecipient("u-f2", apnsToken("fold-two-a"), apnsToken("fold-two-b"))))
	for _, id := range []string{one, two} {
		if st := e.waitDone(id, 10*time.Second); st.Counts[task.Delivered] != 1 {
			t.Errorf("job %s: counts %v, want delivered", id, st.Counts)
		}
	}
	for _, tok := range []string{"fold-one", "fold-two-a", "fold-two-b"} {
		if got := len(requestsFor(e.apns.Requests(), apnsToken(tok))); got != 1 {
			t.Errorf("device %s got %d pushes, want 1", tok, got)
		}
	}
	l.mu.Lock()
	cmds := slices.Clone(l.cmds)
	l.mu.Unlock()
	if slices.Contains(cmds, "hset "+store.DevKey(one)) {
		t.Errorf("the one-device job wrote its device-state hash (commands %v): its answer was not folded", cmds)
	}
	// (Two answers within the recorder's linger may share one HSET.)
	if !slices.Contains(cmds, "hset "+store.DevKey(two)) {
		t.Errorf("the two-device job never wrote its device-state hash (commands %v): an answer waited for the other's", cmds)
	}
}

// TestShutdownRecordsFoldedAnswers: single-recipient jobs whose provider
// answers after the shutdown timeout (500 ms; answers take 1 s) are
// stopped by a restart. Their answers, folded into their record calls, are
// written before the worker stops: each device got the push once and
// every job is delivered, none sent again by the new worker.
func TestShutdownRecordsFoldedAnswers(t *testing.T) {
	const n = 6
	e := newEnv(t, envOptions{shutdownTimeout: 500 * time.Millisecond})
	var ids []string
	for i := range n {
		tok := apnsToken(fmt.Sprintf("slow-fold-%d", i))
		e.apns.Script(tok, fake.OK().WithLatency(time.Second))
		ids = append(ids, e.submit(alertJob(fmt.Sprintf("slow-fold-%d", i), "s", apnsRecipient(fmt.Sprintf("u-sf-%d", i), tok))))
	}
	waitFor(t, 10*time.Second, "every push at the provider", func() bool { return len(e.apns.Requests()) >= n })
	e.restart()
	for _, id := range ids {
		if st := e.waitDone(id, 20*time.Second); st.Counts[task.Delivered] != 1 {
			t.Errorf("job %s: counts %v, want delivered", id, st.Counts)
		}
	}
	for i := range n {
		if got := len(requestsFor(e.apns.Requests(), apnsToken(fmt.Sprintf("slow-fold-%d", i)))); got != 1 {
			t.Errorf("device %d got %d pushes, want exactly 1", i, got)
		}
	}
	if got := e.rdb.Keys(t.Context(), "hush:job:{*}:dev").Val(); len(slices.DeleteFunc(got, func(k string) bool { return !strings.Contains(k, "slow-fold") })) != 0 {
		t.Errorf("device-state hashes left: %v", got)
	}
}

// TestHeldJobFoldsItsAnswer: a single-recipient job the limiter defers
// (the user's 3 s gap: longer than a task waits in place) waits with the
// held jobs and, when its slot comes, writes its one device's answer in
// its record call too: no write of a device-state hash, one push.
func TestHeldJobFoldsItsAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{gap: "3s"})
	l := &commandLog{}
	e.rdb.AddHook(l)
	first := e.submit(alertJob("held-fold-1", "h", apnsRecipient("u-hf", apnsToken("held-fold-1"))))
	second := e.submit(alertJob("held-fold-2", "h", apnsRecipient("u-hf", apnsToken("held-fold-2"))))
	// Either may be booked first (two tasks, or one batch: under load the
	// order is not the submissions'); the other is held for the gap.
	if e.waitDelivered([]string{first, second}, 10*time.Second) == 0 {
		t.Fatal("neither job was deferred: the test proves nothing about held jobs")
	}
	for _, tok := range []string{"held-fold-1", "held-fold-2"} {
		if got := len(requestsFor(e.apns.Requests(), apnsToken(tok))); got != 1 {
			t.Errorf("device %s got %d pushes, want 1", tok, got)
		}
	}
	l.mu.Lock()
	cmds := slices.Clone(l.cmds)
	l.mu.Unlock()
	for _, id := range []string{first, second} {
		if slices.Contains(cmds, "hset "+store.DevKey(id)) {
			t.Errorf("job %s wrote its device-state hash: its answer was not folded", id)
		}
	}
}
