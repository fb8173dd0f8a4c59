package decide

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
		want     Step
		wantWait time.Duration
	}{
		{"allowed now", booked(0), t0, time.Time{}, false, StepSend, 0},
		{"allowed, a little time gone since", booked(0), t0.Add(80 * ms), time.Time{}, false, StepSend, 0},
		{"near: wait in place", booked(2 * time.Second), t0, time.Time{}, false, StepWait, 2 * time.Second},
		{"exactly the inline limit waits", booked(MaxInlineWait), t0, time.Time{}, false, StepWait, MaxInlineWait},
		{"far: defer", booked(time.Minute), t0, time.Time{}, false, StepDefer, time.Minute},
		{"a new booking gone stale while this process stalled", booked(0), t0.Add(300 * ms), time.Time{}, false, StepRebook, 0},
		{"slot at the deadline expires", booked(time.Minute), t0, t0.Add(time.Minute), false, StepExpire, 0},
		{"slot just before the deadline is sent", booked(time.Minute), t0, t0.Add(time.Minute + ms), false, StepDefer, time.Minute},
		{"refused: after NotAfter", throttle.Reservation{Refused: throttle.RefusedLate, Now: t0}, t0, t0.Add(time.Hour), false, StepExpire, 0},
		{"refused: too many held", throttle.Reservation{Refused: throttle.RefusedFull, Now: t0}, t0, time.Time{}, false, StepFull, 0},
		{"refused: opted out", throttle.Reservation{At: t0, Refused: throttle.RefusedOptedOut, Now: t0}, t0, time.Time{}, false, StepOptedOut, 0},
		{"refused: opted out, even late and carried", throttle.Reservation{At: t0, Refused: throttle.RefusedOptedOut, Now: t0}, t0.Add(time.Second), time.Time{}, true, StepOptedOut, 0},
		{"refused: opted out, even past the deadline", throttle.Reservation{At: t0, Refused: throttle.RefusedOptedOut, Now: t0}, t0, t0, false, StepOptedOut, 0},
		{"existing, on time", existing(50 * ms), t0, time.Time{}, false, StepSend, 0},
		{"existing, late, nothing delivered: rebook", existing(time.Second), t0, time.Time{}, false, StepRebook, 0},
		{"existing, late, a device has it under this booking: next attempt", existing(time.Second), t0, time.Time{}, true, StepNext, 0},
		{"existing in the future: wait", throttle.Reservation{At: t0.Add(time.Second), Wait: time.Second, Existing: true, Now: t0}, t0, time.Time{}, false, StepWait, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.r, t0, t0, tt.now, tt.deadline, tt.carried)
			if got.Step != tt.want || got.Wait != tt.wantWait {
				t.Errorf("plan = %s wait %s, want %s wait %s", got.Step, got.Wait, tt.want, tt.wantWait)
			}
			if (got.Step == StepSend || got.Step == StepWait || got.Step == StepDefer) && !got.Slot.Equal(t0.Add(tt.r.Wait)) {
				t.Errorf("slot %s, want mid + Wait = %s", got.Slot, t0.Add(tt.r.Wait))
			}
		})
	}
}

func TestRoute(t *testing.T) {
	far := time.Minute
	p := func(s Step, wait time.Duration) Planned { return Planned{Step: s, Wait: wait} }
	tests := []struct {
		name string
		p    Planned
		by   Holder
		want Routed
	}{
		{"delivery sends now", p(StepSend, 0), ByDelivery, Routed{Move: MoveSend}},
		{"delivery waits in place", p(StepWait, time.Second), ByDelivery, Routed{Move: MoveSend}},
		{"delivery defers by the wait", p(StepDefer, far), ByDelivery, Routed{Move: MoveDefer, Delay: far, Deferred: true}},
		{"delivery drops when full", p(StepFull, 0), ByDelivery, Routed{Move: MoveDrop, Reason: task.ThrottleFull}},
		{"delivery drops when expired", p(StepExpire, 0), ByDelivery, Routed{Move: MoveDrop, Reason: task.Expired}},
		{"delivery drops when collapsed", p(StepCollapsed, 0), ByDelivery, Routed{Move: MoveDrop, Reason: task.Collapsed}},
		{"delivery drops when opted out", p(StepOptedOut, 0), ByDelivery, Routed{Move: MoveDrop, Reason: task.OptedOut}},
		{"delivery books again", p(StepRebook, 0), ByDelivery, Routed{Move: MoveRebook}},
		{"delivery books the next attempt", p(StepNext, 0), ByDelivery, Routed{Move: MoveNext}},
		{"wave sends now", p(StepSend, 0), ByWave, Routed{Move: MoveSend}},
		{"wave holds a near slot back", p(StepWait, time.Second), ByWave, Routed{Move: MoveNear}},
		{"wave holds a far slot back", p(StepDefer, far), ByWave, Routed{Move: MoveDefer, Delay: DeferDelay(far), Deferred: true}},
		{"wave hands an expired one over", p(StepExpire, 0), ByWave, Routed{Move: MoveHand}},
		{"wave hands a full one over", p(StepFull, 0), ByWave, Routed{Move: MoveHand}},
		{"wave hands a collapsed one over", p(StepCollapsed, 0), ByWave, Routed{Move: MoveHand}},
		{"wave hands an opted-out one over", p(StepOptedOut, 0), ByWave, Routed{Move: MoveHand}},
		{"held task hands an opted-out one over", p(StepOptedOut, 0), ByHeld, Routed{Move: MoveHand}},
		{"turn hands an opted-out one over", p(StepOptedOut, 0), ByTurn, Routed{Move: MoveHand}},
		{"wave hands a stalled one over", p(StepRebook, 0), ByWave, Routed{Move: MoveHand}},
		{"held task waits for a near slot", p(StepWait, time.Second), ByHeld, Routed{Move: MoveSend}},
		{"held task woken early hands over", p(StepDefer, far), ByHeld, Routed{Move: MoveHand, Delay: DeferDelay(far)}},
		{"held task hands a late one over", p(StepNext, 0), ByHeld, Routed{Move: MoveHand}},
		{"turn sends a near slot", p(StepWait, time.Second), ByTurn, Routed{Move: MoveSend}},
		{"turn moved far hands over, logged", p(StepDefer, far), ByTurn, Routed{Move: MoveHand, Delay: DeferDelay(far), Deferred: true}},
		{"turn hands an expired one over", p(StepExpire, 0), ByTurn, Routed{Move: MoveHand}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RoutePlan(tt.p, tt.by); got != tt.want {
				t.Errorf("RoutePlan(%s, %d) = %+v, want %+v", tt.p.Step, tt.by, got, tt.want)
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
		by   Holder
		want bool
	}{
		{"delivery plans a fresh one", fresh, ByDelivery, true},
		{"delivery plans a found one", found, ByDelivery, true},
		{"delivery plans a refused one", full, ByDelivery, true},
		{"wave plans a fresh one", fresh, ByWave, true},
		{"wave hands a found one over", found, ByWave, false},
		{"wave hands a failed one over", failed, ByWave, false},
		{"wave plans a refused one", full, ByWave, true},
		{"held task plans its chunk's booking", found, ByHeld, true},
		{"held task hands a failed one over", failed, ByHeld, false},
		{"turn plans a fresh one", fresh, ByTurn, true},
		{"turn hands a found one over", found, ByTurn, false},
		{"turn hands a refused one over", full, ByTurn, false},
		{"wave plans an opted-out one", optedOut, ByWave, true},
		{"held task plans an opted-out one", optedOut, ByHeld, true},
		{"turn hands an opted-out one over", optedOut, ByTurn, false},
		{"turn hands a failed one over", failed, ByTurn, false},
	}
	for _, tt := range tests {
		if got := PlansItself(tt.r, tt.by); got != tt.want {
			t.Errorf("%s: PlansItself = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRouteTurn: a booking from a paced turn sends only a slot within
// PaceLate of the turn.
func TestRouteTurn(t *testing.T) {
	turn := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	near := Planned{Step: StepWait, Wait: time.Second}
	if got := RouteTurn(near, turn.Add(PaceLate), turn); got.Move != MoveSend {
		t.Errorf("slot PaceLate after the turn: %+v, want send", got)
	}
	if got := RouteTurn(near, turn.Add(PaceLate+time.Millisecond), turn); got != (Routed{Move: MoveHand}) {
		t.Errorf("slot past the turn: %+v, want hand over", got)
	}
	far := Planned{Step: StepDefer, Wait: time.Minute}
	if got := RouteTurn(far, turn, turn); got != RoutePlan(far, ByTurn) {
		t.Errorf("far slot: %+v, want RoutePlan's %+v", got, RoutePlan(far, ByTurn))
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
	late := &providers.Result{Outcome: providers.Transient, Reason: "late for its slot", Err: providers.ErrNotSent}
	pol := RetryPolicy{MaxRetry: 2, MaxThrottled: time.Hour}
	tests := []struct {
		name        string
		states      []string
		results     []*providers.Result
		a           Attempts
		interrupted bool
		want        Verdict // cause and delay compared separately
		delay       time.Duration
	}{
		{"delivered to both", []string{"", ""}, []*providers.Result{ok, ok}, Attempts{}, false, Verdict{Act: ActDone, State: task.Delivered}, 0},
		{"one dead token, one delivered", []string{"", ""}, []*providers.Result{dead, ok}, Attempts{}, false, Verdict{Act: ActDone, State: task.Delivered}, 0},
		{"every token dead: slot back", []string{"", ""}, []*providers.Result{dead, dead}, Attempts{}, false, Verdict{Act: ActDone, State: task.TokenInvalid, Release: true}, 0},
		{"recorded earlier, nothing sent now", []string{task.Delivered, task.TokenInvalid}, []*providers.Result{nil, nil}, Attempts{}, false, Verdict{Act: ActDone, State: task.Delivered}, 0},
		{"throttled, nothing delivered: slot back, backoff of attempt 0", []string{""}, []*providers.Result{busy}, Attempts{}, false, Verdict{Act: ActRetry, Throttled: true, Release: true}, -1},
		{"throttled after attempts left late: the backoff of no refusal", []string{""}, []*providers.Result{busy}, Attempts{N: 8}, false, Verdict{Act: ActRetry, Throttled: true, Release: true}, -1},
		{"throttled after three refusals: their backoff", []string{""}, []*providers.Result{busy}, Attempts{N: 8, Refusals: 3}, false, Verdict{Act: ActRetry, Throttled: true, Release: true}, -1},
		{"transient after attempts left late: the backoff of no refusal", []string{""}, []*providers.Result{down}, Attempts{N: 8}, false, Verdict{Act: ActRetry, Transient: true, Release: true}, -1},
		{"throttled with Retry-After", []string{""}, []*providers.Result{busyFor(7 * time.Second)}, Attempts{N: 3}, false, Verdict{Act: ActRetry, Throttled: true, Release: true}, 7 * time.Second},
		{"throttled beside a delivered device keeps the slot", []string{"", ""}, []*providers.Result{ok, busy}, Attempts{}, false, Verdict{Act: ActRetry, Throttled: true}, -1},
		{"throttled past HUSH_MAX_THROTTLED fails", []string{""}, []*providers.Result{busy}, Attempts{N: 9, ThrottledSince: now.Add(-time.Hour)}, false, Verdict{Act: ActFail, State: task.Failed}, 0},
		{"transient with an answer: slot back", []string{""}, []*providers.Result{down}, Attempts{}, false, Verdict{Act: ActRetry, Transient: true, Release: true}, -1},
		{"transient without an answer keeps the slot (it may have arrived)", []string{""}, []*providers.Result{gone}, Attempts{}, false, Verdict{Act: ActRetry, Transient: true}, -1},
		{"transient after the last retry fails", []string{""}, []*providers.Result{down}, Attempts{N: 2, Failures: 2}, false, Verdict{Act: ActFail, State: task.Failed}, 0},
		{"transient after the last retry, a device has it", []string{task.Delivered, ""}, []*providers.Result{nil, down}, Attempts{N: 2, Failures: 2}, false, Verdict{Act: ActFail, State: task.Delivered}, 0},
		{"permanent fails at once", []string{""}, []*providers.Result{bad}, Attempts{}, false, Verdict{Act: ActFail, State: task.Failed}, 0},
		{"late for the slot, nothing called: book again", []string{""}, []*providers.Result{late}, Attempts{}, false, Verdict{Act: ActRebook}, 0},
		{"late for the slot after a delivery under an unrecorded attempt: a new attempt at once", []string{task.Delivered, ""}, []*providers.Result{nil, late}, Attempts{}, false, Verdict{Act: ActRetry}, 0},
		{"late for the slot after a delivery under this attempt: a new attempt at once", []string{task.Delivered, ""}, []*providers.Result{nil, late}, Attempts{N: 1, PushedUnder: []int{1, -1}}, false, Verdict{Act: ActRetry}, 0},
		{"late for the slot after a delivery under an earlier attempt: book again", []string{task.Delivered, ""}, []*providers.Result{nil, late}, Attempts{N: 1, PushedUnder: []int{0, -1}}, false, Verdict{Act: ActRebook}, 0},
		{"throttled after a delivery under an earlier attempt: slot back", []string{task.Delivered, ""}, []*providers.Result{nil, busy}, Attempts{N: 1, PushedUnder: []int{0, -1}}, false, Verdict{Act: ActRetry, Throttled: true, Release: true}, -1},
		{"throttled after a delivery under this attempt keeps the slot", []string{task.Delivered, ""}, []*providers.Result{nil, busy}, Attempts{N: 1, PushedUnder: []int{1, -1}}, false, Verdict{Act: ActRetry, Throttled: true}, -1},
		{"transient after a delivery under an earlier attempt: slot back", []string{task.Delivered, ""}, []*providers.Result{nil, down}, Attempts{N: 1, PushedUnder: []int{0, -1}}, false, Verdict{Act: ActRetry, Transient: true, Release: true}, -1},
		{"dead token after a delivery under an earlier attempt: done, slot back", []string{task.Delivered, ""}, []*providers.Result{nil, dead}, Attempts{N: 1, PushedUnder: []int{0, -1}}, false, Verdict{Act: ActDone, State: task.Delivered, Release: true}, 0},
		{"dead token after a delivery under this attempt: done, slot kept", []string{task.Delivered, ""}, []*providers.Result{nil, dead}, Attempts{N: 1, PushedUnder: []int{1, -1}}, false, Verdict{Act: ActDone, State: task.Delivered}, 0},
		{"one dead now, one late, after a delivery under an earlier attempt: book again", []string{task.Delivered, "", ""}, []*providers.Result{nil, dead, late}, Attempts{N: 1, PushedUnder: []int{0, -1, -1}}, false, Verdict{Act: ActRebook}, 0},
		{"one delivered now, the other late: a new attempt at once", []string{"", ""}, []*providers.Result{ok, late}, Attempts{}, false, Verdict{Act: ActRetry}, 0},
		{"shutdown before the call", []string{""}, []*providers.Result{nil}, Attempts{}, true, Verdict{Act: ActStop}, 0},
		{"a 429 answered as shutdown stops the attempt: the retry keeps its Retry-After", []string{""}, []*providers.Result{busyFor(7 * time.Second)}, Attempts{}, true, Verdict{Act: ActRetry, Throttled: true, Release: true}, 7 * time.Second},
		{"a transient failure as shutdown stops the attempt: handed back", []string{""}, []*providers.Result{down}, Attempts{}, true, Verdict{Act: ActStop}, 0},
		{"shutdown cut a call short", []string{""}, []*providers.Result{gone}, Attempts{}, true, Verdict{Act: ActStop}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Judge(tt.states, tt.results, tt.a, pol, now, time.Time{}, tt.interrupted)
			if got.Act != tt.want.Act || got.State != tt.want.State || got.Release != tt.want.Release ||
				got.Throttled != tt.want.Throttled || got.Transient != tt.want.Transient {
				t.Errorf("judge = %+v, want %+v", got, tt.want)
			}
			switch {
			case tt.delay < 0: // backoff(a.Refusals): full jitter on the upper half
				lim := min(time.Second<<tt.a.Refusals, 5*time.Minute)
				if got.Delay < lim/2 || got.Delay > lim {
					t.Errorf("delay %s, want backoff(%d) in [%s, %s]", got.Delay, tt.a.Refusals, lim/2, lim)
				}
			case got.Delay != tt.delay:
				t.Errorf("delay %s, want %s", got.Delay, tt.delay)
			}
			if (got.Act == ActFail || got.Act == ActRetry) && got.Cause == nil {
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
		a      Attempts
		want   bool
	}{
		{"nothing delivered", []string{"", task.TokenInvalid}, Attempts{N: 2, PushedUnder: []int{-1, -1}}, false},
		{"delivered under this attempt", []string{d, ""}, Attempts{N: 2, PushedUnder: []int{2, -1}}, true},
		{"delivered under an earlier attempt", []string{d, ""}, Attempts{N: 2, PushedUnder: []int{1, -1}}, false},
		{"delivered under the first attempt, now the third", []string{d, d, ""}, Attempts{N: 2, PushedUnder: []int{0, 1, -1}}, false},
		{"one of two under this attempt", []string{d, d, ""}, Attempts{N: 2, PushedUnder: []int{0, 2, -1}}, true},
		{"delivered, attempt not recorded", []string{d, ""}, Attempts{N: 2, PushedUnder: []int{-1, -1}}, true},
		{"delivered, nothing read", []string{d, ""}, Attempts{N: 2}, true},
		{"a record of an attempt on a device not delivered is no push", []string{"", ""}, Attempts{N: 2, PushedUnder: []int{2, -1}}, false},
		{"recorded under a later attempt than this one", []string{d, ""}, Attempts{N: 1, PushedUnder: []int{3, -1}}, true},
		{"nothing recorded, the attempt unsettled", []string{"", ""}, Attempts{N: 1, Unsettled: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Carries(tt.states); got != tt.want {
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
		if got := AfterUnsettled(tt.retried, tt.failures); got != tt.want {
			t.Errorf("AfterUnsettled(%d, %d) = %v, want %v", tt.retried, tt.failures, got, tt.want)
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
		v := Judge([]string{""}, []*providers.Result{busy}, Attempts{N: 2 * n, Refusals: n}, RetryPolicy{MaxThrottled: time.Hour}, now, time.Time{}, false)
		lim := min(time.Second<<n, 5*time.Minute)
		if v.Delay < lim/2 || v.Delay > lim {
			t.Errorf("%d refusals: delay %s, want in [%s, %s]", n, v.Delay, lim/2, lim)
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
	got := Plan(r, t0.Add(2*time.Millisecond), t0.Add(4*time.Millisecond), t0.Add(4*time.Millisecond), time.Time{}, false)
	if got.Step != StepWait || !got.Slot.Equal(t0.Add(5*time.Millisecond)) {
		t.Errorf("plan = %v at %s, want wait until answered + Wait (%s)", got.Step, got.Slot, t0.Add(5*time.Millisecond))
	}
	// A round trip that took 300 ms: the slot may be 150 ms past.
	r.Wait = 0
	got = Plan(r, t0.Add(150*time.Millisecond), t0.Add(300*time.Millisecond), t0.Add(300*time.Millisecond), time.Time{}, false)
	if got.Step != StepRebook {
		t.Errorf("plan after a 300 ms round trip = %v, want rebook", got.Step)
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
			delay, past := RetryAfterOr(&providers.Result{RetryAfter: tc.retryAfter}, 0, now, tc.until, tc.throttledSince, tc.maxThrottled)
			if delay != tc.delay || past != tc.past {
				t.Errorf("RetryAfterOr = %s, %t; want %s, %t", delay, past, tc.delay, tc.past)
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
		want                                          Dest
	}{
		{name: "a deferred single-recipient job joins its second's group", deferred: true, jobs: true, want: ToWaitingJobs},
		{name: "even where the run could group", deferred: true, jobs: true, grouping: true, want: ToWaitingJobs},
		{name: "a held task's deferred recipient does not join a group", deferred: true, jobs: true, held: true, want: ToDelivery},
		{name: "a deferred recipient of a grouping chunk waits in a held task", deferred: true, grouping: true, want: ToHeld},
		{name: "a near recipient of a grouping chunk waits in a held task", near: true, grouping: true, want: ToHeld},
		{name: "a near single-recipient job waits in its delivery task", near: true, jobs: true, grouping: true, want: ToDelivery},
		{name: "a deferred recipient of a run that does not group", deferred: true, want: ToDelivery},
		{name: "a near recipient of a run that does not group", near: true, want: ToDelivery},
		{name: "a foreign recipient goes back to its owner", foreign: true, grouping: true, want: ToOwner},
		{name: "late, collapsed or failed: its delivery task", grouping: true, want: ToDelivery},
		{name: "nothing set", want: ToDelivery},
	} {
		if got := HandoffDest(tc.deferred, tc.near, tc.foreign, tc.jobs, tc.held, tc.grouping); got != tc.want {
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
		{"at the longest wait in place", now.Add(MaxInlineWait), time.Time{}, true},
		{"just beyond it", now.Add(MaxInlineWait + time.Millisecond), time.Time{}, false},
		{"near, before its deadline", now.Add(time.Second), now.Add(2 * time.Second), true},
		{"near, at its deadline", now.Add(time.Second), now.Add(time.Second), false},
		{"near, after its deadline", now.Add(time.Second), now.Add(500 * time.Millisecond), false},
	} {
		if got := PacedNear(tc.turn, now, tc.deadline); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
