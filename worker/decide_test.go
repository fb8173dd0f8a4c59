package worker

import (
	"errors"
	"testing"
	"time"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/task"
)

func TestPlan(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	booked := func(wait time.Duration) throttle.Reservation {
		return throttle.Reservation{At: t0.Add(wait), Wait: wait, Now: t0}
	}
	existing := func(age time.Duration) throttle.Reservation {
		// Booked earlier for an instant age before the limiter's now.
		return throttle.Reservation{At: t0.Add(-age), Existing: true, Now: t0}
	}
	tests := []struct {
		name     string
		r        throttle.Reservation
		now      time.Time // local; mid is t0
		deadline time.Time
		carried  bool // a device has the push under this booking
		want     step
		wantWait time.Duration
	}{
		{"allowed now", booked(0), t0, time.Time{}, false, stepSend, 0},
		{"allowed, a little time gone since", booked(0), t0.Add(80 * ms), time.Time{}, false, stepSend, 0},
		{"near: wait in place", booked(2 * time.Second), t0, time.Time{}, false, stepWait, 2 * time.Second},
		{"exactly the inline limit waits", booked(maxInlineWait), t0, time.Time{}, false, stepWait, maxInlineWait},
		{"far: defer", booked(time.Minute), t0, time.Time{}, false, stepDefer, time.Minute},
		{"a new booking gone stale while this process stalled", booked(0), t0.Add(300 * ms), time.Time{}, false, stepRebook, 0},
		{"slot at the deadline expires", booked(time.Minute), t0, t0.Add(time.Minute), false, stepExpire, 0},
		{"slot just before the deadline is sent", booked(time.Minute), t0, t0.Add(time.Minute + ms), false, stepDefer, time.Minute},
		{"refused: after NotAfter", throttle.Reservation{Refused: throttle.RefusedLate, Now: t0}, t0, t0.Add(time.Hour), false, stepExpire, 0},
		{"refused: too many held", throttle.Reservation{Refused: throttle.RefusedFull, Now: t0}, t0, time.Time{}, false, stepFull, 0},
		{"refused: opted out", throttle.Reservation{At: t0, Refused: throttle.RefusedOptedOut, Now: t0}, t0, time.Time{}, false, stepOptedOut, 0},
		{"refused: opted out, even late and carried", throttle.Reservation{At: t0, Refused: throttle.RefusedOptedOut, Now: t0}, t0.Add(time.Second), time.Time{}, true, stepOptedOut, 0},
		{"refused: opted out, even past the deadline", throttle.Reservation{At: t0, Refused: throttle.RefusedOptedOut, Now: t0}, t0, t0, false, stepOptedOut, 0},
		{"existing, on time", existing(50 * ms), t0, time.Time{}, false, stepSend, 0},
		{"existing, late, nothing delivered: rebook", existing(time.Second), t0, time.Time{}, false, stepRebook, 0},
		{"existing, late, a device has it under this booking: next attempt", existing(time.Second), t0, time.Time{}, true, stepNext, 0},
		{"existing in the future: wait", throttle.Reservation{At: t0.Add(time.Second), Wait: time.Second, Existing: true, Now: t0}, t0, time.Time{}, false, stepWait, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plan(tt.r, t0, t0, tt.now, tt.deadline, tt.carried)
			if got.step != tt.want || got.wait != tt.wantWait {
				t.Errorf("plan = %s wait %s, want %s wait %s", got.step, got.wait, tt.want, tt.wantWait)
			}
			if (got.step == stepSend || got.step == stepWait || got.step == stepDefer) && !got.slot.Equal(t0.Add(tt.r.Wait)) {
				t.Errorf("slot %s, want mid + Wait = %s", got.slot, t0.Add(tt.r.Wait))
			}
		})
	}
}

func TestRoute(t *testing.T) {
	far := time.Minute
	p := func(s step, wait time.Duration) planned { return planned{step: s, wait: wait} }
	tests := []struct {
		name string
		p    planned
		by   holder
		want routed
	}{
		{"delivery sends now", p(stepSend, 0), byDelivery, routed{move: moveSend}},
		{"delivery waits in place", p(stepWait, time.Second), byDelivery, routed{move: moveSend}},
		{"delivery defers by the wait", p(stepDefer, far), byDelivery, routed{move: moveDefer, delay: far, deferred: true}},
		{"delivery drops when full", p(stepFull, 0), byDelivery, routed{move: moveDrop, reason: task.ThrottleFull}},
		{"delivery drops when expired", p(stepExpire, 0), byDelivery, routed{move: moveDrop, reason: task.Expired}},
		{"delivery drops when collapsed", p(stepCollapsed, 0), byDelivery, routed{move: moveDrop, reason: task.Collapsed}},
		{"delivery drops when opted out", p(stepOptedOut, 0), byDelivery, routed{move: moveDrop, reason: task.OptedOut}},
		{"delivery books again", p(stepRebook, 0), byDelivery, routed{move: moveRebook}},
		{"delivery books the next attempt", p(stepNext, 0), byDelivery, routed{move: moveNext}},
		{"wave sends now", p(stepSend, 0), byWave, routed{move: moveSend}},
		{"wave holds a near slot back", p(stepWait, time.Second), byWave, routed{move: moveNear}},
		{"wave holds a far slot back", p(stepDefer, far), byWave, routed{move: moveDefer, delay: deferDelay(far), deferred: true}},
		{"wave hands an expired one over", p(stepExpire, 0), byWave, routed{move: moveHand}},
		{"wave hands a full one over", p(stepFull, 0), byWave, routed{move: moveHand}},
		{"wave hands a collapsed one over", p(stepCollapsed, 0), byWave, routed{move: moveHand}},
		{"wave hands an opted-out one over", p(stepOptedOut, 0), byWave, routed{move: moveHand}},
		{"held task hands an opted-out one over", p(stepOptedOut, 0), byHeld, routed{move: moveHand}},
		{"turn hands an opted-out one over", p(stepOptedOut, 0), byTurn, routed{move: moveHand}},
		{"wave hands a stalled one over", p(stepRebook, 0), byWave, routed{move: moveHand}},
		{"held task waits for a near slot", p(stepWait, time.Second), byHeld, routed{move: moveSend}},
		{"held task woken early hands over", p(stepDefer, far), byHeld, routed{move: moveHand, delay: deferDelay(far)}},
		{"held task hands a late one over", p(stepNext, 0), byHeld, routed{move: moveHand}},
		{"turn sends a near slot", p(stepWait, time.Second), byTurn, routed{move: moveSend}},
		{"turn moved far hands over, logged", p(stepDefer, far), byTurn, routed{move: moveHand, delay: deferDelay(far), deferred: true}},
		{"turn hands an expired one over", p(stepExpire, 0), byTurn, routed{move: moveHand}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := routePlan(tt.p, tt.by); got != tt.want {
				t.Errorf("routePlan(%s, %d) = %+v, want %+v", tt.p.step, tt.by, got, tt.want)
			}
		})
	}
}

// TestPlansItself: which bookings each holder plans, and which it hands to
// the delivery task unplanned.
func TestPlansItself(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	fresh := throttle.Reservation{At: now, Now: now}
	found := throttle.Reservation{At: now, Now: now, Existing: true}
	failed := throttle.Reservation{}
	full := throttle.Reservation{Now: now, Refused: throttle.RefusedFull}
	optedOut := throttle.Reservation{At: now, Now: now, Refused: throttle.RefusedOptedOut}
	tests := []struct {
		name string
		r    throttle.Reservation
		by   holder
		want bool
	}{
		{"delivery plans a fresh one", fresh, byDelivery, true},
		{"delivery plans a found one", found, byDelivery, true},
		{"delivery plans a refused one", full, byDelivery, true},
		{"wave plans a fresh one", fresh, byWave, true},
		{"wave hands a found one over", found, byWave, false},
		{"wave hands a failed one over", failed, byWave, false},
		{"wave plans a refused one", full, byWave, true},
		{"held task plans its chunk's booking", found, byHeld, true},
		{"held task hands a failed one over", failed, byHeld, false},
		{"turn plans a fresh one", fresh, byTurn, true},
		{"turn hands a found one over", found, byTurn, false},
		{"turn hands a refused one over", full, byTurn, false},
		{"wave plans an opted-out one", optedOut, byWave, true},
		{"held task plans an opted-out one", optedOut, byHeld, true},
		{"turn hands an opted-out one over", optedOut, byTurn, false},
		{"turn hands a failed one over", failed, byTurn, false},
	}
	for _, tt := range tests {
		if got := plansItself(tt.r, tt.by); got != tt.want {
			t.Errorf("%s: plansItself = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRouteTurn: a booking from a paced turn sends only a slot within
// paceLate of the turn.
func TestRouteTurn(t *testing.T) {
	turn := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	near := planned{step: stepWait, wait: time.Second}
	if got := routeTurn(near, turn.Add(paceLate), turn); got.move != moveSend {
		t.Errorf("slot paceLate after the turn: %+v, want send", got)
	}
	if got := routeTurn(near, turn.Add(paceLate+time.Millisecond), turn); got != (routed{move: moveHand}) {
		t.Errorf("slot past the turn: %+v, want hand over", got)
	}
	far := planned{step: stepDefer, wait: time.Minute}
	if got := routeTurn(far, turn, turn); got != routePlan(far, byTurn) {
		t.Errorf("far slot: %+v, want routePlan's %+v", got, routePlan(far, byTurn))
	}
}

func TestJudge(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ok := &providers.Result{Outcome: providers.Delivered, StatusCode: 200}
	dead := &providers.Result{Outcome: providers.TokenInvalid, StatusCode: 410, Reason: "Unregistered"}
	busy := &providers.Result{Outcome: providers.Throttled, StatusCode: 429, Reason: "TooManyRequests"}
	busyFor := func(d time.Duration) *providers.Result {
		return &providers.Result{Outcome: providers.Throttled, StatusCode: 429, RetryAfter: d, Reason: "QUOTA_EXCEEDED"}
	}
	down := &providers.Result{Outcome: providers.Transient, StatusCode: 503, Reason: "ServiceUnavailable"}
	gone := &providers.Result{Outcome: providers.Transient, Reason: "timeout", Err: errors.New("i/o timeout")}
	bad := &providers.Result{Outcome: providers.Permanent, StatusCode: 413, Reason: "PayloadTooLarge"}
	late := &notSent
	pol := retryPolicy{maxRetry: 2, maxThrottled: time.Hour}
	tests := []struct {
		name        string
		states      []string
		results     []*providers.Result
		a           attempts
		interrupted bool
		want        verdict // cause and delay compared separately
		delay       time.Duration
	}{
		{"delivered to both", []string{"", ""}, []*providers.Result{ok, ok}, attempts{}, false, verdict{act: actDone, state: task.Delivered}, 0},
		{"one dead token, one delivered", []string{"", ""}, []*providers.Result{dead, ok}, attempts{}, false, verdict{act: actDone, state: task.Delivered}, 0},
		{"every token dead: slot back", []string{"", ""}, []*providers.Result{dead, dead}, attempts{}, false, verdict{act: actDone, state: task.TokenInvalid, release: true}, 0},
		{"recorded earlier, nothing sent now", []string{task.Delivered, task.TokenInvalid}, []*providers.Result{nil, nil}, attempts{}, false, verdict{act: actDone, state: task.Delivered}, 0},
		{"throttled, nothing delivered: slot back, backoff of attempt 0", []string{""}, []*providers.Result{busy}, attempts{}, false, verdict{act: actRetry, throttled: true, release: true}, -1},
		{"throttled after attempts left late: the backoff of no refusal", []string{""}, []*providers.Result{busy}, attempts{n: 8}, false, verdict{act: actRetry, throttled: true, release: true}, -1},
		{"throttled after three refusals: their backoff", []string{""}, []*providers.Result{busy}, attempts{n: 8, refusals: 3}, false, verdict{act: actRetry, throttled: true, release: true}, -1},
		{"transient after attempts left late: the backoff of no refusal", []string{""}, []*providers.Result{down}, attempts{n: 8}, false, verdict{act: actRetry, transient: true, release: true}, -1},
		{"throttled with Retry-After", []string{""}, []*providers.Result{busyFor(7 * time.Second)}, attempts{n: 3}, false, verdict{act: actRetry, throttled: true, release: true}, 7 * time.Second},
		{"throttled beside a delivered device keeps the slot", []string{"", ""}, []*providers.Result{ok, busy}, attempts{}, false, verdict{act: actRetry, throttled: true}, -1},
		{"throttled past HUSH_MAX_THROTTLED fails", []string{""}, []*providers.Result{busy}, attempts{n: 9, throttledSince: now.Add(-time.Hour)}, false, verdict{act: actFail, state: task.Failed}, 0},
		{"transient with an answer: slot back", []string{""}, []*providers.Result{down}, attempts{}, false, verdict{act: actRetry, transient: true, release: true}, -1},
		{"transient without an answer keeps the slot (it may have arrived)", []string{""}, []*providers.Result{gone}, attempts{}, false, verdict{act: actRetry, transient: true}, -1},
		{"transient after the last retry fails", []string{""}, []*providers.Result{down}, attempts{n: 2, failures: 2}, false, verdict{act: actFail, state: task.Failed}, 0},
		{"transient after the last retry, a device has it", []string{task.Delivered, ""}, []*providers.Result{nil, down}, attempts{n: 2, failures: 2}, false, verdict{act: actFail, state: task.Delivered}, 0},
		{"permanent fails at once", []string{""}, []*providers.Result{bad}, attempts{}, false, verdict{act: actFail, state: task.Failed}, 0},
		{"late for the slot, nothing called: book again", []string{""}, []*providers.Result{late}, attempts{}, false, verdict{act: actRebook}, 0},
		{"late for the slot after a delivery under an unrecorded attempt: a new attempt at once", []string{task.Delivered, ""}, []*providers.Result{nil, late}, attempts{}, false, verdict{act: actRetry}, 0},
		{"late for the slot after a delivery under this attempt: a new attempt at once", []string{task.Delivered, ""}, []*providers.Result{nil, late}, attempts{n: 1, pushedUnder: []int{1, -1}}, false, verdict{act: actRetry}, 0},
		{"late for the slot after a delivery under an earlier attempt: book again", []string{task.Delivered, ""}, []*providers.Result{nil, late}, attempts{n: 1, pushedUnder: []int{0, -1}}, false, verdict{act: actRebook}, 0},
		{"throttled after a delivery under an earlier attempt: slot back", []string{task.Delivered, ""}, []*providers.Result{nil, busy}, attempts{n: 1, pushedUnder: []int{0, -1}}, false, verdict{act: actRetry, throttled: true, release: true}, -1},
		{"throttled after a delivery under this attempt keeps the slot", []string{task.Delivered, ""}, []*providers.Result{nil, busy}, attempts{n: 1, pushedUnder: []int{1, -1}}, false, verdict{act: actRetry, throttled: true}, -1},
		{"transient after a delivery under an earlier attempt: slot back", []string{task.Delivered, ""}, []*providers.Result{nil, down}, attempts{n: 1, pushedUnder: []int{0, -1}}, false, verdict{act: actRetry, transient: true, release: true}, -1},
		{"dead token after a delivery under an earlier attempt: done, slot back", []string{task.Delivered, ""}, []*providers.Result{nil, dead}, attempts{n: 1, pushedUnder: []int{0, -1}}, false, verdict{act: actDone, state: task.Delivered, release: true}, 0},
		{"dead token after a delivery under this attempt: done, slot kept", []string{task.Delivered, ""}, []*providers.Result{nil, dead}, attempts{n: 1, pushedUnder: []int{1, -1}}, false, verdict{act: actDone, state: task.Delivered}, 0},
		{"one dead now, one late, after a delivery under an earlier attempt: book again", []string{task.Delivered, "", ""}, []*providers.Result{nil, dead, late}, attempts{n: 1, pushedUnder: []int{0, -1, -1}}, false, verdict{act: actRebook}, 0},
		{"one delivered now, the other late: a new attempt at once", []string{"", ""}, []*providers.Result{ok, late}, attempts{}, false, verdict{act: actRetry}, 0},
		{"shutdown before the call", []string{""}, []*providers.Result{nil}, attempts{}, true, verdict{act: actStop}, 0},
		{"a 429 answered as shutdown stops the attempt: the retry keeps its Retry-After", []string{""}, []*providers.Result{busyFor(7 * time.Second)}, attempts{}, true, verdict{act: actRetry, throttled: true, release: true}, 7 * time.Second},
		{"a transient failure as shutdown stops the attempt: handed back", []string{""}, []*providers.Result{down}, attempts{}, true, verdict{act: actStop}, 0},
		{"shutdown cut a call short", []string{""}, []*providers.Result{gone}, attempts{}, true, verdict{act: actStop}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := judge(tt.states, tt.results, tt.a, pol, now, time.Time{}, tt.interrupted)
			if got.act != tt.want.act || got.state != tt.want.state || got.release != tt.want.release ||
				got.throttled != tt.want.throttled || got.transient != tt.want.transient {
				t.Errorf("judge = %+v, want %+v", got, tt.want)
			}
			switch {
			case tt.delay < 0: // backoff(a.refusals): full jitter on the upper half
				lim := min(time.Second<<tt.a.refusals, 5*time.Minute)
				if got.delay < lim/2 || got.delay > lim {
					t.Errorf("delay %s, want backoff(%d) in [%s, %s]", got.delay, tt.a.refusals, lim/2, lim)
				}
			case got.delay != tt.delay:
				t.Errorf("delay %s, want %s", got.delay, tt.delay)
			}
			if (got.act == actFail || got.act == actRetry) && got.cause == nil {
				t.Error("no cause")
			}
		})
	}
}

// TestCarries: the booking of the current attempt carries a push only
// when a device was recorded delivered under it, or delivered without a
// record of its attempt.
func TestCarries(t *testing.T) {
	d := task.Delivered
	tests := []struct {
		name   string
		states []string
		a      attempts
		want   bool
	}{
		{"nothing delivered", []string{"", task.TokenInvalid}, attempts{n: 2, pushedUnder: []int{-1, -1}}, false},
		{"delivered under this attempt", []string{d, ""}, attempts{n: 2, pushedUnder: []int{2, -1}}, true},
		{"delivered under an earlier attempt", []string{d, ""}, attempts{n: 2, pushedUnder: []int{1, -1}}, false},
		{"delivered under the first attempt, now the third", []string{d, d, ""}, attempts{n: 2, pushedUnder: []int{0, 1, -1}}, false},
		{"one of two under this attempt", []string{d, d, ""}, attempts{n: 2, pushedUnder: []int{0, 2, -1}}, true},
		{"delivered, attempt not recorded", []string{d, ""}, attempts{n: 2, pushedUnder: []int{-1, -1}}, true},
		{"delivered, nothing read", []string{d, ""}, attempts{n: 2}, true},
		{"a record of an attempt on a device not delivered is no push", []string{"", ""}, attempts{n: 2, pushedUnder: []int{2, -1}}, false},
		{"recorded under a later attempt than this one", []string{d, ""}, attempts{n: 1, pushedUnder: []int{3, -1}}, true},
		{"nothing recorded, the attempt unsettled", []string{"", ""}, attempts{n: 1, unsettled: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.carries(tt.states); got != tt.want {
				t.Errorf("carries = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAfterUnsettled: a run follows one that may have ended mid-call only
// when Asynq counts a failed run that is not one of hush's own retries
// (each records a transient failure).
func TestAfterUnsettled(t *testing.T) {
	tests := []struct {
		retried, failures int
		want              bool
	}{
		{0, 0, false},
		{1, 1, false}, // one retry hush decided
		{2, 2, false},
		{0, 3, false}, // failures recorded before this task (a chunk's)
		{1, 0, true},  // a lease expired, or a run failed on its records
		{3, 2, true},
	}
	for _, tt := range tests {
		if got := afterUnsettled(tt.retried, tt.failures); got != tt.want {
			t.Errorf("afterUnsettled(%d, %d) = %v, want %v", tt.retried, tt.failures, got, tt.want)
		}
	}
}

// TestBackoffGrowsWithTheRefusals: hush's own count of provider refusals
// drives the backoff (Asynq's count stays 0 for retries that are not
// failures, and attempts left late for their slot are no refusals).
func TestBackoffGrowsWithTheRefusals(t *testing.T) {
	busy := &providers.Result{Outcome: providers.Throttled, StatusCode: 429}
	now := time.Now()
	var prevMax time.Duration
	for n := range 10 {
		v := judge([]string{""}, []*providers.Result{busy}, attempts{n: 2 * n, refusals: n}, retryPolicy{maxThrottled: time.Hour}, now, time.Time{}, false)
		lim := min(time.Second<<n, 5*time.Minute)
		if v.delay < lim/2 || v.delay > lim {
			t.Errorf("%d refusals: delay %s, want in [%s, %s]", n, v.delay, lim/2, lim)
		}
		if lim < prevMax {
			t.Errorf("%d refusals: bound %s shrank from %s", n, lim, prevMax)
		}
		prevMax = lim
	}
}

// TestPlanNeverSendsBeforeTheSlot: the slot a push waits for counts the
// wait from when the booking's answer arrived (the limiter read its clock
// before), so it is never before the limiter's slot, however long the
// round trip; lateness counts from the round trip's middle, so a round
// trip that stalled is still found late.
func TestPlanNeverSendsBeforeTheSlot(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := throttle.Reservation{Wait: time.Millisecond, Now: t0, At: t0.Add(time.Millisecond)}
	// A 4 ms round trip: the limiter's slot is at most 1 ms after t0+4ms.
	got := plan(r, t0.Add(2*time.Millisecond), t0.Add(4*time.Millisecond), t0.Add(4*time.Millisecond), time.Time{}, false)
	if got.step != stepWait || !got.slot.Equal(t0.Add(5*time.Millisecond)) {
		t.Errorf("plan = %v at %s, want wait until answered + Wait (%s)", got.step, got.slot, t0.Add(5*time.Millisecond))
	}
	// A round trip that took 300 ms: the slot may be 150 ms past.
	r.Wait = 0
	got = plan(r, t0.Add(150*time.Millisecond), t0.Add(300*time.Millisecond), t0.Add(300*time.Millisecond), time.Time{}, false)
	if got.step != stepRebook {
		t.Errorf("plan after a 300 ms round trip = %v, want rebook", got.step)
	}
}

// TestRetryAfterClamped: a provider's Retry-After (or the backoff) never
// schedules a retry past the delivery's deadline or its records' end
// (until), and a throttled retry past HUSH_MAX_THROTTLED fails now.
func TestRetryAfterClamped(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const tenYears = 315360000 * time.Second
	for _, tc := range []struct {
		name           string
		retryAfter     time.Duration
		until          time.Time
		throttledSince time.Time
		maxThrottled   time.Duration
		delay          time.Duration
		past           bool
	}{
		{"as given", 30 * time.Second, now.Add(time.Hour), time.Time{}, 0, 30 * time.Second, false},
		{"no bound", 30 * time.Second, time.Time{}, time.Time{}, 0, 30 * time.Second, false},
		{"absurd, to the deadline", tenYears, now.Add(3 * time.Second), now, time.Hour, 3 * time.Second, false},
		{"absurd, no deadline: to the records' end", tenYears, task.RetryUntil(now, time.Time{}), time.Time{}, 0, task.RecordTTL - task.RetryMargin, false},
		{"absurd, HUSH_MAX_THROTTLED first: fails", tenYears, now.Add(24 * time.Hour), now, time.Hour, 0, true},
		{"within HUSH_MAX_THROTTLED", time.Minute, now.Add(24 * time.Hour), now.Add(-30 * time.Minute), time.Hour, time.Minute, false},
		{"past HUSH_MAX_THROTTLED by a second", 31 * time.Minute, now.Add(24 * time.Hour), now.Add(-30 * time.Minute), time.Hour, 0, true},
		{"deadline before HUSH_MAX_THROTTLED: expires", 2 * time.Hour, now.Add(10 * time.Minute), now, time.Hour, 10 * time.Minute, false},
		{"deadline passed: at once", time.Minute, now.Add(-time.Second), time.Time{}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			delay, past := retryAfterOr(&providers.Result{RetryAfter: tc.retryAfter}, 0, now, tc.until, tc.throttledSince, tc.maxThrottled)
			if delay != tc.delay || past != tc.past {
				t.Errorf("retryAfterOr = %s, %t; want %s, %t", delay, past, tc.delay, tc.past)
			}
		})
	}
}

// TestRetryUntil: a retry runs by the delivery's deadline, and without one
// while its records live.
func TestRetryUntil(t *testing.T) {
	acc := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		deadline time.Time
		want     time.Time
	}{
		{"deadline", acc.Add(time.Hour), acc.Add(time.Hour)},
		{"no deadline", time.Time{}, acc.Add(task.RecordTTL - task.RetryMargin)},
		{"deadline after a week: the records outlive it", acc.Add(30 * 24 * time.Hour), acc.Add(30 * 24 * time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := task.RetryUntil(acc, tc.deadline); !got.Equal(tc.want) {
				t.Errorf("retryUntil = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestHandoffDest: where a chunk's run puts each recipient it hands off.
func TestHandoffDest(t *testing.T) {
	for _, tc := range []struct {
		name                                          string
		deferred, near, foreign, jobs, held, grouping bool
		want                                          dest
	}{
		{name: "a deferred single-recipient job joins its second's group", deferred: true, jobs: true, want: toWaitingJobs},
		{name: "even where the run could group", deferred: true, jobs: true, grouping: true, want: toWaitingJobs},
		{name: "a held task's deferred recipient does not join a group", deferred: true, jobs: true, held: true, want: toDelivery},
		{name: "a deferred recipient of a grouping chunk waits in a held task", deferred: true, grouping: true, want: toHeld},
		{name: "a near recipient of a grouping chunk waits in a held task", near: true, grouping: true, want: toHeld},
		{name: "a near single-recipient job waits in its delivery task", near: true, jobs: true, grouping: true, want: toDelivery},
		{name: "a deferred recipient of a run that does not group", deferred: true, want: toDelivery},
		{name: "a near recipient of a run that does not group", near: true, want: toDelivery},
		{name: "a foreign recipient goes back to its owner", foreign: true, grouping: true, want: toOwner},
		{name: "late, collapsed or failed: its delivery task", grouping: true, want: toDelivery},
		{name: "nothing set", want: toDelivery},
	} {
		if got := handoffDest(tc.deferred, tc.near, tc.foreign, tc.jobs, tc.held, tc.grouping); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPacedNear: a recipient the send rate held is booked again by its
// wave only when its turn is within a wait in place and before its
// deadline.
func TestPacedNear(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name     string
		turn     time.Time
		deadline time.Time
		want     bool
	}{
		{"now", now, time.Time{}, true},
		{"at the longest wait in place", now.Add(maxInlineWait), time.Time{}, true},
		{"just beyond it", now.Add(maxInlineWait + time.Millisecond), time.Time{}, false},
		{"near, before its deadline", now.Add(time.Second), now.Add(2 * time.Second), true},
		{"near, at its deadline", now.Add(time.Second), now.Add(time.Second), false},
		{"near, after its deadline", now.Add(time.Second), now.Add(500 * time.Millisecond), false},
	} {
		if got := pacedNear(tc.turn, now, tc.deadline); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
