package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/worker/internal/task"
)

// Held tasks: the recipients a chunk task's run holds back for a slot
// further than a wait in place wake together, one hush:held task per
// chunk and second of waking, instead of one hush:delivery task each.
// A throttled fan-out (every recipient of a chunk deferred by about the
// same time, the case hush exists for) then pays one Asynq task, one read,
// one booking round trip and one record per held task, not per push, and
// a held task waits for its recipients' slots without holding send
// permits, so many of them can wait at once without making each other
// late. It waits in a held queue (task.HeldQueuePrefix), in a slot of the held
// tasks' own Asynq server, so it never keeps a delivery slot either:
// sharing the delivery slots, a throttled burst's many held tasks due
// together would take every slot, wake behind the fresh chunks, find their
// slots past and book again.
//
// Ownership. Exactly one task may send to a recipient, and the job
// record's held marker "h:<index>" says which (task.HeldMark): "<queue>" is the
// recipient's own hush:delivery task, "<queue> <task id>" a hush:held
// task. A chunk's run records the markers of the recipients it holds back
// (record.lua) before it creates their held tasks; a held task's run sends
// only to recipients whose marker names it, and rewrites the marker of
// every recipient it gives up to its delivery task before creating that
// task. A re-run of either therefore finds, for every recipient, the one
// task that owns it and creates that task again, in the queue the marker
// names (a task that still exists is not created twice: the ids are
// deterministic, and Asynq refuses an id already in that queue). A chunk re-run never
// hands a recipient held by a held task to a delivery task.
//
// A held task's first run takes its recipients' bookings as found, at the
// slots its payload carries (heldSlots), unless they may have changed (a
// collapse key, or a category a user may have opted out of since: then,
// as on a re-run, it books them again and finds them, or finds them
// refused), and treats a slot within a wait in place like a slot now: it
// waits for it, then sends. Anything else (late, expired, collapsed,
// partly sent, a retry) goes to the recipient's delivery task, which
// handles every case for one recipient (decide.go).

// heldQueue is the queue of a held task: the shard of its id on its
// priority's queue, in the held queue beside it (task.HeldQueuePrefix) when
// the task waits there.
func (w *Worker) heldQueue(c *task.Chunk) string {
	q := task.ShardQueue(string(c.Priority), c.Name(), w.shards)
	if c.Waits {
		q = task.HeldQueueOf(q)
	}
	return q
}

// heldGroups gathers the held tasks a chunk's run creates or creates
// again, by task id.
type heldGroups map[string]*task.Chunk

// add puts c's recipient i, booked at slot at the limiter's instant
// booked (both on the limiter's clock), into the held task (in a held
// queue) waking at Unix second wake, and returns that task.
func (g heldGroups) add(w *Worker, c *task.Chunk, i int, wake int64, slot, booked time.Time) *task.Chunk {
	h := g.task(c, wake, true)
	if h.Queue == "" {
		h.Queue = w.heldQueue(h)
	}
	h.Indices = append(h.Indices, c.Index(i))
	h.Recipients = append(h.Recipients, c.Recipients[i])
	h.Slots = append(h.Slots, heldSlot(slot, booked))
	h.Booked = earliestBooking(h.Booked, slot, booked)
	return h
}

// heldSlot is the slot a held task carries for a booking at slot made at
// the limiter's instant booked: 0 (looked up) when either is not known.
func heldSlot(slot, booked time.Time) int64 {
	if slot.IsZero() || booked.IsZero() {
		return 0
	}
	return slot.UnixMilli()
}

// earliestBooking is Booked (Unix ms, 0 for none yet) of a held task
// carrying ms, once it carries the slot of a booking at slot made at
// booked too.
func earliestBooking(ms int64, slot, booked time.Time) int64 {
	if heldSlot(slot, booked) == 0 {
		return ms
	}
	if b := booked.UnixMilli(); ms == 0 || b < ms {
		return b
	}
	return ms
}

// again puts c's recipient i back into the held task its marker names
// (mark, as task.ParseHeldMark splits it), in the queue the marker names, and
// returns that task.
func (g heldGroups) again(c *task.Chunk, i int, queue, owner string) (*task.Chunk, error) {
	job, k, wake, waits, ok := task.ParseHeldID(owner)
	if !ok || job != c.Job || k != c.From/task.ChunkSize || queue == "" {
		return nil, fmt.Errorf("chunk %s: recipient %d is held by %q in %q, not a held task of this chunk: %w", c.Name(), c.Index(i), owner, queue, asynq.SkipRetry)
	}
	h := g.task(c, wake, waits)
	if h.Queue == "" {
		h.Queue = queue
	} else if h.Queue != queue {
		return nil, fmt.Errorf("chunk %s: held task %s is marked in both %s and %s: %w", c.Name(), owner, h.Queue, queue, asynq.SkipRetry)
	}
	h.Indices = append(h.Indices, c.Index(i))
	h.Recipients = append(h.Recipients, c.Recipients[i])
	h.Slots = append(h.Slots, 0) // not known here: the task's run looks it up
	return h, nil
}

// task is the held task of c's chunk waking at wake, made empty at first.
func (g heldGroups) task(c *task.Chunk, wake int64, waits bool) *task.Chunk {
	id := task.HeldID(c.Job, c.From/task.ChunkSize, wake, waits)
	h := g[id]
	if h == nil {
		h = &task.Chunk{
			Job: c.Job, From: c.From, Wake: wake, Waits: waits, Indices: []int{},
			Content: c.Content, Priority: c.Priority, Deadline: c.Deadline, AcceptedAt: c.AcceptedAt,
		}
		g[id] = h
	}
	return h
}

// heldSlots answers the bookings of recipients todo of c, a held task of
// app (nil: not resolved), on its first run, from the slots its payload
// carries, taken as found (carriedSlot, book); nil when they cannot be (the
// wave looks them up with the limiter, one round trip). The cancellation was read
// with the states, at st.readAt, so sendBy counts from there. The slots
// are on the limiter's clock, read here as this process last read that
// clock (limiterClock), so processes whose clocks disagree still send at
// the limiter's instants.
func (w *Worker) heldSlots(ctx context.Context, app *App, c *task.Chunk, st *chunkStates, todo []int) *booking {
	if app == nil || len(todo) == 0 || w.bypass[c.Priority] {
		return nil
	}
	found := make([]int64, len(todo))
	for k, i := range todo {
		if found[k] = carriedSlot(c, st, i); found[k] <= 0 {
			return nil
		}
	}
	b := w.book(ctx, app, bookItemsOf(c, todo), bookHow{found: found, readAt: st.readAt, foundOnly: true})
	if b.err != nil {
		return nil
	}
	b.idx, b.permits = slices.Clone(todo), &wavePermits{sem: w.sends}
	return &b
}

// enqueueHeld creates held task h, in its queue, to run at its second of
// waking. A task with its id that still exists (an earlier run created
// it) is left as it is.
func (w *Worker) enqueueHeld(ctx context.Context, h *task.Chunk) error {
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode held task %s: %w", h.Name(), err)
	}
	return w.client.enqueueHeld(ctx, TypeHeld, h.Name(), h.Queue, time.Unix(h.Wake, 0), b)
}

// callAtTurn sends d at its time (when): it waits without a send permit,
// then takes one for d's device calls (deviceCalls), which fill results
// (and fold, when set). A held task's recipient waits for its slot, a
// paced one for its turn: neither keeps a permit another send could use
// meanwhile. Shutdown during the wait leaves results empty (the task goes
// back as it is).
func (w *Worker) callAtTurn(ctx context.Context, app *App, d *task.Delivery, states []string, when sendTimes, results []*providers.Result, fold *foldedAnswer) func() {
	return func() {
		first := time.Time{}
		for j := range d.Devices {
			if at, _ := when.forDevice(j, w.sendNotBefore(d), d.Deadline); states[j] == "" && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
		if !w.sleepUntil(ctx, first) {
			return
		}
		if err := w.sends.Acquire(ctx, 1); err != nil {
			return
		}
		w.pool.all(w.deviceCalls(ctx, app, d, states, 0, when, results, fold, func() { w.sends.Release(1) }))
	}
}
