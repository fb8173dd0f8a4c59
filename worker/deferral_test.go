package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/task"
)

// TestDeferral sends several jobs to one user under tight rules: arrivals
// keep the windows and the gap, every push arrives at or after its booked
// slot and within 1.5 s of it, and deferrals are never failures.
func TestDeferral(t *testing.T) {
	const jobs = 6
	const limitN, window, gap = 2, 2 * time.Second, 500 * time.Millisecond
	const tolerance = 250 * time.Millisecond
	e := newEnv(t, envOptions{limits: "2/2s", gap: "500ms"})

	tokens := map[string]string{} // token -> member
	var ids []string
	for i := range jobs {
		tok := apnsToken(fmt.Sprintf("defer-%d", i))
		id := e.submit(alertJob(fmt.Sprintf("defer-%d", i), "n", apnsRecipient("u-busy", tok)))
		tokens[tok] = id + "/0"
		ids = append(ids, id)
	}
	if e.waitDelivered(ids, 30*time.Second) == 0 {
		t.Errorf("no delivery was deferred through the queue; the test does not exercise deferral")
	}

	reqs := e.apns.Requests()
	if len(reqs) != jobs {
		t.Fatalf("fake APNs got %d requests, want %d", len(reqs), jobs)
	}
	var arrivals []time.Time
	for _, r := range reqs {
		member := tokens[r.Token]
		slot, ok := e.lim.slot(member)
		if !ok {
			t.Errorf("%s: no booking recorded", member)
			continue
		}
		late := r.At.Sub(slot)
		t.Logf("%s: arrived %+.3fs after its slot", member, late.Seconds())
		if late < 0 {
			t.Errorf("%s arrived %s before its slot", member, -late)
		}
		if late > 1500*time.Millisecond {
			t.Errorf("%s arrived %s after its slot, want within 1.5s", member, late)
		}
		arrivals = append(arrivals, r.At)
	}
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(arrivals); i++ {
		if d := arrivals[i].Sub(arrivals[i-1]); d < gap-tolerance {
			t.Errorf("arrivals %d and %d only %s apart, want at least the gap %s", i-1, i, d, gap)
		}
		if i >= limitN {
			if d := arrivals[i].Sub(arrivals[i-limitN]); d < window-tolerance {
				t.Errorf("arrivals %d..%d within %s: more than %d in a %s window", i-limitN, i, d, limitN, window)
			}
		}
	}

	info, err := e.insp.GetQueueInfo(string(payload.PriorityNormal))
	if err != nil {
		t.Fatal(err)
	}
	if info.FailedTotal != 0 || info.Archived != 0 || info.Retry != 0 {
		t.Errorf("queue: failed %d, archived %d, retry %d; want deferrals never counted as failures", info.FailedTotal, info.Archived, info.Retry)
	}
}

// lateOnce makes the first two bookings of each member look one second
// old, as if the delivery had woken late: the chunk's (which hands the
// recipient to its delivery task) and the delivery task's first.
type lateOnce struct {
	Limiter
	mu   sync.Mutex
	seen map[string]int
}

func (l *lateOnce) ReserveBatch(ctx context.Context, reqs []throttle.Request) ([]throttle.Reservation, error) {
	rs, err := l.Limiter.ReserveBatch(ctx, reqs)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range rs {
		if m := reqs[i].Member; !r.Now.IsZero() && l.seen[m] < 2 {
			l.seen[m]++
			rs[i].Existing, rs[i].At, rs[i].Wait = true, r.Now.Add(-time.Second), 0
		}
	}
	return rs, err
}

// TestLateWakeRebooks: a delivery that finds its slot well in the past
// books a new one instead of sending late, unless it already reached the
// user.
func TestLateWakeRebooks(t *testing.T) {
	e := newEnv(t, envOptions{wrap: func(l Limiter) Limiter { return &lateOnce{Limiter: l, seen: map[string]int{}} }})
	st := e.waitDone(e.submit(alertJob("late", "l", apnsRecipient("u-1", apnsToken("late")))), 10*time.Second)
	if st.Counts[task.Delivered] != 1 {
		t.Errorf("counts %v, want delivered", st.Counts)
	}
	e.lim.mu.Lock()
	released := slices.Clone(e.lim.released)
	e.lim.mu.Unlock()
	if diff := cmp.Diff([]string{"late/0"}, released); diff != "" {
		t.Errorf("released (-want +got):\n%s", diff)
	}
}

// TestFanOutHeldBackWakesAtItsSlots: two jobs of 150 recipients to the
// same users under a 5 s gap (longer than a wait in place), on a running
// worker. The second job's chunks (the job task's own, and its chunk
// task) find every user booked: each recipient is held back in a held
// task that Asynq wakes (held.go), counted once, and arrives once, at or
// after its slot, the gap kept.
func TestFanOutHeldBackWakesAtItsSlots(t *testing.T) {
	const n, gap, tolerance = 150, 5 * time.Second, 250 * time.Millisecond
	e := newEnv(t, envOptions{limits: "100/1m", gap: "5s"})
	first := e.submit(fanJob("one", n))
	e.waitDone(first, 20*time.Second)
	second := e.submit(fanJob("two", n))
	st := e.waitDone(second, 30*time.Second)
	if st.Counts[task.Delivered] != n || st.Deferrals != n {
		t.Errorf("second job: counts %v, %d deferrals; want %d delivered, each deferred once", st.Counts, st.Deferrals, n)
	}
	reqs := e.apns.Requests()
	for i := range n {
		a := requestsFor(reqs, apnsToken(fmt.Sprint("one", i)))
		b := requestsFor(reqs, apnsToken(fmt.Sprint("two", i)))
		if len(a) != 1 || len(b) != 1 {
			t.Errorf("user %d got %d and %d pushes, want 1 and 1", i, len(a), len(b))
			continue
		}
		if d := b[0].At.Sub(a[0].At); d < gap-tolerance {
			t.Errorf("user %d: pushes %s apart, want at least %s", i, d, gap)
		}
		slot, ok := e.lim.slot(fmt.Sprintf("two/%d", i))
		if !ok {
			t.Errorf("user %d: no booking for the second push", i)
			continue
		}
		if late := b[0].At.Sub(slot); late < 0 || late > 1500*time.Millisecond {
			t.Errorf("user %d: second push arrived %s after its slot, want within [0, 1.5s]", i, late)
		}
	}
}

// slowBatch answers the first booking of each member 300 ms late, as if
// the process had stalled between booking and sending.
type slowBatch struct {
	*recordingLimiter
	seen *sync.Map
}

func (l slowBatch) ReserveBatch(ctx context.Context, reqs []throttle.Request) ([]throttle.Reservation, error) {
	return l.ReserveBatchWith(ctx, reqs, nil)
}

func (l slowBatch) ReserveBatchWith(ctx context.Context, reqs []throttle.Request, queue func(redis.Pipeliner)) ([]throttle.Reservation, error) {
	rs, err := l.recordingLimiter.ReserveBatchWith(ctx, reqs, queue)
	if _, seen := l.seen.LoadOrStore(reqs[0].Member, true); !seen {
		// The stall being simulated, in real time as a stalled process lives
		// it: the slot just booked is on the limiter's clock (Redis TIME).
		time.Sleep(300 * time.Millisecond)
	}
	return rs, err
}

// TestChunkLateForItsSlotRebooks: a chunk that would reach the provider
// more than decide.LateRebook after the slot it booked sends nothing; the
// recipient's delivery task gives the slot back, books a new one and sends
// right after it.
func TestChunkLateForItsSlotRebooks(t *testing.T) {
	e := newEnv(t, envOptions{wrap: func(l Limiter) Limiter { return slowBatch{l.(*recordingLimiter), new(sync.Map)} }})
	tok := apnsToken("slow")
	st := e.waitDone(e.submit(alertJob("slow", "s", apnsRecipient("u-1", tok))), 10*time.Second)
	if st.Counts[task.Delivered] != 1 {
		t.Errorf("counts %v, want delivered", st.Counts)
	}
	e.lim.mu.Lock()
	released := slices.Clone(e.lim.released)
	e.lim.mu.Unlock()
	if diff := cmp.Diff([]string{"slow/0"}, released); diff != "" {
		t.Errorf("released (-want +got):\n%s", diff)
	}
	reqs := requestsFor(e.apns.Requests(), tok)
	slot, ok := e.lim.slot("slow/0")
	if len(reqs) != 1 || !ok {
		t.Fatalf("%d pushes, booked %v; want 1 push and its booking", len(reqs), ok)
	}
	e.checkSentInTime("the push", reqs[0].At, slot, tok)
}

// lateFirst is a sender that finds its first push late for its SendBy,
// as a real sender does when it gets to a call after it, and sends the
// others through the real sender.
type lateFirst struct {
	Sender
	calls atomic.Int32
}

func (s *lateFirst) Send(ctx context.Context, p providers.Push) providers.Result {
	if s.calls.Add(1) == 1 {
		return providers.Result{Outcome: providers.Transient, Reason: "late for its slot", Err: fmt.Errorf("apns: %w", providers.ErrNotSent)}
	}
	return s.Sender.Send(ctx, p)
}

// TestSenderLateForSendByCountsLate: a push the sender finds late for its
// SendBy never left, so it is counted in hush_late_sends_total, not as a
// provider answer or a provider call's latency, and the delivery is booked
// again and delivered once.
func TestSenderLateForSendByCountsLate(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	app, _ := e.w.apps.Get(DefaultApp)
	app.Senders[payload.APNs] = &lateFirst{Sender: app.Senders[payload.APNs]}
	e.start()
	t.Cleanup(e.shutdown)
	tok := apnsToken("late-sender")
	st := e.waitDone(e.submit(alertJob("late-sender", "l", apnsRecipient("u-1", tok))), 10*time.Second)
	if st.Counts[task.Delivered] != 1 {
		t.Errorf("counts %v, want delivered", st.Counts)
	}
	if got := len(requestsFor(e.apns.Requests(), tok)); got != 1 {
		t.Errorf("%d pushes, want 1", got)
	}
	if got := e.lateSends(); got != 1 {
		t.Errorf("hush_late_sends_total %d, want 1", got)
	}
	sends := func(outcome string) float64 {
		return testutil.ToFloat64(e.w.m.deviceSends.WithLabelValues(DefaultApp, string(payload.APNs), outcome))
	}
	if d, tr := sends("delivered"), sends("transient"); d != 1 || tr != 0 {
		t.Errorf("hush_device_sends_total delivered %v, transient %v; want 1 and 0 (a push not sent is no provider answer)", d, tr)
	}
	var h dto.Metric
	if err := e.w.m.latency.WithLabelValues(DefaultApp, string(payload.APNs)).(prometheus.Histogram).Write(&h); err != nil {
		t.Fatal(err)
	}
	if n := h.GetHistogram().GetSampleCount(); n != 1 {
		t.Errorf("%d provider latencies observed, want 1 (the call made)", n)
	}
}

// lateFor is a sender that finds the first late[token] pushes to each
// token late for their SendBy and sends every other push through the real
// sender.
type lateFor struct {
	Sender
	mu   sync.Mutex
	late map[string]int
}

func (s *lateFor) Send(ctx context.Context, p providers.Push) providers.Result {
	s.mu.Lock()
	late := s.late[p.Token] > 0
	if late {
		s.late[p.Token]--
	}
	s.mu.Unlock()
	if late {
		return providers.Result{Outcome: providers.Transient, Reason: "late for its slot", Err: fmt.Errorf("apns: %w", providers.ErrNotSent)}
	}
	return s.Sender.Send(ctx, p)
}

// TestLateAfterADeliveryGivesItsBookingBack: once one device of a
// recipient has the push, an attempt whose devices are all late for their
// slot sent nothing: it gives its booking back and books again under the
// same attempt, so the user's rules hold only the bookings the pushes
// went out under.
func TestLateAfterADeliveryGivesItsBookingBack(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	ok, slow := apnsToken("late-ok"), apnsToken("late-slow")
	app, _ := e.w.apps.Get(DefaultApp)
	app.Senders[payload.APNs] = &lateFor{Sender: app.Senders[payload.APNs], late: map[string]int{slow: 3}}
	e.start()
	t.Cleanup(e.shutdown)
	st := e.waitDone(e.submit(alertJob("late-after", "l", apnsRecipient("u-1", ok, slow))), 20*time.Second)
	if st.Counts[task.Delivered] != 1 {
		t.Errorf("counts %v, want delivered", st.Counts)
	}
	if got := len(requestsFor(e.apns.Requests(), slow)); got != 1 {
		t.Fatalf("late device got %d pushes, want 1", got)
	}
	ls, err := e.lim.Status(context.Background(), "u-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, en := range ls.Entries {
		held = append(held, en.Member)
	}
	slices.Sort(held)
	// The first device's push went out under the chunk's booking, the
	// second's under the retry's first attempt, booked again in place
	// after each late try.
	if diff := cmp.Diff([]string{"late-after/0", "late-after/0#1"}, held); diff != "" {
		t.Errorf("the user's bookings (-want +got):\n%s", diff)
	}
}

// TestDeferralIsLoggedWithItsSlot: at info level, a deferred delivery says
// for which user, until which slot and held by which rule, so the log
// shows a user's pacing and why.
func TestDeferralIsLoggedWithItsSlot(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	logs := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})
	e := newEnv(t, envOptions{gap: "3s", logs: logs})
	e.waitDone(e.submit(alertJob("pace-1", "1", apnsRecipient("u-pace", apnsToken("pace")))), 10*time.Second)
	id := e.submit(alertJob("pace-2", "2", apnsRecipient("u-pace", apnsToken("pace"))))
	waitFor(t, 10*time.Second, "a deferred line", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(buf.String(), "delivery deferred until its slot")
	})
	e.waitDone(id, 15*time.Second)
	mu.Lock()
	defer mu.Unlock()
	for _, line := range strings.Split(buf.String(), "\n") {
		if !strings.Contains(line, "delivery deferred until its slot") {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		slot, err := time.Parse(time.RFC3339Nano, fmt.Sprint(rec["slot"]))
		if rec["level"] != "INFO" || rec["user_id"] != "u-pace" || err != nil || rec["wait"] == nil {
			t.Errorf("deferred line %s: want level INFO, user_id u-pace, an RFC 3339 slot and the wait", line)
		}
		if rec["rule"] != "min-gap 3s" {
			t.Errorf("deferred line %s: rule %v, want min-gap 3s", line, rec["rule"])
		}
		if until := time.Until(slot); until > 3*time.Second {
			t.Errorf("slot %s is %s away, want within the 3 s gap", slot, until)
		}
		return
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestExpiryBeforeItsSlotNamesTheRule: a delivery dropped as expired
// because its earliest slot is past its deadline, which may still be
// hours ahead, says which rule's slot that is, so an early "expired"
// explains itself.
func TestExpiryBeforeItsSlotNamesTheRule(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	logs := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})
	e := newEnv(t, envOptions{limits: "100/1m", gap: "10s", logs: logs})
	e.waitDone(e.submit(alertJob("gap-1", "1", apnsRecipient("u-gap", apnsToken("gap")))), 10*time.Second)
	late := alertJob("gap-2", "2", apnsRecipient("u-gap", apnsToken("gap")))
	late.TTL = payload.Duration(2 * time.Second)
	if st := e.waitDone(e.submit(late), 10*time.Second); st.Counts[task.Expired] != 1 {
		t.Fatalf("counts %v, want the second push expired", st.Counts)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, line := range strings.Split(buf.String(), "\n") {
		if !strings.Contains(line, "delivery expires before its slot") {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["user_id"] != "u-gap" || rec["rule"] != "min-gap 10s" || rec["slot"] == nil {
			t.Errorf("expiry line %s: want user_id u-gap, rule min-gap 10s and the slot", line)
		}
		return
	}
	t.Errorf("no \"delivery expires before its slot\" line in:\n%s", buf.String())
}
