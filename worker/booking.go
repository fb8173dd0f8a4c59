package worker

import (
	"context"
	"fmt"

	"github.com/hushpush/hush/throttle"
)

// Bookings: a delivery's slot is booked with its app's limiter (book) and
// given back (release) here, for every path: a chunk's waves, a
// single-recipient job's start, held tasks, hush:waiting-jobs groups and
// delivery tasks.

// onFailure says who handles a release that fails.
type onFailure bool

const (
	// failureLeft: the failure is logged and the bookings left: their
	// delivery tasks give them back, or they age out. Paths that hand
	// their recipients on (a chunk's run, a job's start) leave them so.
	failureLeft onFailure = true
	// failureReturned: the failure is the caller's error: its task runs
	// again and gives the booking back then.
	failureReturned onFailure = false
)

// release gives back the bookings of attempt n of deliveries ds, all of
// one job, in one round trip; why names them in the line or error a
// failure makes (on says which). A bypass priority books nothing, and
// an app this process does not have has nothing to give back.
func (w *Worker) release(ctx context.Context, why string, on onFailure, n int, ds ...*delivery) error {
	if len(ds) == 0 || w.bypass[ds[0].Priority] {
		return nil
	}
	app, err := w.appOf(ds[0])
	if err != nil {
		return nil
	}
	hs := make([]throttle.Held, len(ds))
	for k, d := range ds {
		hs[k] = throttle.Held{User: d.UserID, Member: memberOf(d.Job, d.Index, n)}
	}
	if _, err := app.Limiter.ReleaseBatch(ctx, hs); err != nil {
		if on == failureLeft {
			w.log.Warn("limiter release of "+why+" bookings failed (left to their delivery tasks, or to age out)",
				"booking", hs[0].Member, "bookings", len(hs), "err", err)
			return nil
		}
		return fmt.Errorf("limiter release of %s booking %s: %w", why, hs[0].Member, err)
	}
	return nil
}

// deliveries is recipients idx of c as deliveries (release's argument).
func (c *chunk) deliveries(idx []int) []*delivery {
	ds := make([]*delivery, len(idx))
	for k, i := range idx {
		d := c.delivery(i)
		ds[k] = &d
	}
	return ds
}

// held is the recipients (of c, by index) whose bookings b made or found:
// those a release gives back when nothing is sent under them.
func (b *booking) held() []int {
	var idx []int
	for k, i := range b.idx {
		if k < len(b.res) && b.res[k].Refused == "" && !b.res[k].Now.IsZero() {
			idx = append(idx, i)
		}
	}
	return idx
}
