package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
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
func (w *Worker) release(ctx context.Context, why string, on onFailure, n int, ds ...*task.Delivery) error {
	if len(ds) == 0 || w.bypass[ds[0].Priority] {
		return nil
	}
	app, err := w.appOf(ds[0])
	if err != nil {
		return nil
	}
	hs := make([]throttle.Held, len(ds))
	for k, d := range ds {
		hs[k] = throttle.Held{User: d.UserID, Member: task.Member(d.Job, d.Index, n)}
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
func deliveriesOf(c *task.Chunk, idx []int) []*task.Delivery {
	ds := make([]*task.Delivery, len(idx))
	for k, i := range idx {
		d := c.Delivery(i)
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

// bookItem is one booking to make: attempt n of d, no earlier than paced
// (a time its app's send rate granted it; zero: none).
type bookItem struct {
	d     *task.Delivery
	n     int
	paced time.Time
}

// bookHow is how a booking's round trip reads the job's cancellation,
// and whether it needs one.
type bookHow struct {
	// job: the round trip reads job's cancellation beside the bookings:
	// on the limiter's own pipeline when it runs on the worker's Redis
	// client, else first, then the bookings (none when the read failed).
	job string
	// with: the caller's commands, queued on the limiter's pipeline (the
	// app's limiter runs on the worker's Redis client), read it instead
	// (start.lua's calls); they read their results once book returns.
	with func(redis.Pipeliner)
	// found: the slots the items were held back with (Unix ms on the
	// limiter's clock, their reservations' At; 0: not known), taken as
	// found, without a round trip, when every item carries one that the
	// limiter's clock, as this process last read it, can place
	// (limiterClock.found); readAt is when their cancellation was read.
	found  []int64
	readAt time.Time
	// foundOnly: when the slots cannot be taken as found, book nothing
	// and answer errSlotsUnknown (the caller looks them up its own way).
	foundOnly bool
}

// errSlotsUnknown is book's answer when found slots cannot be placed and
// the caller asked for nothing else (bookHow.foundOnly).
var errSlotsUnknown = errors.New("carried slots not placed on the limiter's clock")

// book books items (none for a bypass priority: then it only reads the
// cancellation) with app a's limiter in one round trip, or none (found
// slots), building each request with requestOf. With neither how.job nor
// how.with, the cancellation is read elsewhere, and the caller sets the
// booking's asked to that read. A failed read is kept apart from the
// bookings' error (cancelErr): whatever was booked, nothing may be sent
// under it.
func (w *Worker) book(ctx context.Context, a *App, items []bookItem, how bookHow) booking {
	clock := w.limiterClockOf(a.Name)
	if b, ok := foundBooking(clock, w.now(), how); ok {
		return b
	} else if how.foundOnly {
		return booking{err: errSlotsUnknown}
	}
	reqs := make([]throttle.Request, len(items))
	for k, it := range items {
		reqs[k] = w.requestOf(a, it.d, it.n, it.paced)
	}
	b := booking{asked: w.now()}
	var cc *redis.StringCmd
	pipe := w.pipeOf(a)
	switch {
	case how.with != nil && pipe == nil:
		b.err = fmt.Errorf("app %s: its limiter does not run on the worker's Redis client", a.Name)
	case how.with != nil:
		b.res, b.err = pipe.ReserveBatchWith(ctx, reqs, how.with)
	case how.job == "":
		b.res, b.err = a.Limiter.ReserveBatch(ctx, reqs)
	case len(reqs) == 0:
		cc = w.store.readCancelled(ctx, how.job)
	case pipe != nil:
		b.res, b.err = pipe.ReserveBatchWith(ctx, reqs, func(p redis.Pipeliner) { cc = store.QueueCancelled(ctx, p, how.job) })
	default:
		cc = w.store.readCancelled(ctx, how.job)
		if cc.Err() == nil || errors.Is(cc.Err(), redis.Nil) {
			b.res, b.err = a.Limiter.ReserveBatch(ctx, reqs)
		}
	}
	b.answered = w.now()
	b.mid = b.asked.Add(b.answered.Sub(b.asked) / 2)
	clock.learn(b.res, b.asked, b.answered)
	switch {
	case how.job == "":
	case cc == nil:
		b.cancelErr = fmt.Errorf("read the cancellation of %s: not made", how.job)
	default:
		if b.cancelled, b.cancelErr = store.IsCancelled(cc); b.cancelErr != nil {
			b.cancelErr = fmt.Errorf("read the cancellation of %s: %w", how.job, b.cancelErr)
		}
	}
	if len(b.res) != len(reqs) {
		// Not an answer per request: none is taken.
		if b.err == nil && b.cancelErr == nil {
			b.err = fmt.Errorf("%d answers for %d requests", len(b.res), len(reqs))
		}
		b.res = nil
	}
	for k := range b.res {
		// A slot at its request's NotBefore is held by the send rate when
		// the turn the rate granted set that (requestOf).
		if it := items[k]; b.res[k].HeldBy == throttle.HeldBySendAt && it.paced.After(it.d.Content.NotBefore()) {
			b.res[k].HeldBy = heldByMaxRate
		}
	}
	return b
}

// heldByMaxRate names the app's max_rate as what holds a slot (the turn
// its send rate granted), beside throttle.Reservation.HeldBy's rules.
const heldByMaxRate = "max_rate"

// foundBooking is the booking of how.found's slots, taken as found at
// now, when every one of them can be placed on the limiter's clock.
func foundBooking(clock *limiterClock, now time.Time, how bookHow) (booking, bool) {
	if len(how.found) == 0 {
		return booking{}, false
	}
	res := make([]throttle.Reservation, len(how.found))
	for k, at := range how.found {
		if at <= 0 {
			return booking{}, false
		}
		r, ok := clock.found(time.UnixMilli(at), now)
		if !ok {
			return booking{}, false
		}
		res[k] = r
	}
	return booking{res: res, asked: how.readAt, mid: now, answered: now}, true
}

// part is the booking of b's k-th request alone, as the job of that
// request goes on with it (a batch's single-recipient jobs, a
// hush:waiting-jobs task's members): a request that failed alone is
// marked by its zero Now, so the error stays only when b failed whole
// (book answers every request, or none).
func (b *booking) part(k int) *booking {
	p := &booking{idx: []int{0}, err: b.err, cancelled: b.cancelled, cancelErr: b.cancelErr,
		asked: b.asked, mid: b.mid, answered: b.answered}
	if k < len(b.res) {
		p.res, p.err = b.res[k:k+1], nil
	}
	return p
}

// carriedSlot is the slot recipient i of c was held back with, as c's
// held task carries it (Unix ms on the limiter's clock), when its first
// run may take the booking as found (book); 0 when it must look the
// booking up. Nothing but a cancellation or the recipient's own delivery
// gives such a booking back: the recipient is its held task's alone (its
// marker), and a first run follows only the run of the chunk that booked
// it, but for a reset (resetmark.go). Five cases look their bookings up: a
// chunk with a collapse key (a newer push may have taken a booking's
// place, which only the limiter knows), a chunk its users may opt out of
// (optOutable: a user may have since, which the lookup reads with the
// booking), a re-run (an earlier run may have
// given a booking back, or booked again), a task that booked before the
// reset mark (a reset may have deleted a booking), and, in book, a
// process with no recent reading of the limiter's clock (the lookup reads
// it).
func carriedSlot(c *task.Chunk, st *chunkStates, i int) int64 {
	if !c.Held() || !st.first || st.cancelled || c.Content.CollapseKey != "" || optOutable(&c.Content, c.Priority) ||
		len(c.Slots) != len(c.Recipients) || c.Booked < st.resetMark {
		return 0
	}
	return c.Slots[i]
}

// optOutable reports whether a user's preferences may refuse a push of
// content at priority: it names a category and is not critical. Which
// categories are Required only the app's policy says; a lookup of such a
// booking finds it.
func optOutable(content *payload.Content, priority payload.Priority) bool {
	return content.Category != "" && priority != payload.PriorityCritical
}

// bookItems is the first attempts of recipients idx of c, to book.
func bookItemsOf(c *task.Chunk, idx []int) []bookItem {
	items := make([]bookItem, len(idx))
	for k, d := range deliveriesOf(c, idx) {
		items[k] = bookItem{d: d}
	}
	return items
}
