package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// The tests of issue 10: each tries to break one delivery guarantee the
// way an operator or a hostile client would.

// TestShutdownRecordsAnsweredSends: a 30-recipient job delivered in waves
// of 10, the second wave slow at the provider, is stopped by a shutdown
// whose timeout (500 ms) is shorter than the slow answers. A new worker
// finishes the job: every device got the push exactly once (the slow
// wave's answers were recorded, not sent again by the re-run).
func TestShutdownRecordsAnsweredSends(t *testing.T) {
	const n = 30
	e := newEnv(t, envOptions{shutdownTimeout: 500 * time.Millisecond})
	job := alertJob("waves", "w")
	for i := range n {
		tok := apnsToken(fmt.Sprintf("waves-%d", i))
		job.Recipients = append(job.Recipients, apnsRecipient(fmt.Sprintf("u-%d", i), tok))
		if i >= 10 && i < 20 {
			e.apns.Script(tok, fake.OK().WithLatency(time.Second))
		}
	}
	e.submit(job)
	waitFor(t, 10*time.Second, "the slow wave at the provider", func() bool { return len(e.apns.Requests()) >= 20 })
	e.restart()
	st := e.waitDone(job.ID, 30*time.Second)
	if st.Counts[task.Delivered] != n {
		t.Errorf("counts %v, want %d delivered", st.Counts, n)
	}
	for i := range n {
		if got := len(requestsFor(e.apns.Requests(), apnsToken(fmt.Sprintf("waves-%d", i)))); got != 1 {
			t.Errorf("recipient %d got %d pushes, want exactly 1", i, got)
		}
	}
}

// TestJobIDsCannotTakeInternalTaskIDs: job ids containing "/" once shared
// the namespace of delivery and chunk task ids. Job "x/0" submitted while
// job "x" holds a deferred delivery for recipient 0, and job "y/0" while
// "y" does, are both accepted (not answered as duplicates), and every job
// delivers.
func TestJobIDsCannotTakeInternalTaskIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{gap: "3s"})
	ctx := t.Context()
	warm := alertJob("warm", "w", apnsRecipient("u-x", apnsToken("warm-x")), apnsRecipient("u-y", apnsToken("warm-y")))
	e.waitDone(e.submit(warm), 10*time.Second)
	// x and y: recipient 0 is held back by the gap (a deferred delivery
	// task "x/0" in the old namespace).
	x := e.submit(alertJob("x", "x", apnsRecipient("u-x", apnsToken("x"))))
	y := e.submit(alertJob("y", "y", apnsRecipient("u-y", apnsToken("y"))))
	waitFor(t, 5*time.Second, "x and y deferred", func() bool {
		sx, _ := e.client.Status(ctx, x)
		sy, _ := e.client.Status(ctx, y)
		return sx.Deferrals > 0 && sy.Deferrals > 0
	})
	for _, id := range []string{"x/0", "y/0", "x/c1", "delivery:x/0"} {
		acc, err := e.client.Enqueue(ctx, alertJob(id, id, apnsRecipient("u-"+id, apnsToken("t-"+id))))
		if err != nil {
			t.Fatalf("enqueue %s: %v", id, err)
		}
		if acc.Duplicate {
			t.Errorf("job %s answered as a duplicate: a new job lost", id)
		}
	}
	for _, id := range []string{"x", "y", "x/0", "y/0", "x/c1", "delivery:x/0"} {
		if st := e.waitDone(id, 15*time.Second); st.Counts[task.Delivered] != 1 {
			t.Errorf("job %s: counts %v, want delivered", id, st.Counts)
		}
	}
}

// TestPartialRetryBooksItsOwnSlot: device A is delivered, device B fails
// transiently; the user's next push is booked 3 s later. B's retry books a
// slot of its own instead of going out at once on top of the next push:
// every push to B, and every delivery to the user, stays 3 s apart.
func TestPartialRetryBooksItsOwnSlot(t *testing.T) {
	const gap, tolerance = 3 * time.Second, 250 * time.Millisecond
	e := newEnv(t, envOptions{gap: "3s", maxRetry: 3})
	a, b := apnsToken("dev-a"), apnsToken("dev-b")
	e.apns.Script(b, fake.Status(http.StatusServiceUnavailable), fake.OK())
	first := e.submit(alertJob("p1", "one", apnsRecipient("u-p", a, b)))
	waitFor(t, 5*time.Second, "the first push at the provider", func() bool { return len(e.apns.Requests()) >= 2 })
	second := e.submit(alertJob("p2", "two", apnsRecipient("u-p", a, b)))
	e.waitDone(first, 20*time.Second)
	e.waitDone(second, 20*time.Second)
	var ok []fake.Request
	for _, r := range e.apns.Requests() {
		if r.Status == http.StatusOK {
			ok = append(ok, r)
		}
	}
	slices.SortFunc(ok, func(x, y fake.Request) int { return x.At.Compare(y.At) })
	// Per device: consecutive pushes a gap apart.
	for _, tok := range []string{a, b} {
		rs := requestsFor(ok, tok)
		if len(rs) != 2 {
			t.Fatalf("device %s got %d pushes, want 2", tok[:8], len(rs))
		}
		if d := rs[1].At.Sub(rs[0].At); d < gap-tolerance {
			t.Errorf("device %s got two pushes %s apart, want at least %s", tok[:8], d, gap)
		}
	}
	// Per user: sends within tolerance of each other are one delivery (all
	// devices at one slot); consecutive deliveries a gap apart.
	var groups []time.Time
	for _, r := range ok {
		if len(groups) == 0 || r.At.Sub(groups[len(groups)-1]) > tolerance {
			groups = append(groups, r.At)
		}
	}
	for i := 1; i < len(groups); i++ {
		if d := groups[i].Sub(groups[i-1]); d < gap-tolerance {
			t.Errorf("user got deliveries %s apart, want at least %s (at %v)", d, gap, groups)
		}
	}
}

// TestProviderThrottlingBacksOffAndEnds: a provider that answers 429
// without Retry-After (every APNs 429) is asked again after a backoff that
// grows with the delivery's attempts, and the delivery ends (archived)
// once HUSH_MAX_THROTTLED has passed, instead of a request a second
// forever.
func TestProviderThrottlingBacksOffAndEnds(t *testing.T) {
	testkit.Slow(t, "waits out Asynq retries 1, 2 and 4 s apart")
	e := newEnv(t, envOptions{maxThrottled: 5 * time.Second})
	tok := apnsToken("busy")
	e.apns.Script(tok, fake.TooMany(0))
	id := e.submit(alertJob("busy", "b", apnsRecipient("u-b", tok)))
	st := e.waitDone(id, 40*time.Second)
	if st.Counts[task.Failed] != 1 {
		t.Errorf("counts %v, want failed", st.Counts)
	}
	reqs := requestsFor(e.apns.Requests(), tok)
	if len(reqs) < 3 || len(reqs) > 5 {
		t.Errorf("%d requests to a provider throttling for 5 s, want 3 to 5 (backoff 1, 2, 4 s)", len(reqs))
	}
	// Attempt k waits decide.Backoff(k) (in [2^k/2, 2^k] s) plus a second for
	// Asynq's whole-second wake-up, less up to a second of its truncation.
	for i := 1; i < len(reqs); i++ {
		if d, least := reqs[i].At.Sub(reqs[i-1].At), (500*time.Millisecond)<<(i-1); d < least {
			t.Errorf("request %d came %s after the one before, want at least %s (backoff of attempt %d)", i, d, least, i-1)
		}
	}
	arch := e.archived(1)
	if len(arch) != 1 || !strings.Contains(arch[0].LastErr, "HUSH_MAX_THROTTLED") {
		t.Errorf("archived %v, want the delivery archived naming HUSH_MAX_THROTTLED", arch)
	}
}

// TestAcceptedAtIsSetByHushAlone: a caller's accepted_at would shrink the
// records' TTL, let a past deadline through or stretch one: the Client
// refuses it, naming the field (and so does the API, through it: its
// TestAPISubmit).
func TestAcceptedAtIsSetByHushAlone(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	job := alertJob("stamped", "s", apnsRecipient("u-s", apnsToken("stamped")))
	job.AcceptedAt = time.Now().Add(-30 * 24 * time.Hour)
	_, err := e.client.Enqueue(t.Context(), job)
	var ve *payload.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "accepted_at") {
		t.Errorf("Enqueue with accepted_at: %v, want a validation error naming accepted_at", err)
	}
	if ok, _ := e.w.store.exists(t.Context(), "stamped"); ok {
		t.Error("the refused job was stored")
	}
}

// TestFloodForOneUserIsCapped: a user who already holds
// HUSH_THROTTLE_MAX_PENDING held pushes gets no further booking; the next
// delivery is dropped with reason throttle_full (an event and a final
// state), so a flood cannot make every decision for that user slower.
func TestFloodForOneUserIsCapped(t *testing.T) {
	e := newEnv(t, envOptions{gap: "10s", maxPending: 3})
	var ids []string
	for i := range 5 {
		ids = append(ids, e.submit(alertJob(fmt.Sprintf("flood-%d", i), "f", apnsRecipient("u-flood", apnsToken("flood")))))
		// In order, so the first four take the bookings.
		waitFor(t, 5*time.Second, "job "+ids[i]+" booked", func() bool {
			st, err := e.client.Status(t.Context(), ids[i])
			return err == nil && (st.Counts["pending"] == 0 || st.Deferrals > 0)
		})
	}
	st := e.waitDone(ids[4], 10*time.Second)
	if st.Counts[task.ThrottleFull] != 1 {
		t.Errorf("fifth job: counts %v, want throttle_full", st.Counts)
	}
	var full int
	for _, ev := range e.events() {
		if ev.Type == EventDropped && ev.Reason == task.ThrottleFull && ev.Job == ids[4] {
			full++
		}
	}
	if full != 1 {
		t.Errorf("%d dropped events with reason throttle_full for %s, want 1", full, ids[4])
	}
	if e.hasEntry("u-flood", task.Member(ids[4], 0, 0)) {
		t.Error("the dropped delivery holds a booking")
	}
}

// panicSender panics inside Send, as a bug in an SDK would.
type panicSender struct{}

func (panicSender) Send(context.Context, providers.Push) providers.Result { panic("sdk bug") }

// TestProviderPanicIsATransientOutcome: a panic inside a provider call
// fails the delivery like a transient error (archived after
// HUSH_MAX_RETRY) instead of killing the process.
func TestProviderPanicIsATransientOutcome(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	app, _ := e.w.apps.Get(DefaultApp)
	app.Senders[payload.FCM] = panicSender{}
	e.start()
	t.Cleanup(e.shutdown)
	job := alertJob("panics", "p", payload.Recipient{UserID: "u-p", Devices: []payload.Device{{Platform: payload.FCM, Token: fcmToken("p")}}})
	st := e.waitDone(e.submit(job), 10*time.Second)
	if st.Counts[task.Failed] != 1 {
		t.Errorf("counts %v, want failed", st.Counts)
	}
	if arch := e.archived(1); len(arch) != 1 || !strings.Contains(arch[0].LastErr, "panic") {
		t.Errorf("archived %v, want the delivery archived with the panic", arch)
	}
	// The process lives on: the next job is delivered.
	if st := e.waitDone(e.submit(alertJob("after", "a", apnsRecipient("u-a", apnsToken("after")))), 10*time.Second); st.Counts[task.Delivered] != 1 {
		t.Errorf("after the panic: counts %v, want delivered", st.Counts)
	}
}

// commandLog remembers the order of the commands a client sends.
type commandLog struct {
	mu   sync.Mutex
	cmds []string
}

func (l *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error { l.add(c); return next(ctx, c) }
}
func (l *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cs []redis.Cmder) error {
		for _, c := range cs {
			l.add(c)
		}
		return next(ctx, cs)
	}
}
func (l *commandLog) add(c redis.Cmder) {
	args := c.Args()
	if len(args) < 2 {
		return
	}
	l.mu.Lock()
	l.cmds = append(l.cmds, fmt.Sprint(args[0], " ", args[1]))
	l.mu.Unlock()
}

// TestTokenInvalidEventBeforeItsState: the token_invalid event is appended
// before the device's state is recorded, so a process dying between the
// two sends again on its re-run and emits the event again: it is never
// lost.
func TestTokenInvalidEventBeforeItsState(t *testing.T) {
	e := newEnv(t, envOptions{})
	l := &commandLog{}
	e.rdb.AddHook(l)
	tok := apnsToken("dead")
	e.apns.Script(tok, fake.Unregistered())
	id := e.submit(alertJob("dead", "d", apnsRecipient("u-d", tok)))
	e.waitDone(id, 10*time.Second)
	l.mu.Lock()
	cmds := slices.Clone(l.cmds)
	l.mu.Unlock()
	xadd := slices.Index(cmds, "xadd "+EventsStream)
	hset := slices.Index(cmds, "hset "+store.DevKey(id))
	if xadd < 0 || hset < 0 || xadd > hset {
		t.Errorf("commands %v: want the event's XADD before the device state's HSET", cmds)
	}
}

// TestNotReadyHidesRedisInternals: NotReady, which the unauthenticated
// /readyz shows, says redis is unavailable, without the addresses or
// server text of the cause.
func TestNotReadyHidesRedisInternals(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	lim, err := throttle.NewRedis(rdb, throttle.Policy{MinGap: time.Second}, throttle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(rdb, Options{Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	srv.Down()
	problems := strings.Join(w.NotReady(t.Context()), "; ")
	if !strings.Contains(problems, "redis unavailable") {
		t.Errorf("NotReady: %q, want it to say redis unavailable", problems)
	}
	for _, leak := range []string{"127.0.0.1", "dial", "connect", "refused"} {
		if strings.Contains(problems, leak) {
			t.Errorf("NotReady %q shows %q", problems, leak)
		}
	}
}

// TestNoSendStartsNearTheTaskDeadline: Asynq fails a task at its Timeout
// and schedules a retry while the handler may still wait for a provider's
// answer, so a retry elsewhere could send the push again. A handler
// therefore starts no provider call within taskMargin of its task's
// deadline: it hands the task back (not a failure) and the next run sends
// once.
func TestNoSendStartsNearTheTaskDeadline(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	job := fanJob("late", 3)
	task := jobTask(t, job)

	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(taskMargin-time.Second))
	defer cancel()
	err := e.w.handleJob(ctx, task)
	if err == nil || isFailure(err) {
		t.Fatalf("job task run %s before its deadline: err %v, want a hand-back (not a failure)", taskMargin-time.Second, err)
	}
	if n := len(e.apns.Requests()); n != 0 {
		t.Fatalf("%d provider calls started within taskMargin (%s) of the task's deadline, want 0", n, taskMargin)
	}

	if err := e.w.handleJob(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if n := len(requestsFor(e.apns.Requests(), apnsToken(fmt.Sprint("late", i)))); n != 1 {
			t.Errorf("recipient %d: %d pushes after the next run, want 1", i, n)
		}
	}
}

// TestHandlingStopsTaskMarginBeforeTheDeadline: the handler's context ends
// taskMargin before its task's deadline, as a hand-back (Canceled).
func TestHandlingStopsTaskMarginBeforeTheDeadline(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(taskMargin+200*time.Millisecond))
	defer cancel()
	hctx, done := e.w.handling(ctx)
	defer done()
	select {
	case <-hctx.Done():
		if !errors.Is(hctx.Err(), context.Canceled) {
			t.Errorf("handler context ended with %v, want context.Canceled (a hand-back)", hctx.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context did not end taskMargin before the task's deadline")
	}
	if deliveryTimeout < 2*taskMargin || jobTimeout < 2*taskMargin {
		t.Errorf("task timeouts (delivery %s, job %s) leave handlers less than taskMargin (%s) to work", deliveryTimeout, jobTimeout, taskMargin)
	}
}
