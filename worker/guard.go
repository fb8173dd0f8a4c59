package worker

import (
	"context"
	"time"

	"github.com/hushpush/hush/internal/mutant"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/task"
)

// Cancellation and collapse reach deliveries through the records they read
// before they send, not through messages to the processes holding them:
//
//   - A cancelled job's record carries cancelled_at. Every provider call
//     starts within cancelWindow of a read of it that said no: the read in
//     the booking's own round trip (book), or, for a priority that
//     skips the limiter, the read of the recipient's state; a call that
//     would start later is not made (its sendBy), and the delivery reads
//     again. Client.Cancel answers cancelGrace after its call wrote
//     cancelled_at or found it written, measured on its own clock: every
//     read that allowed a send came before the first write, so no push
//     leaves after its answer, whatever the clocks of other processes.
//     A read that fails allows nothing: its delivery sends nothing and
//     reads again (decide.GateOf).
//   - A collapsed booking is gone from the limiter, which answers its
//     member RefusedCollapsed; a booking within worker.CollapseMargin of
//     its slot (one a delivery may be waiting on in place, up to
//     decide.MaxInlineWait) is never collapsed.
//
// Either way the delivery drops itself (drop), giving its booking back and
// emitting its event; the worker that cancelled or collapsed it only wakes
// its task (wake) so that this happens now rather than at its slot.

// cancelWindow is the most time between a read of a job's cancellation
// and the start of a provider call it allowed.
const cancelWindow = 3 * time.Second

// cancelGrace is how long Client.Cancel waits after its call wrote the
// cancellation (or found it written) before it answers: every call
// allowed by an earlier read has started by then.
const cancelGrace = cancelWindow + 500*time.Millisecond

// booking is a batch of bookings made in one round trip (book), with a
// read of the job's cancellation or beside one (a job's first step,
// singleJobs), or taken as found (a held task's carried slots).
type booking struct {
	idx []int // the chunk's recipients booked, in request order
	res []throttle.Reservation
	err error
	// cancelled: the job was cancelled (nothing may be sent); cancelErr:
	// the read of its cancellation failed (gate).
	cancelled bool
	cancelErr error
	// asked is when the round trip began; mid its middle (where the
	// limiter most likely read its clock); answered when its answer came
	// (the limiter read its clock before: see decide.Plan).
	asked, mid, answered time.Time
	permits              *wavePermits // set when booked ahead
}

// gate is what the booking's read of its job's cancellation allows.
func (b *booking) gate() decide.Gate { return decide.GateOf(b.cancelled, b.cancelErr) }

// sendBy is the latest instant a call under this booking may start: the
// slot's lateness bound (zero for a bypass priority), and never later
// than cancelWindow after the cancellation was read.
func (b *booking) sendBy(slotBy time.Time) time.Time {
	limit := b.asked.Add(cancelWindow)
	if slotBy.IsZero() || limit.Before(slotBy) {
		return limit
	}
	return slotBy
}

// requestOf is the limiter request of d's attempt n (no earlier than
// paced, a time the app's send rate granted it): in d's category (the
// global rules alone when it is not configured: the job was accepted
// under another configuration), in the recipient's time zone, not before
// its send_at, with its collapse key in its app (collapseKeyOf) and its
// job's accepted instant, which makes the newest accepted push win,
// critical when its priority is (the user's opt-outs do not apply to it);
// refused after d's deadline, and never later than its job's records are
// kept (less a day), so a slot is never used after the records that stop
// a second send are gone.
func (w *Worker) requestOf(a *App, d *task.Delivery, n int, paced time.Time) throttle.Request {
	notAfter := task.RetainFrom(d.AcceptedAt, &d.Content).Add(task.RecordTTL - 24*time.Hour)
	if !d.Deadline.IsZero() {
		notAfter = d.Deadline.Add(-time.Millisecond)
	}
	q := throttle.Request{User: d.UserID, Member: task.Member(d.Job, d.Index, n), NotAfter: notAfter,
		NotBefore: d.Content.NotBefore(), CollapseKey: collapseKeyOf(a.Name, d.Content.CollapseKey), Accepted: d.AcceptedAt,
		Location: w.location(d.Timezone), Critical: d.Priority == payload.PriorityCritical}
	if mutant.On("sendAtEarly") && !q.NotBefore.IsZero() {
		q.NotBefore = q.NotBefore.Add(-time.Second)
	}
	if mutant.On("collapseByBooking") {
		q.Accepted = w.now()
	}
	if paced.After(q.NotBefore) {
		q.NotBefore = paced // the app's send rate granted no earlier send
	}
	if cat := d.Content.Category; cat != "" {
		if _, ok := a.Policy.Categories[cat]; ok {
			q.Category = cat
		} else if _, warned := w.unknownCats.LoadOrStore(a.Name+"/"+cat, true); !warned {
			w.log.Warn("a job names a category its app does not have here: its pushes keep the global rules alone", "delivery", d.Member(), "app", a.Name, "category", cat)
		}
	}
	return q
}

// location is the time zone of a recipient's timezone field (already
// validated): the default when empty or, after a change of the zone
// database, unknown. Zones are loaded once per process (loading parses the
// zone's data); the names are IANA's, a few hundred at most.
// collapseKeyOf is the limiter's collapse key of a push of app with
// collapse_key key ("" none): the app is part of it, so the apps of one
// throttle_group, which share a user's limiter keys, never collapse each
// other's pushes. App names have no ":", so no two pairs make one key.
func collapseKeyOf(app, key string) string {
	if key == "" {
		return ""
	}
	return app + ":" + key
}

func (w *Worker) location(name string) *time.Location {
	if name == "" {
		return w.defaultLoc
	}
	if loc, ok := w.zones.Load(name); ok {
		return loc.(*time.Location)
	}
	loc, err := (payload.Recipient{Timezone: name}).Location()
	if err != nil || loc == nil {
		return w.defaultLoc
	}
	w.zones.Store(name, loc)
	return loc
}

// wake runs the task holding recipient index of job now: a task held for
// its slot, whose job was cancelled or whose booking was collapsed, then
// drops the recipient at once. The recipient's held marker names the task
// and its queue (a hush:held task's recipients have no task of their own);
// without one, queues are where its delivery task may wait. A task found
// nowhere (not yet created, running, or done) is left to find out on its
// own.
func (w *Worker) wake(job string, index int, queues ...string) bool {
	id := task.DeliveryID(job, index)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	mark, err := w.store.readHeldMark(ctx, job, index)
	cancel()
	if err == nil {
		q, task := task.ParseHeldMark(mark)
		if task == "" {
			task = id
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if w.client.wakeHeld(ctx, q, task) {
			return true
		}
	}
	for _, q := range queues {
		if err := w.insp.RunTask(q, id); err == nil {
			return true
		}
	}
	return false
}

// collapsedBy handles a booking of d that took the place of member, the
// user's held push with the same collapse key: the held one's delivery is
// woken, finds its booking collapsed and drops itself (drop, reason
// collapsed: event, metric, final state).
func (w *Worker) collapsedBy(d *task.Delivery, member string) {
	job, index, _, ok := task.ParseMember(member)
	if !ok {
		w.log.Warn("collapsed a booking whose member names no delivery", "delivery", d.Member(), "collapsed", member)
		return
	}
	// Its task waits on the user's shard of its priority, which need not
	// be d's.
	var queues []string
	for _, p := range []payload.Priority{d.Priority, payload.PriorityNormal, payload.PriorityHigh, payload.PriorityCritical} {
		if q := task.ShardQueue(string(p), d.UserID, w.shards); !containsString(queues, q) {
			queues = append(queues, q)
		}
	}
	woken := w.wake(job, index, queues...)
	w.log.Info("held push collapsed by a newer one", "delivery", member, "by", d.Member(), "user_id", d.UserID, "woken", woken)
}

// collapsedSince reports, per recipient just held back (items: each
// one's booked attempt, all of one job), whether a newer push of its
// collapse key has collapsed its booking since it was made. A newer push
// that collapsed it before its held marker was written found no task to
// wake (wake), so the holder, once the marker is written, looks itself:
// one booking round trip, which finds each booking or answers it
// collapsed, and only for a push with a collapse key. A recipient it
// answers collapsed for is woken (or dropped) by the holder now, rather than at
// its slot. A failed look leaves them to their slots.
func (w *Worker) collapsedSince(ctx context.Context, app *App, items []bookItem) []collapseSeen {
	out := make([]collapseSeen, len(items))
	if len(items) == 0 || items[0].d.Content.CollapseKey == "" || w.bypass[items[0].d.Priority] {
		return out
	}
	b := w.book(ctx, app, items, bookHow{})
	if b.err != nil {
		w.log.Warn("held pushes not looked up for a collapse since their booking (left to their slots)",
			"delivery", items[0].d.Member(), "deliveries", len(items), "err", b.err)
		return out
	}
	for k, r := range b.res {
		out[k] = collapseSeen{collapsed: r.Refused == throttle.RefusedCollapsed, by: r.ReplacedBy}
	}
	return out
}

// collapseSeen is collapsedSince's answer for one recipient: whether a
// newer push collapsed its booking, and that push's limiter member (by;
// "" when not known).
type collapseSeen struct {
	collapsed bool
	by        string
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
