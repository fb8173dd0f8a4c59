package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// Held jobs: the single-recipient jobs of one task (a hush:batch task's,
// or a lone hush:job task's) that the limiter defers wake together, one
// hush:waiting-jobs task per second of waking, instead of one
// hush:delivery task each. A user sent several notifications in a row (the
// throttled case) then costs, per held push, its share of one Asynq task,
// its own read, its share of one batched booking and its own record,
// instead of a whole task lifecycle. The task waits in a held queue, in
// the held tasks' own slots, as a hush:held task does (held.go).
//
// Each member is its job's only recipient, so each keeps its own job
// record: the task's run reads each member's states (one round trip for
// all: chunk.lua marks its run in each job), books the fresh ones again in
// one batched round trip (finding their bookings), and then delivers each
// member as a hush:held task delivers its recipients, recording each job
// on its own. Ownership is the held marker's, as for hush:held tasks: a
// member is the task's while its job record's marker "h:0" names the task.
//
// Membership. A run of the owning task (the batch or the job task) writes
// each deferred job's marker first and adds the job to the task after that
// write answered; it creates the tasks once every job of the run is done.
// So a task holds exactly the jobs whose markers name it, as long as every
// run that names a task in a marker either creates it whole or creates
// nothing:
//   - The task ids carry a token new to each run (task.WaitingJobsID), so a
//     job deferred by a re-run never joins a task an earlier run created
//     (which would not hold it).
//   - A re-run creates an earlier run's task again (its markers name it: a
//     run crashed between the markers and the task) only when every job of
//     the run was read without an error, so no member is left out; a task
//     that still exists is not created twice (Asynq refuses its id).

// waitingJobs is the payload of a hush:waiting-jobs task: its members, each
// a job's only recipient as a chunk of one.
type waitingJobs struct {
	ID   string       `json:"id"`
	Wake int64        `json:"wake"`
	Jobs []task.Chunk `json:"jobs"`
	// queue is the task's queue (a held queue); again: created again by a
	// re-run, from markers.
	queue string
	again bool
}

// waitingJobsGroups gathers the hush:waiting-jobs tasks one run of a task
// (scope) creates, or creates again, by id. Its jobs' runs add to it side
// by side.
type waitingJobsGroups struct {
	scope, token string
	mu           sync.Mutex
	tasks        map[string]*waitingJobs
	// collapsed are the groups (by id) to wake once created: a member's
	// booking was collapsed before its marker named the group
	// (wakeCollapsed).
	collapsed map[string]bool
}

func newHeldJobsGroups(scope string) *waitingJobsGroups {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &waitingJobsGroups{scope: scope, token: hex.EncodeToString(b[:]), tasks: map[string]*waitingJobs{}}
}

// id is the group this run holds a job of priority queue q back in, to
// wake at Unix second wake, and the queue its markers name: its held
// queue, marked as waiting for its second's task (waitingsecond.go).
func (g *waitingJobsGroups) id(w *Worker, c *task.Chunk, wake int64) (id, queue string) {
	id = task.WaitingJobsID(g.scope, g.token, wake)
	return id, task.HeldQueueOf(task.ShardQueue(string(c.Priority), id, w.shards)) + task.TogetherSuffix
}

// check reports an error when owner, the task c's marker names in queue,
// is not a hush:waiting-jobs task of this run's task.
func (g *waitingJobsGroups) check(c *task.Chunk, queue, owner string) error {
	scope, _, _, ok := task.ParseWaitingJobsID(owner)
	if g == nil || !ok || scope != g.scope || queue == "" {
		return fmt.Errorf("job %s is held by %q in %q, not a held task of this task: %w", c.Job, owner, queue, asynq.SkipRetry)
	}
	return nil
}

// heldJoin is a hush:waiting-jobs task a job's recipient joins: its id,
// its queue, and the recipient's slot when this run booked it, on the
// local clock and on the limiter's (zero when an earlier run did: the
// task's run finds the booking).
type heldJoin struct {
	id, queue        string
	slot, at, booked time.Time // booked: the limiter's instant of the booking
}

// put adds c (its job's only recipient) to task j, once its marker names
// it (an earlier run's task when j's token is not this run's).
func (g *waitingJobsGroups) put(c *task.Chunk, j heldJoin) error {
	_, token, wake, _ := task.ParseWaitingJobsID(j.id)
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.tasks[j.id]
	if h == nil {
		h = &waitingJobs{ID: j.id, Wake: wake, queue: j.queue, again: token != g.token}
		g.tasks[j.id] = h
	} else if h.queue != j.queue {
		return fmt.Errorf("held task %s is marked in both %s and %s: %w", j.id, h.queue, j.queue, asynq.SkipRetry)
	}
	m := *c
	m.From, m.Indices, m.Wake, m.Waits, m.Slot, m.Slots, m.Booked, m.Group, m.Queue = 0, []int{0}, wake, true, j.slot, nil, 0, "", ""
	if at := heldSlot(j.at, j.booked); at != 0 {
		m.Slots, m.Booked = []int64{at}, j.booked.UnixMilli()
	}
	h.Jobs = append(h.Jobs, m)
	return nil
}

// enqueue adds the run's groups to their seconds (waitingsecond.go); again:
// also those an earlier run named in markers (only when every job of this
// run was read and recorded). A group whose markers name its own task (a
// run of a process without seconds' tasks made it) gets its own task
// again.
func (g *waitingJobsGroups) enqueue(ctx context.Context, w *Worker, again bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(g.tasks)) {
		h := g.tasks[id]
		if h.again && !again {
			continue
		}
		slices.SortFunc(h.Jobs, func(a, b task.Chunk) int { return strings.Compare(a.Job, b.Job) })
		body, err := json.Marshal(h)
		if err != nil {
			return fmt.Errorf("encode held task %s: %w", id, err)
		}
		if q, joined := task.JoinedQueue(h.queue); joined {
			err = w.joinSecond(ctx, id, q, h.Wake, body)
		} else {
			err = w.client.enqueueHeld(ctx, TypeWaitingJobs, id, h.queue, time.Unix(h.Wake, 0), body)
		}
		if err != nil {
			return err
		}
		if g.collapsed[id] {
			woken := w.client.wakeHeld(ctx, h.queue, id)
			w.log.Info("held jobs woken for a push collapsed before its marker was written", "task", id, "woken", woken)
		}
	}
	return nil
}

// wakeOnce has group id woken once enqueue has created it.
func (g *waitingJobsGroups) wakeOnce(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.collapsed == nil {
		g.collapsed = map[string]bool{}
	}
	g.collapsed[id] = true
}

// finish creates the tasks of g once its run's jobs are done (errs, one
// per job), an earlier run's only when no job failed but for good
// (SkipRetry). This run's own are created after a shutdown too (every
// member's marker names them: they are whole), so that a process without
// held jobs tasks taking the handed-back task, which refuses jobs whose
// markers name such a task, finds them waiting there.
func (g *waitingJobsGroups) finish(ctx context.Context, w *Worker, errs []error) error {
	again := ctx.Err() == nil && !slices.ContainsFunc(errs, func(err error) bool { return err != nil && !errors.Is(err, asynq.SkipRetry) })
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.RecordTimeout)
	defer cancel()
	return g.enqueue(ctx, w, again)
}

func (w *Worker) handleWaitingJobs(ctx context.Context, t *asynq.Task) error {
	return w.handle(ctx, t, w.waitingJobsTask)
}

// waitingJobsTask runs a hush:waiting-jobs task: one round trip marks the
// run and reads every member's cancellation (a re-run reads each member's
// states: waitingJobsStates), one per app books the fresh members whose slot
// the task does not carry, then each member goes on as a hush:held task's
// recipient (deliverChunk), side by side. A run that settles every member
// deletes its run mark. A task in a marked queue (a process without
// seconds' tasks re-ran a batch whose markers name the group) adds its
// group to its second instead, as a re-run of this version would.
func (w *Worker) waitingJobsTask(ctx context.Context, t *asynq.Task) error {
	var h waitingJobs
	if err := json.Unmarshal(t.Payload(), &h); err != nil {
		return fmt.Errorf("undecodable held jobs payload: %w: %w", err, asynq.SkipRetry)
	}
	if err := h.valid(); err != nil {
		return err
	}
	if marked, _ := asynq.GetQueueName(ctx); marked != "" {
		if q, joined := task.JoinedQueue(marked); joined {
			return w.joinSecond(ctx, h.ID, q, h.Wake, t.Payload())
		}
	}
	return w.runHeldJobs(ctx, h.ID, []*waitingJobs{&h})
}

// valid reports an error (SkipRetry) when h is not a group a run made.
func (h *waitingJobs) valid() error {
	if _, _, wake, ok := task.ParseWaitingJobsID(h.ID); !ok || wake != h.Wake || len(h.Jobs) == 0 {
		return fmt.Errorf("invalid held jobs payload (id %q, wake %d, %d jobs): %w", h.ID, h.Wake, len(h.Jobs), asynq.SkipRetry)
	}
	for i := range h.Jobs {
		if c := &h.Jobs[i]; c.Job == "" || len(c.Recipients) != 1 {
			return fmt.Errorf("invalid held jobs payload %s (job %q, %d recipients): %w", h.ID, c.Job, len(c.Recipients), asynq.SkipRetry)
		}
	}
	return nil
}

// runHeldJobs runs hush:waiting-jobs groups (valid ones) in task: a
// group's own task, or every group of one held queue and second
// (waitingsecond.go), their members side by side.
func (w *Worker) runHeldJobs(ctx context.Context, taskID string, groups []*waitingJobs) error {
	var cs []*task.Chunk
	for _, h := range groups {
		for i := range h.Jobs {
			c := &h.Jobs[i]
			c.From, c.Indices, c.Wake, c.Waits, c.Group = 0, []int{0}, h.Wake, true, h.ID
			cs = append(cs, c)
		}
	}
	w.logHeldRun(ctx, taskID, len(cs))
	sts, errs, err := w.store.waitingJobsStates(ctx, cs)
	if err != nil {
		return err
	}
	pres := w.bookHeldJobs(ctx, cs, sts, errs)
	var wg sync.WaitGroup
	for i, c := range cs {
		if errs[i] != nil {
			continue
		}
		wg.Go(func() { errs[i] = w.deliverChunk(ctx, c, sts[i], pres[i], nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			errs[i] = fmt.Errorf("job %s: %w", cs[i].Job, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Every member is settled (its job retired) or handed to its delivery
	// task. A later run of a group (a lost completion, or by hand) reads
	// settled members retired and does nothing; a group with a member
	// handed over must read its states again, so its mark stays (it
	// expires with the job records).
	handed := map[string]bool{}
	for i, st := range sts {
		handed[cs[i].Group] = handed[cs[i].Group] || st.handed
	}
	dctx := context.WithoutCancel(ctx)
	var unmark []string
	for _, h := range groups {
		if !handed[h.ID] {
			unmark = append(unmark, h.ID)
		}
	}
	if err := w.store.dropRunMarks(dctx, unmark); err != nil {
		w.log.Warn("deleting held tasks' run marks failed (they expire with the job records)", "groups", len(groups), "err", err)
	}
	return nil
}

// bookHeldJobs answers the bookings of the members of a hush:waiting-jobs
// task on its first run (fresh, not cancelled), nil for the others (their
// runs book, as a re-run does), in one booking per app (book): taken as
// found, without a round trip, when every member carries its slot
// (carriedSlot), else found in one round trip. The cancellation was read
// with the states, at st.readAt, so sendBy counts from there.
func (w *Worker) bookHeldJobs(ctx context.Context, cs []*task.Chunk, sts []*chunkStates, errs []error) []*booking {
	pres := make([]*booking, len(cs))
	byApp := map[string][]int{}
	for i, c := range cs {
		if errs[i] != nil || !sts[i].first || sts[i].cancelled || w.bypass[c.Priority] {
			continue
		}
		byApp[c.Content.App] = append(byApp[c.Content.App], i)
	}
	for name, at := range byApp {
		app, err := w.apps.Resolve(name)
		if err != nil {
			continue // each member fails with the reason (deliverChunk)
		}
		items := make([]bookItem, len(at))
		found := make([]int64, len(at))
		for k, i := range at {
			items[k] = bookItemsOf(cs[i], []int{0})[0]
			found[k] = carriedSlot(cs[i], sts[i], 0)
		}
		b := w.book(ctx, app, items, bookHow{found: found})
		if len(b.res) != len(items) {
			continue // each member books on its own
		}
		for k, i := range at {
			p := b.part(k)
			p.asked, p.permits = sts[i].readAt, &wavePermits{sem: w.sends}
			pres[i] = p
		}
	}
	return pres
}
