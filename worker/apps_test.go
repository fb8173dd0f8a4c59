package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/task"
)

// otherAPNs starts a second fake APNs and the real sender for topic on it.
func otherAPNs(t *testing.T, topic string) (*fake.APNs, Sender) {
	t.Helper()
	fa, err := fake.StartAPNs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fa.Close)
	dir := t.TempDir()
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fa, apnsSenderFor(t, fa, dir, keyFile, keyID, teamID, topic)
}

// scopedLimiter is a Redis limiter for policy under scope.
func scopedLimiter(t *testing.T, rdb *redis.Client, policy throttle.Policy, scope string) *throttle.Redis {
	t.Helper()
	l, err := throttle.NewRedis(rdb, policy, throttle.Options{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Two apps, each with its own APNs credentials (another topic on another
// endpoint) and its own budget per user: every push reaches its app's
// endpoint with its app's topic, the same user id is throttled per app,
// and a job naming no app, an unknown one or a platform its app has no
// credentials for is refused, naming the field.
func TestAppsSendWithTheirOwnCredentialsAndBudgets(t *testing.T) {
	t.Parallel()
	var courier *fake.APNs
	gap := throttle.Policy{MinGap: 3 * time.Second}
	e := newEnv(t, envOptions{apps: func(rdb *redis.Client, lim Limiter, senders map[payload.Platform]Sender) []App {
		var cs Sender
		courier, cs = otherAPNs(t, "com.example.courier")
		return []App{
			{Name: "consumer", Senders: senders, Limiter: scopedLimiter(t, rdb, gap, "consumer"), Policy: gap},
			{Name: "courier", Senders: map[payload.Platform]Sender{payload.APNs: cs}, Limiter: scopedLimiter(t, rdb, gap, "courier"), Policy: gap},
		}
	}})
	a, b := tokenOf("consumer/u"), tokenOf("courier/u")
	for _, j := range []payload.Job{
		withApp(alertJob("c1", "c1", apnsRecipient("u", a)), "consumer"),
		withApp(alertJob("k1", "k1", apnsRecipient("u", b)), "courier"),
	} {
		e.submit(j)
	}
	e.waitDone("c1", 10*time.Second)
	e.waitDone("k1", 10*time.Second)
	ra, rb := requestsFor(e.apns.Requests(), a), requestsFor(courier.Requests(), b)
	if len(ra) != 1 || len(rb) != 1 || len(requestsFor(e.apns.Requests(), b)) != 0 || len(requestsFor(courier.Requests(), a)) != 0 {
		t.Fatalf("consumer's endpoint got %d and %d, courier's %d: want each push at its own app's endpoint only", len(ra), len(requestsFor(e.apns.Requests(), b)), len(rb))
	}
	if ra[0].Header.Get("apns-topic") != apnsTopic || rb[0].Header.Get("apns-topic") != "com.example.courier" {
		t.Errorf("topics %q and %q", ra[0].Header.Get("apns-topic"), rb[0].Header.Get("apns-topic"))
	}
	if d := ra[0].At.Sub(rb[0].At).Abs(); d > 2*time.Second {
		t.Errorf("the same user id's pushes of two apps %s apart: want separate budgets (at once), not the 3 s gap", d)
	}
	refused := []struct {
		name  string
		job   payload.Job
		field string
		msg   string
	}{
		{"no app", alertJob("x1", "x", apnsRecipient("u", a)), "app", "required: this deployment serves the apps consumer, courier"},
		{"unknown app", withApp(alertJob("x2", "x", apnsRecipient("u", a)), "brand"), "app", `unknown app "brand" (configured: consumer, courier)`},
		{"no fcm credentials", withApp(alertJob("x3", "x", payload.Recipient{UserID: "u", Devices: []payload.Device{{Platform: payload.FCM, Token: fcmToken("x")}}}), "courier"),
			"app", `app "courier" has no fcm credentials (recipients[0].devices[0] is fcm)`},
	}
	for _, r := range refused {
		_, err := e.client.Enqueue(context.Background(), r.job)
		var ve *payload.ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Field != r.field || ve.Problems[0].Message != r.msg {
			t.Errorf("%s: %v, want one problem on %s: %s", r.name, err, r.field, r.msg)
		}
	}
}

func withApp(j payload.Job, app string) payload.Job {
	j.App = app
	return j
}

func tokenOf(s string) string { return apnsToken(s) }

// An app's max rate paces its sends across the process: 60 recipients at
// 20/s take about 3 s, no second holds more than rateTolerance allows, and
// every push arrives once, the held ones booked again rather than
// dropped, by the chunk's waves rather than one task each.
func TestMaxRatePacesAnAppsSends(t *testing.T) {
	t.Parallel()
	const rate, n = 20, 60
	e := newEnv(t, envOptions{concurrency: 25, apps: func(rdb *redis.Client, lim Limiter, senders map[payload.Platform]Sender) []App {
		p := throttle.Policy{MinGap: time.Second}
		return []App{{Name: "bulk", Senders: senders, Limiter: scopedLimiter(t, rdb, p, "bulk"), Policy: p,
			MaxRate: map[payload.Platform]float64{payload.APNs: rate}}}
	}})
	var rs []payload.Recipient
	for i := range n {
		rs = append(rs, apnsRecipient("p"+string(rune('A'+i)), tokenOf("pace/"+string(rune('A'+i)))))
	}
	e.submit(alertJob("fan", "fan", rs...))
	st := e.waitDone("fan", 30*time.Second)
	if st.Counts[task.Delivered] != n {
		t.Fatalf("counts %v, want %d delivered", st.Counts, n)
	}
	reqs := e.apns.Requests()
	if len(reqs) != n {
		t.Fatalf("%d requests, want %d (each once)", len(reqs), n)
	}
	at := make([]time.Time, len(reqs))
	for i, r := range reqs {
		at[i] = r.At
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	if span := at[n-1].Sub(at[0]); span < time.Duration(n-1)*time.Second/rate-200*time.Millisecond {
		t.Errorf("%d sends over %s, want about %s at %d/s", n, span, time.Duration(n-1)*time.Second/rate, rate)
	}
	most := mostInOneSecond(at)
	if limit := rateTolerance(rate); most > limit {
		t.Errorf("%d sends within one second, want at most %d", most, limit)
	}
	// The recipients the rate held near their turns were booked again and
	// sent by the chunk's waves, not one delivery task each.
	tasks := 0
	queues, err := e.insp.Queues()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		qi, err := e.insp.GetQueueInfo(q)
		if err != nil {
			t.Fatal(err)
		}
		tasks += qi.Processed
	}
	if tasks > n/4 {
		t.Errorf("%d tasks ran for %d recipients; want the held ones sent by their waves (a few tasks for the job and its chunks)", tasks, n)
	}
	t.Logf("%d sends at %d/s: spread over %s, most in any second %d; %d tasks ran", n, rate, at[n-1].Sub(at[0]).Round(time.Millisecond), most, tasks)
}

// A paced fan-out whose users' own rules hold some of them further than
// their turns: those recipients are booked again from their turns, found
// later by the gap, and go to their tasks with that booking; every push
// arrives once, each user's gap and the app's rate hold.
func TestMaxRateWithUsersHeldByTheirRules(t *testing.T) {
	t.Parallel()
	const rate, gap = 20, 2 * time.Second
	e := newEnv(t, envOptions{concurrency: 25, apps: func(rdb *redis.Client, lim Limiter, senders map[payload.Platform]Sender) []App {
		p := throttle.Policy{MinGap: gap}
		return []App{{Name: "bulk", Senders: senders, Limiter: scopedLimiter(t, rdb, p, "bulk"), Policy: p,
			MaxRate: map[payload.Platform]float64{payload.APNs: rate}}}
	}})
	user := func(i int) string { return fmt.Sprintf("g%02d", i) }
	var first, second []payload.Recipient
	for i := range 10 {
		first = append(first, apnsRecipient(user(i), tokenOf("gap1/"+user(i))))
	}
	for i := range 40 {
		second = append(second, apnsRecipient(user(i), tokenOf("gap2/"+user(i))))
	}
	e.submit(alertJob("gap1", "gap1", first...))
	e.submit(alertJob("gap2", "gap2", second...))
	for _, id := range []string{"gap1", "gap2"} {
		if st := e.waitDone(id, 30*time.Second); st.Counts[task.Delivered] != len(map[string][]payload.Recipient{"gap1": first, "gap2": second}[id]) {
			t.Fatalf("%s: counts %v", id, st.Counts)
		}
	}
	reqs := e.apns.Requests()
	if len(reqs) != 50 {
		t.Fatalf("%d requests, want 50 (each push once)", len(reqs))
	}
	byUser := map[string][]time.Time{}
	var at []time.Time
	for _, r := range reqs {
		at = append(at, r.At)
	}
	for i := range 40 {
		for _, pre := range []string{"gap1/", "gap2/"} {
			for _, r := range requestsFor(reqs, tokenOf(pre+user(i))) {
				byUser[user(i)] = append(byUser[user(i)], r.At)
			}
		}
	}
	for u, ts := range byUser {
		slices.SortFunc(ts, time.Time.Compare)
		for k := 1; k < len(ts); k++ {
			if d := ts[k].Sub(ts[k-1]); d < gap-50*time.Millisecond {
				t.Errorf("user %s: pushes %s apart, min gap %s", u, d, gap)
			}
		}
	}
	slices.SortFunc(at, time.Time.Compare)
	most := mostInOneSecond(at)
	if limit := rateTolerance(rate); most > limit {
		t.Errorf("%d sends within one second, want at most %d", most, limit)
	}
	t.Logf("50 sends at %d/s, 10 users held 2 s by their gap: spread over %s, most in any second %d", rate, at[len(at)-1].Sub(at[0]).Round(time.Millisecond), most)
}

// A shutdown while a paced wave waits for its turns: the wave's held
// recipients were booked again and are waiting in the chunk when the
// worker stops (timeout 300 ms); a new worker finishes the job. Every push
// arrives exactly once, and the rate holds across the restart (the turns
// granted before it and not used are not used after it either).
func TestShutdownWhileAPacedWaveWaits(t *testing.T) {
	t.Parallel()
	const rate, n = 20, 60
	e := newEnv(t, envOptions{concurrency: 25, shutdownTimeout: 300 * time.Millisecond, apps: func(rdb *redis.Client, lim Limiter, senders map[payload.Platform]Sender) []App {
		p := throttle.Policy{MinGap: time.Second}
		return []App{{Name: "bulk", Senders: senders, Limiter: scopedLimiter(t, rdb, p, "bulk"), Policy: p,
			MaxRate: map[payload.Platform]float64{payload.APNs: rate}}}
	}})
	var rs []payload.Recipient
	for i := range n {
		rs = append(rs, apnsRecipient(fmt.Sprintf("s%02d", i), tokenOf(fmt.Sprintf("stop/%02d", i))))
	}
	e.submit(alertJob("stop", "stop", rs...))
	waitFor(t, 10*time.Second, "a third of the paced sends", func() bool { return len(e.apns.Requests()) >= n/3 })
	e.restart()
	st := e.waitDone("stop", 30*time.Second)
	if st.Counts[task.Delivered] != n {
		t.Errorf("counts %v, want %d delivered", st.Counts, n)
	}
	for i := range n {
		if got := len(requestsFor(e.apns.Requests(), tokenOf(fmt.Sprintf("stop/%02d", i)))); got != 1 {
			t.Errorf("recipient %d got %d pushes, want exactly 1", i, got)
		}
	}
	var at []time.Time
	for _, r := range e.apns.Requests() {
		at = append(at, r.At)
	}
	slices.SortFunc(at, time.Time.Compare)
	most := mostInOneSecond(at)
	if limit := rateTolerance(rate); most > limit {
		t.Errorf("%d sends within one second across the restart, want at most %d", most, limit)
	}
	t.Logf("%d sends at %d/s across a restart: spread over %s, most in any second %d", len(at), rate, at[len(at)-1].Sub(at[0]).Round(time.Millisecond), most)
}

// Swapping the apps while a send is on its way: the send finishes with the
// sender it began with, and the next job goes to the new one.
func TestAppsSwapKeepsSendsUnderWay(t *testing.T) {
	t.Parallel()
	var lim Limiter
	e := newEnv(t, envOptions{apps: func(rdb *redis.Client, l Limiter, senders map[payload.Platform]Sender) []App {
		lim = l
		return []App{{Name: DefaultApp, Senders: senders, Limiter: l}}
	}})
	e.apns.Script("", fake.OK().WithLatency(time.Second))
	other, os := otherAPNs(t, apnsTopic)
	slow := tokenOf("swap/slow")
	e.submit(alertJob("slow", "slow", apnsRecipient("u1", slow)))
	waitFor(t, 5*time.Second, "the slow send under way", func() bool { return len(requestsFor(e.apns.Requests(), slow)) == 1 })
	if err := e.w.apps.Swap(App{Name: DefaultApp, Senders: map[payload.Platform]Sender{payload.APNs: os}, Limiter: lim}); err != nil {
		t.Fatal(err)
	}
	next := tokenOf("swap/next")
	e.submit(alertJob("next", "next", apnsRecipient("u2", next)))
	if st := e.waitDone("slow", 10*time.Second); st.Counts[task.Delivered] != 1 {
		t.Errorf("slow: %v, want delivered by the old sender", st.Counts)
	}
	e.waitDone("next", 10*time.Second)
	if len(requestsFor(e.apns.Requests(), slow)) != 1 || len(requestsFor(other.Requests(), slow)) != 0 {
		t.Errorf("the send under way was sent again")
	}
	if len(requestsFor(other.Requests(), next)) != 1 || len(requestsFor(e.apns.Requests(), next)) != 0 {
		t.Errorf("the job after the swap did not go to the new sender")
	}
}

// mostInOneSecond is the most instants of at (sorted) within one second.
func mostInOneSecond(at []time.Time) int {
	most := 0
	for i := range at {
		k := i
		for k < len(at) && at[k].Sub(at[i]) < time.Second {
			k++
		}
		most = max(most, k-i)
	}
	return most
}

// rateTolerance is the most sends at rate per second a provider may see
// in any one second: the one bound (MaxRateBound, docs/delivery.md).
func rateTolerance(rate float64) int { return MaxRateBound(rate) }
