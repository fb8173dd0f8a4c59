package worker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
)

// An app's MaxRate caps the sends per second to one provider across every
// process. Sends are paced right before they leave: the recipients about
// to be sent (a chunk's wave, or one delivery) ask the Pacer, in one round
// trip, for a send time per device, no earlier than their booked slot.
//
//   - A recipient whose times all fall within lateRebook of its slot is
//     sent at the latest of them (waiting in place at most that long), so
//     it keeps the user's rules and the provider's rate at once.
//   - A recipient the rate holds back further is not sent: the latest time
//     granted is recorded as its paced time ("<i>/p"), its booking is given
//     back, and its delivery books again no earlier than that time (the
//     limiter's NotBefore), so it is deferred, not dropped, and its slot is
//     moved only because the rate would break it. When the new slot lands
//     within lateRebook of the paced time, the delivery sends at its slot
//     without asking the Pacer again: the time granted is its. A chunk's
//     wave makes that booking itself for the recipients whose time is
//     within maxInlineWait and sends them (rebookNear): one round trip for
//     the wave instead of a task and a worker slot per recipient, which
//     made a paced fan-out miss the times it was granted.
//
// A recipient whose devices are on two paced platforms is sent at the
// later of its two times, so the earlier platform's send may leave up to
// the difference between the two platforms' queues late: the rate is then
// exceeded within a window by at most those sends.

// paceKey is the Pacer key of app's sends to platform.
func paceKey(app string, p payload.Platform) string { return app + ":" + string(p) }

// paceItem is one recipient about to be sent: its slot and the platforms
// of its devices not yet settled.
type paceItem struct {
	d      *delivery
	states []string
	slot   time.Time // on the local clock
	// paced is the time an earlier pacing granted it (zero: none), on the
	// limiter's clock (taken as the local one: both are the servers'
	// synchronised clocks, and it is only compared within lateRebook).
	paced time.Time
}

// paceResult is what pacing says of one item: send at sendAt (zero: no
// pacing, as booked), or hold it until paced (on the limiter's clock).
type paceResult struct {
	sendAt time.Time
	hold   bool
	paced  time.Time
}

// pace paces items of app: one Pacer round trip for all of them. Items
// of an app without a MaxRate for their platforms pass unpaced.
func (w *Worker) pace(ctx context.Context, app *App, items []paceItem) ([]paceResult, error) {
	out := make([]paceResult, len(items))
	if len(app.MaxRate) == 0 || w.pacer == nil {
		return out, nil
	}
	type ask struct {
		req   throttle.PaceRequest
		items []int // item index per granted time, in order
	}
	asks := map[payload.Platform]*ask{}
	var order []payload.Platform
	for k, it := range items {
		// A time granted earlier is the item's when its slot kept it.
		if !it.paced.IsZero() && !it.slot.Before(it.paced.Add(-lateRebook)) && it.slot.Sub(it.paced) <= lateRebook {
			continue
		}
		for j, dev := range it.d.Devices {
			rate := app.MaxRate[dev.Platform]
			if it.states[j] != "" || rate <= 0 {
				continue
			}
			a := asks[dev.Platform]
			if a == nil {
				a = &ask{req: throttle.PaceRequest{Key: paceKey(app.Name, dev.Platform), Rate: rate}}
				asks[dev.Platform] = a
				order = append(order, dev.Platform)
			}
			a.req.N++
			a.items = append(a.items, k)
			if nb := it.slot; a.req.NotBefore.IsZero() || nb.Before(a.req.NotBefore) {
				a.req.NotBefore = nb
			}
		}
	}
	if len(order) == 0 {
		return out, nil
	}
	reqs := make([]throttle.PaceRequest, len(order))
	for i, p := range order {
		reqs[i] = asks[p].req
	}
	asked := w.now()
	paces, err := w.pacer.Pace(ctx, reqs)
	mid := asked.Add(w.now().Sub(asked) / 2)
	if err == nil && len(paces) != len(reqs) {
		err = fmt.Errorf("%d paces for %d requests", len(paces), len(reqs))
	}
	if err != nil {
		return nil, fmt.Errorf("pace the sends of app %s: %w", app.Name, err)
	}
	for i, p := range order {
		pc := paces[i]
		for n, k := range asks[p].items {
			offset := pc.Wait + time.Duration(n)*pc.Interval
			local, limiter := mid.Add(offset), pc.Now.Add(offset)
			if local.After(out[k].sendAt) {
				out[k].sendAt, out[k].paced = local, limiter
			}
		}
	}
	for k, it := range items {
		if !out[k].sendAt.IsZero() && out[k].sendAt.Sub(it.slot) > lateRebook {
			out[k].hold = true
		}
	}
	return out, nil
}

// holdPaced records the paced times of held items (recipient index ->
// time on the limiter's clock) in one round trip, so their next bookings
// are made no earlier.
func (s store) holdPaced(ctx context.Context, job string, paced map[int]time.Time, ttl time.Duration) error {
	if len(paced) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, at := range paced {
			p.HSet(ctx, devKey(job), strconv.Itoa(i)+"/p", at.UnixMilli())
		}
		p.PExpire(ctx, devKey(job), ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the paced sends of %s: %w", job, err)
	}
	return nil
}
