package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"golang.org/x/sync/semaphore"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// maxWave is the most recipients of a chunk booked and sent together.
const maxWave = 25

func (w *Worker) handleChunk(ctx context.Context, t *asynq.Task) error {
	return w.handle(ctx, t, w.chunkTask)
}

// chunkTask runs a chunk task: a hush:grouping-chunk one
// (TypeGroupingChunk), which marks its runs and reads its states only on a
// re-run, a hush:rereading-chunk one (made by a job task's re-run), which
// reads them on every run, a hush:marked-chunk or hush:chunk one (earlier
// builds' types: legacy.go), which never holds back into held tasks, or a hush:held one (TypeHeld: held.go),
// which marks its runs too.
func (w *Worker) chunkTask(ctx context.Context, t *asynq.Task) error {
	var c task.Chunk
	if err := json.Unmarshal(t.Payload(), &c); err != nil {
		return fmt.Errorf("undecodable chunk payload: %w: %w", err, asynq.SkipRetry)
	}
	if c.Job == "" || c.From < 0 || len(c.Recipients) == 0 {
		return fmt.Errorf("invalid chunk payload (job %q, from %d, %d recipients): %w", c.Job, c.From, len(c.Recipients), asynq.SkipRetry)
	}
	typ := t.Type()
	held := typ == TypeHeld
	if held != c.Held() || (c.Indices != nil && len(c.Indices) != len(c.Recipients)) || (held && c.Indices == nil) {
		return fmt.Errorf("invalid %s payload (wake %d, %d indices for %d recipients): %w", typ, c.Wake, len(c.Indices), len(c.Recipients), asynq.SkipRetry)
	}
	if held {
		w.logHeldRun(ctx, c.Name(), len(c.Recipients))
	}
	st, err := w.store.chunkState(ctx, &c, typ == TypeGroupingChunk || typ == typeMarkedChunk || typ == TypeHeld)
	if err != nil {
		return err
	}
	st.group = typ == TypeGroupingChunk || typ == task.TypeRereadingChunk
	return w.deliverChunk(ctx, &c, st, nil, nil)
}

// logHeldRun logs, at debug level, that held task id (in the queue ctx
// names) runs for n recipients; the arguments are built only then.
func (w *Worker) logHeldRun(ctx context.Context, id string, n int) {
	if w.log.Enabled(ctx, slog.LevelDebug) {
		queue, _ := asynq.GetQueueName(ctx)
		w.log.Debug("held task runs", "task", id, "queue", queue, "recipients", n)
	}
}

// enqueueChunk creates c's task: a hush:grouping-chunk one when marked (by
// a job's first run: no run of any version sent to c before), else a
// hush:rereading-chunk one, which reads its states on every run
// (chunk.lua). Both hold deferred recipients back into held tasks.
func (w *Worker) enqueueChunk(ctx context.Context, c *task.Chunk, marked bool) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode chunk %s: %w", c.Name(), err)
	}
	typ := task.TypeRereadingChunk
	if marked {
		typ = TypeGroupingChunk
	}
	_, err = w.client.aq.EnqueueContext(ctx, asynq.NewTask(typ, b),
		asynq.TaskID(c.Name()), asynq.Queue(task.ShardQueue(string(c.Priority), c.Name(), w.shards)),
		asynq.MaxRetry(jobMaxRetry), asynq.Timeout(deliveryTimeout))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue chunk %s: %w", c.Name(), err)
	}
	return nil
}

// wavePermits are the send permits (of w.sends) a wave still holds, one per
// recipient.
type wavePermits struct {
	sem  *semaphore.Weighted
	held atomic.Int64
}

// release gives n of the wave's permits back.
func (p *wavePermits) release(n int64) {
	if n > 0 {
		p.held.Add(-n)
		p.sem.Release(n)
	}
}

// releaseAll gives back every permit the wave still holds.
func (p *wavePermits) releaseAll() { p.release(p.held.Swap(0)) }

// handoff is a recipient the chunk leaves to a per-recipient delivery task
// (or, deferred, to a held task: held.go).
type handoff struct {
	i     int
	delay time.Duration
	// failed: see delivery.
	failed string
	// deferred: its first booking's slot is further than a wait in place;
	// wake is when to wake for it (delay from the plan's instant). near:
	// its slot is within a wait in place, wake is now.
	deferred, near bool
	wake           time.Time
	// foreign: a held task's recipient that its marker gives to its
	// delivery task already: the task is created again, the marker kept.
	foreign bool
	// unsettled: see delivery.
	unsettled bool
	// slot: a deferred recipient's booked instant (local clock); at: the
	// same on the limiter's clock (its reservation's At); booked: the
	// limiter's instant of that booking (its reservation's Now).
	slot, at, booked time.Time
}

// deliverChunk delivers a chunk in waves of up to w.wave recipients: each
// wave takes that many of the worker's send permits (w.sends, Concurrency
// of them: as many provider calls at once as per-recipient tasks would
// make), books its recipients in one limiter round trip, which also reads
// whether the job was cancelled (book), and sends those allowed now at
// once, concurrently, so every push reaches the provider right after its
// booking. Each device's answer is recorded as it comes (worker/internal/store/outcomes.go); the
// recipients' final states, and which are left held, are recorded in one
// round trip at the end. Every other recipient (held back by the limiter,
// booked by an earlier run, late for its slot, not delivered to every
// device, or anything but a fresh first attempt) becomes an ordinary
// hush:delivery task, which handles every case for one recipient with the
// same decisions (decide.go). Re-runs are idempotent: final recipients are
// skipped, and a recipient an earlier run got anywhere with is handed to
// its delivery task. A cancelled job's fresh recipients end cancelled here;
// the rest are dropped by their delivery tasks.
// st are the chunk's states as its run read them first; pre, when not
// nil, is the first wave already booked (singleJobs, bookHeldJobs). hj,
// when not nil, takes a single-recipient job's deferred recipient
// (waitingjobs.go): c is the job's only chunk, run by a batch or job task.
func (w *Worker) deliverChunk(ctx context.Context, c *task.Chunk, st *chunkStates, pre *booking, hj *waitingJobsGroups) error {
	var handoffs []handoff
	var rec chunkRecord
	var todo, cancel []int
	// The held tasks this run creates, or creates again for recipients an
	// earlier run of the chunk held back (their markers name them). Only
	// runs that read the markers (st.holds) hold back, and only those whose
	// kind allows it (st.group: held.go).
	groups := heldGroups{}
	grouping := st.group && st.holds != nil && !c.Held()
	// The hush:waiting-jobs tasks c's recipient joins once its marker
	// names them (hj).
	var joins []heldJoin
	now := w.now()
	app, appErr := w.apps.Resolve(c.Content.App)
	for i := range c.Recipients {
		ownerQueue, owner := "", ""
		if st.holds != nil {
			ownerQueue, owner = task.ParseHeldMark(st.holds[i])
		}
		switch {
		case st.finals[i] != "":
		case c.Held() && owner != c.Name(), !c.Held() && ownerQueue != "" && owner == "":
			// Given up to its delivery task by an earlier run of this task
			// (whose creation may have answered an error although the task
			// exists): it is the delivery task's alone.
			handoffs = append(handoffs, handoff{i: i, foreign: true})
		case !c.Held() && strings.HasPrefix(owner, task.WaitingJobsPrefix):
			// Its job's batch or job task creates it again, whole.
			if err := hj.check(c, ownerQueue, owner); err != nil {
				return err
			}
			joins = append(joins, heldJoin{id: owner, queue: ownerQueue})
		case !c.Held() && owner != "":
			// The same task in the same queue: a task of this id in
			// another queue would be a second owner.
			if _, err := groups.again(c, i, ownerQueue, owner); err != nil {
				return err
			}
		case appMissing(app, appErr, c.Recipients[i].Devices, st.devices[i]) != nil:
			// Accepted by a process with another apps file: its delivery
			// task waits for the app (waitForApp).
			handoffs = append(handoffs, handoff{i: i})
		case !slices.Contains(st.devices[i], ""):
			// Every device settled by a run that died before the final state.
			// Every device settled: decide.Judge needs no retry bound.
			v := decide.Judge(st.devices[i], make([]*providers.Result, len(st.devices[i])), st.attempts[i], w.retry, now, time.Time{}, false)
			if v.Act == decide.ActDone && !v.Release {
				rec.final(c.Index(i), v.State, c.About(i, now))
			} else {
				handoffs = append(handoffs, handoff{i: i})
			}
		case c.Expired(now), st.attempts[i].Begun(), slices.ContainsFunc(st.devices[i], func(s string) bool { return s != "" }):
			handoffs = append(handoffs, handoff{i: i}) // its delivery task knows
		case st.cancelled:
			cancel = append(cancel, i)
		default:
			todo = append(todo, i)
		}
	}
	if pre != nil && st.cancelled {
		_ = w.release(ctx, "cancelled", failureLeft, 0, deliveriesOf(c, pre.held())...)
		pre = nil
	}
	w.cancelled(ctx, c, cancel, &rec)
	if pre == nil {
		pre = w.heldSlots(ctx, app, c, st, todo)
	}
	var werr error
	for len(todo) > 0 && ctx.Err() == nil {
		size := w.wave
		if c.Held() {
			// Its bookings are found, not made: one round trip for all,
			// and each send takes its permit when its slot comes.
			size = len(todo)
		}
		wave := todo[:min(size, len(todo))]
		todo = todo[len(wave):]
		booked := pre
		pre = nil
		if booked != nil && !slices.Equal(booked.idx, wave) {
			// Not the wave booked ahead (its recipient expired since): the
			// booking is handed over with the recipient, found existing.
			booked = nil
		}
		if booked == nil && !c.Held() {
			if err := w.sends.Acquire(ctx, int64(len(wave))); err != nil {
				break // shutdown: handled below
			}
		}
		p := &wavePermits{sem: w.sends}
		switch {
		case booked != nil:
			p = booked.permits
		case !c.Held():
			p.held.Store(int64(len(wave)))
		}
		hs, err := w.deliverWave(ctx, app, c, wave, st, &rec, p, booked)
		p.releaseAll()
		handoffs = append(handoffs, hs...)
		if err != nil {
			werr = err
			break
		}
	}
	// Markers before tasks (held.go): a deferred recipient goes to the held
	// task of its second of waking when this run can group, and a held
	// task's own recipients are given up to their delivery tasks.
	var tasks []handoff
	var holders []heldBy // the recipients held, with their tasks
	for _, h := range handoffs {
		switch decide.HandoffDest(h.deferred, h.near, h.foreign, hj != nil, c.Held(), grouping) {
		case decide.ToWaitingJobs:
			id, queue := hj.id(w, c, h.wake.Unix())
			rec.held(c.Index(h.i), task.HeldMark(queue, id))
			joins = append(joins, heldJoin{id: id, queue: queue, slot: h.slot, at: h.at, booked: h.booked})
			holders = append(holders, heldBy{i: h.i, queue: queue, task: id, joined: true})
			continue
		case decide.ToHeld:
			g := groups.add(w, c, h.i, h.wake.Unix(), h.at, h.booked)
			rec.held(c.Index(h.i), task.HeldMark(g.Queue, g.Name()))
			holders = append(holders, heldBy{i: h.i, queue: g.Queue, task: g.Name()})
			continue
		case decide.ToOwner:
		case decide.ToDelivery:
			// Every recipient handed to its delivery task is marked so
			// before the task is made: a re-run that finds the marker
			// leaves the recipient to the task, even when the task's
			// creation answered an error although the task exists.
			d := c.Delivery(h.i)
			rec.held(c.Index(h.i), task.HeldMark(w.deliveryQueue(&d), ""))
		}
		tasks = append(tasks, h)
	}
	st.handed = len(tasks) > 0
	// What was settled is recorded whatever happened, under a context
	// shutdown does not cancel.
	var recorded []bool
	var err error
	folded := false // rec.folded's answer written by the record call
	switch {
	case len(rec.entries) == 0 && rec.deferrals == 0:
		// Nothing settled or held (a run cut early): no write.
	default:
		recorded, err = w.store.record(ctx, c, &rec)
		folded = err == nil
	}
	// A folded answer no record call above wrote (none made, or it failed)
	// is written on its own.
	w.settleFolded(rec.folded, folded)
	if err != nil {
		return errors.Join(werr, err)
	}
	for _, j := range joins {
		// Its marker names the task now: the task may hold it.
		if err := hj.put(c, j); err != nil {
			return errors.Join(werr, err)
		}
	}
	for k := 1; k < len(rec.entries); k += 3 {
		if recorded[k/3] {
			w.m.deliveries.WithLabelValues(task.AppOf(&c.Content), rec.entries[k].(string)).Inc()
		}
	}
	if werr != nil {
		return werr
	}
	if err := ctx.Err(); err != nil {
		// Shutdown interrupted the chunk: what was settled is recorded; the
		// chunk goes back to its queue and hands the rest over next time.
		return fmt.Errorf("chunk %s interrupted: %w", c.Name(), err)
	}
	for _, id := range slices.Sorted(maps.Keys(groups)) {
		if err := w.enqueueHeld(ctx, groups[id]); err != nil {
			return err
		}
	}
	w.wakeCollapsed(ctx, app, c, holders, hj)
	for _, h := range tasks {
		d := c.Delivery(h.i)
		d.Failed = h.failed
		d.Unsettled = h.unsettled
		if err := w.enqueueDelivery(ctx, &d, h.delay); err != nil {
			return err
		}
	}
	return nil
}

// heldBy is a recipient (of a chunk, by index) held back, and the task
// holding it: its queue and id; joined: a hush:waiting-jobs group of hj.
type heldBy struct {
	i           int
	queue, task string
	joined      bool
}

// wakeCollapsed wakes the tasks of the recipients of c held back (hs,
// their markers written, their held tasks created) whose bookings a newer
// push collapsed before their markers named those tasks (collapsedSince):
// a held task at once, a hush:waiting-jobs group once hj creates it.
func (w *Worker) wakeCollapsed(ctx context.Context, app *App, c *task.Chunk, hs []heldBy, hj *waitingJobsGroups) {
	if len(hs) == 0 || c.Content.CollapseKey == "" {
		return
	}
	idx := make([]int, len(hs))
	for k, h := range hs {
		idx[k] = h.i
	}
	for k, seen := range w.collapsedSince(ctx, app, bookItemsOf(c, idx)) {
		switch {
		case seen.collapsed && hs[k].joined:
			hj.wakeOnce(hs[k].task)
		case seen.collapsed:
			woken := w.client.wakeHeld(ctx, hs[k].queue, hs[k].task)
			w.log.Info("held push collapsed before its marker was written", "delivery", task.Member(c.Job, c.Index(hs[k].i), 0), "task", hs[k].task, "woken", woken)
		}
	}
}

// cancelled ends recipients idx of c as cancelled: the first-attempt
// bookings of those an earlier run of the chunk left held are given back,
// then rec records them (and their dropped events).
func (w *Worker) cancelled(ctx context.Context, c *task.Chunk, idx []int, rec *chunkRecord) {
	if len(idx) == 0 {
		return
	}
	// A re-run cancelling them must not leave their slots taken.
	_ = w.release(ctx, "cancelled", failureLeft, 0, deliveriesOf(c, w.markedHeld(ctx, c, idx))...)
	at := w.now()
	for _, i := range idx {
		rec.final(c.Index(i), task.Cancelled, c.About(i, at))
	}
	w.log.Info("deliveries dropped: job cancelled", "job", c.Job, "deliveries", len(idx))
}

// markedHeld is those of recipients idx of c that the job record marks
// held (an earlier run of the chunk deferred them): their first-attempt
// bookings are still taken. A bypass priority books nothing, so reads
// nothing.
func (w *Worker) markedHeld(ctx context.Context, c *task.Chunk, idx []int) []int {
	if w.bypass[c.Priority] {
		return nil
	}
	fields := make([]string, len(idx))
	for k, i := range idx {
		fields[k] = store.HeldPrefix + strconv.Itoa(c.Index(i))
	}
	vals, err := w.store.heldFields(ctx, c.Job, fields)
	if err != nil {
		w.log.Warn("reading held deliveries of a cancelled chunk failed", "chunk", c.Name(), "err", err)
		return nil
	}
	var marked []int
	for k, i := range idx {
		if vals[k] != nil {
			marked = append(marked, i)
		}
	}
	return marked
}

// deliverWave books (unless booked is not nil) and sends recipients idx of
// c, each recipient's first attempt; it adds their final states to rec and
// returns the recipients left to delivery tasks.
func (w *Worker) deliverWave(ctx context.Context, app *App, c *task.Chunk, idx []int, st *chunkStates, rec *chunkRecord, p *wavePermits, booked *booking) ([]handoff, error) {
	var handoffs []handoff
	// when each recipient's calls may leave (sendTimes).
	when := make([]sendTimes, len(c.Recipients))
	bypass := w.bypass[c.Priority]
	if booked == nil {
		var items []bookItem
		if !bypass {
			items = bookItemsOf(c, idx)
		}
		b := w.book(ctx, app, items, bookHow{job: c.Job})
		b.idx = idx
		booked = &b
	}
	switch booked.gate() {
	case decide.GateCancelled:
		// Nothing was sent under the wave's bookings: give them back.
		if booked.err == nil {
			_ = w.release(ctx, "cancelled", failureLeft, 0, deliveriesOf(c, booked.held())...)
		}
		p.releaseAll()
		w.cancelled(ctx, c, idx, rec)
		return nil, nil
	case decide.GateUnknown:
		// The job may be cancelled: nothing is sent, the bookings go back,
		// and the chunk's re-run reads the cancellation again.
		if booked.err == nil {
			_ = w.release(ctx, "unread", failureLeft, 0, deliveriesOf(c, booked.held())...)
		}
		p.releaseAll()
		return nil, fmt.Errorf("wave of %s: %w", c.Name(), booked.cancelErr)
	}
	var sendNow []int
	// Each recipient's slot, on the local clock and on the limiter's.
	slots := make([]time.Time, len(c.Recipients))
	ats := make([]time.Time, len(c.Recipients))
	if bypass {
		w.m.limiter.WithLabelValues(app.Name, "bypass").Add(float64(len(idx)))
		sendNow = idx
		for _, i := range idx {
			when[i].by = booked.sendBy(time.Time{})
			slots[i] = w.now()
		}
	} else {
		res, err := booked.res, booked.err
		if len(res) != len(idx) {
			if err == nil {
				err = fmt.Errorf("%d answers for %d requests", len(res), len(idx))
			}
			return nil, fmt.Errorf("limiter reserve for %s: %w", c.Name(), err)
		}
		// A booking an earlier run of the chunk made may carry a push when
		// that run may have ended during its provider call (Asynq counts
		// every failed run of a chunk, and hush decides none of them).
		retried, _ := asynq.GetRetryCount(ctx)
		for k, i := range idx {
			r := res[k]
			by := decide.ByWave
			if c.Held() {
				by = decide.ByHeld
			}
			unsettled := r.Existing && decide.AfterUnsettled(retried, 0)
			if !decide.PlansItself(r, by) {
				handoffs = append(handoffs, handoff{i: i, unsettled: unsettled})
				continue
			}
			d := c.Delivery(i)
			if r.Collapsed != "" {
				w.collapsedBy(&d, r.Collapsed)
			}
			pl := decide.Plan(r, booked.mid, booked.answered, w.now(), c.Deadline, unsettled)
			w.countPlan(app, pl, r)
			rt := decide.RoutePlan(pl, by)
			if rt.Deferred {
				w.logDeferred(&d, pl)
			}
			switch rt.Move {
			case decide.MoveSend:
				when[i] = sendTimes{at: pl.Slot, by: booked.sendBy(pl.Slot.Add(decide.LateRebook))}
				slots[i], ats[i] = pl.Slot, r.At
				sendNow = append(sendNow, i)
			case decide.MoveDefer:
				rec.deferrals++
				handoffs = append(handoffs, handoff{i: i, delay: rt.Delay, deferred: true, wake: w.now().Add(rt.Delay), slot: pl.Slot, at: r.At, booked: r.Now})
			case decide.MoveNear:
				// It waits in a held task of this second (a run that
				// groups), else in its delivery task, in place.
				handoffs = append(handoffs, handoff{i: i, near: true, wake: w.now(), slot: pl.Slot, at: r.At, booked: r.Now})
			default:
				handoffs = append(handoffs, handoff{i: i, delay: rt.Delay, unsettled: unsettled})
			}
		}
	}
	ds := make([]task.Delivery, len(c.Recipients))
	for _, i := range sendNow {
		ds[i] = c.Delivery(i)
	}
	// The app's send rate (pace.go): each recipient is sent at its turns,
	// waiting for them without a send permit (callAtTurn), or held: its
	// booking given back, its delivery task booking again from its turn.
	paced := map[int]bool{}
	if len(app.MaxRate) > 0 && len(sendNow) > 0 {
		items := make([]paceItem, len(sendNow))
		for k, i := range sendNow {
			items[k] = paceItem{d: &ds[i], states: st.devices[i], slot: slots[i], at: ats[i]}
		}
		res, err := w.pace(ctx, app, items)
		if err != nil {
			// Their delivery tasks find their bookings and pace again.
			for _, i := range sendNow {
				handoffs = append(handoffs, handoff{i: i})
			}
			p.releaseAll()
			return handoffs, err
		}
		held := map[int]pacedTurn{}
		near := map[int]paceResult{} // held, their turn within decide.MaxInlineWait
		kept := sendNow[:0:0]
		now := w.now()
		var release []int
		for k, i := range sendNow {
			if res[k].hold {
				held[c.Index(i)] = res[k].last
				release = append(release, i)
				if decide.PacedNear(res[k].turn, now, c.Deadline) {
					near[i] = res[k]
				} else {
					handoffs = append(handoffs, handoff{i: i})
				}
				continue
			}
			if when[i].turns = res[k].turns; res[k].turns != nil {
				paced[i] = true
			}
			kept = append(kept, i)
		}
		_ = w.release(ctx, "paced", failureLeft, 0, deliveriesOf(c, release)...)
		// Recorded first: a held recipient this wave does not send keeps
		// its turn in its delivery task.
		if err := w.store.holdPaced(ctx, c.Job, held, c.TTL()); err != nil {
			for i := range near {
				handoffs = append(handoffs, handoff{i: i})
			}
			return handoffs, err
		}
		w.m.limiter.WithLabelValues(app.Name, "paced").Add(float64(len(held)))
		rebooked := w.rebookNear(ctx, app, c, near, ds, slots, when, &handoffs)
		for _, i := range rebooked {
			paced[i] = true
		}
		sendNow = append(kept, rebooked...)
	}
	// The permits of the recipients not sent now go back at once, and so
	// do those of the paced ones, which take one again at their turns; the
	// others' go back as each recipient's sends end, so the next wave need
	// not wait for this one's slowest answer.
	if !c.Held() {
		p.release(int64(len(idx) - len(sendNow) + len(paced)))
	}
	results := make([][]*providers.Result, len(c.Recipients))
	var calls []func()
	// A chunk of one recipient with one device (held or not) leaves its
	// delivered answer to the record call that follows it (foldedAnswer).
	var fold *foldedAnswer
	if len(c.Recipients) == 1 && len(sendNow) == 1 && len(ds[sendNow[0]].Devices) == 1 {
		fold = &foldedAnswer{}
	}
	for _, i := range sendNow {
		results[i] = make([]*providers.Result, len(ds[i].Devices))
		if c.Held() || paced[i] {
			calls = append(calls, w.callAtTurn(ctx, app, &ds[i], st.devices[i], when[i], results[i], fold))
			continue
		}
		calls = append(calls, w.deviceCalls(ctx, app, &ds[i], st.devices[i], 0, when[i], results[i], fold, func() { p.release(1) })...)
	}
	w.pool.all(calls)
	var errs []error
	for _, i := range sendNow {
		v := decide.Judge(st.devices[i], results[i], st.attempts[i], w.retry, w.now(), ds[i].RetryUntil(), ctx.Err() != nil)
		final, n, err := w.after(ctx, &ds[i], st.attempts[i], v)
		if err != nil && v.Act == decide.ActRetry {
			// Its delivery task repeats the attempt after the retry's
			// delay, not the chunk's re-run after Asynq's backoff.
			n = unrecordedRetry(v, err)
			w.log.Warn("delivery retry not recorded, handed to its task", "delivery", ds[i].Member(), "in", n.delay, "err", n.cause)
			err = nil
		}
		if fold != nil {
			if err == nil && n.failed == "" && final != "" {
				rec.folded = fold // written with its final state
			} else {
				w.settleFolded(fold, false)
			}
		}
		switch {
		case err != nil:
			errs = append(errs, err)
			handoffs = append(handoffs, handoff{i: i})
		case n.failed != "":
			handoffs = append(handoffs, handoff{i: i, failed: n.failed})
		case final != "":
			rec.final(c.Index(i), final, c.About(i, w.now()))
		case n.stop:
			// Shutdown: the chunk's re-run hands it over.
		case v.Act == decide.ActRebook:
			handoffs = append(handoffs, handoff{i: i})
		default:
			handoffs = append(handoffs, handoff{i: i, delay: retryWake(n.delay)})
		}
	}
	return handoffs, errors.Join(errs...)
}

// rebookNear books again, in one round trip, the held recipients whose
// turn at the app's send rate is near (within decide.MaxInlineWait: the wave
// waits for it, as a delivery task would in place), no earlier than their
// turns, and returns those whose new slot lands on their turn (within
// decide.PaceLate), with their send times (when); the wave sends them. The
// others go to their delivery tasks, with the booking made (found there) or
// none; their turns are recorded. A recipient's task would make the same
// booking, one task and one worker slot per recipient: kept in the wave, a
// paced fan-out keeps the rate instead of waiting for worker slots and
// missing the turns it was granted.
func (w *Worker) rebookNear(ctx context.Context, app *App, c *task.Chunk, near map[int]paceResult, ds []task.Delivery, slots []time.Time, when []sendTimes, handoffs *[]handoff) []int {
	if len(near) == 0 {
		return nil
	}
	idx := slices.Sorted(maps.Keys(near))
	var kept []int
	if w.bypass[c.Priority] {
		// No booking: the send waits for its turn, within the cancellation
		// window of the wave's read (by, set with its first plan).
		for _, i := range idx {
			when[i].at, when[i].turns = near[i].turn, near[i].turns
			kept = append(kept, i)
		}
		return kept
	}
	items := make([]bookItem, len(idx))
	for k, i := range idx {
		items[k] = bookItem{d: &ds[i], paced: near[i].paced}
	}
	b := w.book(ctx, app, items, bookHow{job: c.Job})
	if b.err != nil || b.gate() != decide.GateOpen {
		// The delivery tasks find the bookings made, or book, read the
		// cancellation again and drop a cancelled job's.
		for _, i := range idx {
			*handoffs = append(*handoffs, handoff{i: i})
		}
		return nil
	}
	now := w.now()
	for k, i := range idx {
		r := b.res[k]
		if !decide.PlansItself(r, decide.ByTurn) {
			*handoffs = append(*handoffs, handoff{i: i})
			continue
		}
		if r.Collapsed != "" {
			w.collapsedBy(&ds[i], r.Collapsed)
		}
		pl := decide.Plan(r, b.mid, b.answered, now, c.Deadline, false)
		w.countPlan(app, pl, r)
		rt := decide.RouteTurn(pl, r.At, near[i].paced)
		if rt.Move != decide.MoveSend {
			if rt.Deferred {
				w.logDeferred(&ds[i], pl)
			}
			*handoffs = append(*handoffs, handoff{i: i, delay: rt.Delay})
			continue
		}
		slots[i] = pl.Slot
		when[i] = sendTimes{at: pl.Slot, by: b.sendBy(pl.Slot.Add(decide.LateRebook)), turns: near[i].turns}
		kept = append(kept, i)
	}
	return kept
}
