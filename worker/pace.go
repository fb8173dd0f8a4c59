package worker

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/task"
)

// An app's MaxRate caps the sends per second to one provider across every
// process. Sends are paced right before they leave: the recipients about
// to be sent (a chunk's wave, a held task's, or one delivery) ask the
// Pacer, in one round trip, for a turn per device, each no earlier than
// its recipient's own slot, so turns are 1/rate apart and never before the
// slot the user's rules gave. What a turn means for its recipient is
// decided in one place (decide.PaceVerdict):
//
//   - A recipient whose earliest turn falls within decide.PaceSlack of its
//     slot, and before its deadline, is sent: each device at its own turn, no
//     more than decide.PaceLate after it (sendTimes). So it keeps the user's
//     rules (at most decide.LateRebook after the slot) and the provider's
//     rate at once.
//   - Any other is not sent: the latest turn granted is recorded as its
//     paced time ("<i>/p"), its booking is given back, and its delivery
//     books again no earlier than that time (the limiter's NotBefore), so
//     it is deferred, not dropped, and its slot moves only because the
//     rate would break it. A turn at or after the deadline makes that
//     booking refused as late: the delivery ends expired. When the new
//     slot lands within decide.PaceLate of the paced time, the delivery sends
//     at its slot without asking the Pacer again: the turn is its. A chunk's
//     wave makes that booking itself for the recipients whose turn is
//     within decide.MaxInlineWait and sends them (rebookNear): one round trip
//     for the wave instead of a task and a worker slot per recipient.
//
//   - A recipient that asks again because it lost the turns it was granted
//     (its new slot came more than decide.PaceLate after them: it woke
//     late, or its user's rules moved it) takes only turns it can use: its
//     requests name the latest start within decide.PaceSlack of its slot,
//     and the Pacer holds back any later one without moving
//     (throttle.PaceRequest's Latest). A recipient held so records the turn
//     it was told, marked as told (pacedTurn): its next booking comes no
//     earlier, and it asks again there, as it never had the turn. So a
//     backlog whose runs keep waking late does not take turn after turn it
//     never uses, each pushing every other recipient's turn further out:
//     its turns are taken only as they are sent, and it drains at the rate.
//     A first ask takes its turn however far it is, so a fan-out's
//     recipients each get one of their own, spread at the rate, instead of
//     all being told the same.
//
// Waiting for a turn holds no send permit (callAtTurn): one app's paced
// backlog would otherwise keep the permits another app's sends need.

// MaxRateBound is the most sends a provider sees in any one second from an
// app whose max_rate on that platform is rate per second (docs/delivery.md,
// "Apps and their send rates"): turns are 1/rate apart, so a second holds
// rate of them and one more at its two edges; each send leaves at or after
// its turn and at most decide.PaceLate after it, and the network and timers
// may move its arrival as much again, so those of 2 x decide.PaceLate more
// may land in it.
func MaxRateBound(rate float64) int {
	return int(math.Ceil(rate)) + 1 + int(math.Ceil(2*rate*decide.PaceLate.Seconds()))
}

// paceKey is the Pacer key of app's sends to platform.
func paceKey(app string, p payload.Platform) string { return app + ":" + string(p) }

// paceItem is one recipient about to be sent: its slot and the platforms
// of its devices not yet settled.
type paceItem struct {
	d      *task.Delivery
	states []string
	slot   time.Time // on the local clock
	// at is the slot on the limiter's clock (the reservation's At; zero:
	// none, as for a bypass priority: its turns start at the Pacer's now).
	// The Pacer's clock is the limiter's: both are the Redis server's.
	at time.Time
	// paced is the turn an earlier pacing granted it (zero: none), on the
	// limiter's clock; told: the turn the Pacer held back, never its to
	// send at.
	paced time.Time
	told  bool
}

// pacedTurn is a held recipient's paced time on the limiter's clock, as
// its job records it ("<i>/p"): a turn the Pacer granted it, which it
// sends at without asking again when its new slot lands on it, or, told,
// a turn the Pacer held back, which only bounds its next booking.
type pacedTurn struct {
	at   time.Time
	told bool
}

// paceResult is what pacing says of one item: send it, each paced device
// at its own turn (turns, on the local clock, zero for an unpaced device;
// nil: no pacing, as booked), or hold it until paced. turn is its earliest
// turn on the local clock, paced the same on the limiter's; last is its
// latest turn on the limiter's clock, what a held item records, so that
// its next booking comes no earlier than any turn it was granted or told
// (last.told: some turn was held back, so the item has not every turn).
type paceResult struct {
	turns []time.Time
	turn  time.Time
	hold  bool
	paced time.Time
	last  pacedTurn
}

// pace paces items of app: one Pacer round trip for all of them. Each
// device asks for its own turn, no earlier than its recipient's slot, the
// recipients in the order of their slots, so a turn never goes to a
// recipient before its slot while a later one takes it. Items of an app
// without a MaxRate for their platforms pass unpaced.
func (w *Worker) pace(ctx context.Context, app *App, items []paceItem) ([]paceResult, error) {
	out := make([]paceResult, len(items))
	if len(app.MaxRate) == 0 || w.pacer == nil {
		return out, nil
	}
	type ask struct{ k, j int } // item and device of a request
	var reqs []throttle.PaceRequest
	var asks []ask
	order := make([]int, len(items))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return items[a].at.Compare(items[b].at) })
	for _, k := range order {
		it := items[k]
		var devs []int
		for j, dev := range it.d.Devices {
			if it.states[j] == "" && app.MaxRate[dev.Platform] > 0 {
				devs = append(devs, j)
			}
		}
		if len(devs) > 0 && !it.told && !it.paced.IsZero() && !it.at.IsZero() && !it.at.Before(it.paced) && it.at.Sub(it.paced) <= decide.PaceLate {
			// The turns granted earlier are the item's: its slot kept the
			// latest of them, so every device leaves then, at or after its
			// own turn. Asking again would take turns it never uses and
			// push every held item's turns further out.
			r := &out[k]
			r.turns = make([]time.Time, len(it.d.Devices))
			r.turn, r.paced, r.last = it.slot.Add(it.paced.Sub(it.at)), it.paced, pacedTurn{at: it.paced}
			for _, j := range devs {
				r.turns[j] = r.turn
			}
			continue
		}
		// A second ask (its turns lost, or only told) takes no turn later
		// than it can send at. A bypass priority books no slot to keep.
		var latest time.Time
		if !it.paced.IsZero() && !it.at.IsZero() && !w.bypass[it.d.Priority] {
			latest = it.at.Add(decide.PaceSlack)
		}
		for _, j := range devs {
			p := it.d.Devices[j].Platform
			reqs = append(reqs, throttle.PaceRequest{Key: paceKey(app.Name, p), N: 1, Rate: app.MaxRate[p], NotBefore: it.at, Latest: latest})
			asks = append(asks, ask{k, j})
		}
	}
	if len(reqs) > 0 {
		if err := w.paceAll(ctx, app, reqs, func(n int, local, limiter time.Time, held bool) {
			a, r := asks[n], &out[asks[n].k]
			if r.turns == nil {
				r.turns = make([]time.Time, len(items[a.k].d.Devices))
			}
			r.turns[a.j] = local
			if held {
				// Not its turn: the device is not sent under this attempt
				// (its call would leave after the booking's bound, slot +
				// decide.LateRebook) and goes under the next.
				r.turns[a.j] = items[a.k].slot.Add(decide.LateRebook + time.Nanosecond)
				r.last.told = true
			}
			if r.turn.IsZero() || local.Before(r.turn) {
				r.turn, r.paced = local, limiter
			}
			if limiter.After(r.last.at) {
				r.last.at = limiter
			}
		}); err != nil {
			return nil, err
		}
	}
	for k, it := range items {
		if r := &out[k]; r.turns != nil {
			r.hold = decide.PaceVerdict(it.at, r.paced, r.turn, it.d.Deadline)
		}
	}
	return out, nil
}

// paceAll asks the Pacer for reqs of app in one round trip and hands each
// request's turn to got, on the local clock and on the limiter's, and
// whether the Pacer held it back (the request's Latest). A turn
// maps to the local clock through the app's limiter clock reading (the
// Pacer's clock is the limiter's), so turns granted by different round
// trips keep their spacing; without a recent reading, through the middle
// of this round trip.
func (w *Worker) paceAll(ctx context.Context, app *App, reqs []throttle.PaceRequest, got func(n int, local, limiter time.Time, held bool)) error {
	asked := w.now()
	paces, err := w.pacer.Pace(ctx, reqs)
	mid := asked.Add(w.now().Sub(asked) / 2)
	if err == nil && len(paces) != len(reqs) {
		err = fmt.Errorf("%d paces for %d requests", len(paces), len(reqs))
	}
	if err != nil {
		return fmt.Errorf("pace the sends of app %s: %w", app.Name, err)
	}
	clock := w.limiterClockOf(app.Name)
	for n, pc := range paces {
		limiter := pc.Now.Add(pc.Wait)
		local, ok := clock.local(limiter, mid)
		if !ok {
			local = mid.Add(pc.Wait)
		}
		got(n, local, limiter, pc.Held)
	}
	return nil
}
