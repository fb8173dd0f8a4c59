package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/worker/internal/task"
)

// Held jobs of many runs wake together: the hush:waiting-jobs groups
// (waitingjobs.go) that runs of different batch tasks hold back to the same
// held queue and second share one hush:waiting-second task, instead of a
// task each. A group holds the held jobs of one batch run, often only a
// few, and a task's Asynq lifecycle (enqueue, forward, dequeue, done)
// costs Redis more than a push's own work, so under pressure a task per
// group would be most of what a held push costs; a second's task carries
// every group of that second.
//
// The groups wait in Redis, not in the task's payload (together.lua): a
// hash per held queue and second, one field per group, its value the
// group as its own task's payload would hold it. A group is still made
// whole by one run and owned through its members' markers, as before:
//   - A run writes its held jobs' markers first, naming the group and its
//     queue with task.TogetherSuffix, then adds the group (join), then makes
//     sure the second's task exists (Asynq refuses a second task of its
//     id, so any run may try). Only then does its batch task end.
//   - The second's task, at its second, takes the hash in one script call
//     that leaves a mark: a group that joins after it is refused and gets
//     a task of its own (a run late for its second, or a re-run). A group
//     is thus either in what the task took or in a task of its own, never
//     both, and never in neither once its run ended.
//   - A re-run of a batch adds its earlier run's groups again (the field
//     is set only when missing: the first run's is whole and carries the
//     slots), under the same conditions as it created them again before.
//     A group the task took already is left to it.
//   - Waking a group early (a cancellation or a collapse, which must not
//     send the whole second's jobs to their delivery tasks) moves it from
//     the hash to a woken hash and makes its own task to run now; the
//     second's task makes sure each woken group's task exists, in case
//     the waker died in between.
//   - A run of the second's task that fails is retried, and takes the
//     same groups again: each group's own run mark (store.HeldRunKey) tells its
//     members' re-run from a first run, as for a group's own task.
//
// The marker's queue carries task.TogetherSuffix so that a process without
// seconds' tasks, re-running a batch task a process with them left,
// cannot run a group the second's task runs too: it creates the group's
// own task in that marked queue. A process with seconds' tasks serves a
// marked queue it finds at its start (task.ServedHeldQueues), and a task there
// adds its group to its second, as this version's re-run would: the group
// runs once, whether its run was cut before or after it joined.

// togetherDoneTTL is how long a second's task's mark outlives its run
// (refusing groups that join later: they get a task of their own). A
// group joining after it is gone makes the second's task again, which
// runs it then.
const togetherDoneTTL = time.Hour

// waitingSecond is a hush:waiting-second task's payload.
type waitingSecond struct {
	Queue string `json:"queue"`
	Wake  int64  `json:"wake"`
}

// seconds remembers the hush:waiting-second tasks a process made sure of.
// A group that joins its second finds it not taken yet, or taken more
// than togetherDoneTTL ago (its mark gone); so a task this process made
// is still there while its second is younger than that.
type seconds struct {
	mu   sync.Mutex
	made map[string]int64 // task id: its second

	clock func() time.Time // nil: time.Now (Options.Clock)
}

// secondFresh reports whether a task of second wake made at some point
// is still there for a group that joins now.
func secondFresh(wake int64, now time.Time) bool {
	return now.Unix() < wake+int64((togetherDoneTTL-time.Minute)/time.Second)
}

func (s *seconds) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	wake, ok := s.made[id]
	return ok && secondFresh(wake, task.NowOf(s.clock))
}

func (s *seconds) add(id string, wake int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.made == nil {
		s.made = map[string]int64{}
	}
	if len(s.made) >= 1024 {
		past := task.NowOf(s.clock).Unix() - 60 // no longer joined but by late runs
		maps.DeleteFunc(s.made, func(_ string, w int64) bool { return w < past })
	}
	s.made[id] = wake
}

// joinSecond adds group id (its payload body) to the second wake of held
// queue q, and makes sure the second's task exists; a group the second's
// task can no longer take gets a task of its own.
func (w *Worker) joinSecond(ctx context.Context, id, q string, wake int64, body []byte) error {
	r, err := w.store.secondJoin(ctx, id, q, wake, body)
	if err != nil {
		return err
	}
	switch r {
	case 1:
		return w.ensureSecond(ctx, q, wake)
	case 2:
		return nil // taken by the second's task: it runs the group
	default:
		return w.client.enqueueHeld(ctx, TypeWaitingJobs, id, q, time.Unix(wake, 0), body)
	}
}

// ensureSecond creates the hush:waiting-second task of held queue q and
// second wake unless this process did, or it exists.
func (w *Worker) ensureSecond(ctx context.Context, q string, wake int64) error {
	id := task.WaitingSecondID(q, wake)
	if w.seconds.has(id) {
		return nil
	}
	body, err := json.Marshal(waitingSecond{Queue: q, Wake: wake})
	if err != nil {
		return err
	}
	if err := w.client.enqueueHeld(ctx, TypeWaitingSecond, id, q, time.Unix(wake, 0), body); err != nil {
		return err
	}
	w.seconds.add(id, wake)
	return nil
}

// enqueueHeld creates held task id of type typ (payload body) in held
// queue q, to run at at; one that exists is left as it is.
func (c *Client) enqueueHeld(ctx context.Context, typ, id, q string, at time.Time, body []byte) error {
	_, err := c.aq.EnqueueContext(ctx, asynq.NewTask(typ, body),
		asynq.TaskID(id), asynq.Queue(q), asynq.ProcessAt(at),
		asynq.MaxRetry(jobMaxRetry), asynq.Timeout(deliveryTimeout))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue held task %s: %w", id, err)
	}
	return nil
}

// wakeHeld runs now the held task a marker names (queue q as marked,
// id): a task of its own, or a group waiting for its second's task, which
// is taken out of that second (pluck) and given a task of its own to run
// now. It reports whether something was woken: a group its second's task
// took already is left to that task.
func (c *Client) wakeHeld(ctx context.Context, q, id string) bool {
	q, joined := task.JoinedQueue(q)
	if c.insp.RunTask(q, id) == nil {
		return true
	}
	_, _, wake, ok := task.ParseWaitingJobsID(id)
	if !joined || !ok {
		return false
	}
	body, err := c.store.secondPluck(ctx, q, wake, id)
	if err != nil {
		return false // taken, or not waiting there (redis.Nil), or Redis failed
	}
	// The group is in the woken hash now: its second's id makes sure
	// of this id too, should this process die first.
	return c.enqueueHeld(ctx, TypeWaitingJobs, id, q, c.now(), []byte(body)) == nil
}

func (w *Worker) handleWaitingSecond(ctx context.Context, t *asynq.Task) error {
	return w.handle(ctx, t, w.waitingSecondTask)
}

// waitingSecondTask runs a hush:waiting-second task: takes its second's
// groups (a re-run takes the same ones), makes sure each woken group's own
// task exists, runs the groups' members side by side (runHeldJobs), and
// once that ends without an error marks the second done.
func (w *Worker) waitingSecondTask(ctx context.Context, t *asynq.Task) error {
	var s waitingSecond
	if err := json.Unmarshal(t.Payload(), &s); err != nil || s.Queue == "" || s.Wake <= 0 {
		return fmt.Errorf("invalid held second payload %q (%v): %w", t.Payload(), err, asynq.SkipRetry)
	}
	taken, woken, from, err := w.store.secondTake(ctx, s.Queue, s.Wake)
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(woken)) {
		if err := w.client.enqueueHeld(ctx, TypeWaitingJobs, id, s.Queue, w.now(), []byte(woken[id])); err != nil {
			return err
		}
	}
	var groups []*waitingJobs
	var bad []error
	for _, id := range slices.Sorted(maps.Keys(taken)) {
		h := &waitingJobs{}
		err := json.Unmarshal([]byte(taken[id]), h)
		if err == nil && h.ID != id {
			err = fmt.Errorf("names itself %s", h.ID)
		}
		if err == nil {
			err = h.valid()
		}
		if err != nil {
			// Not a group a run wrote: archived with the reason, once the
			// others ran.
			bad = append(bad, fmt.Errorf("held jobs %s in %s: %w: %w", id, from, err, asynq.SkipRetry))
			continue
		}
		groups = append(groups, h)
	}
	if len(groups) > 0 {
		if err := w.runHeldJobs(ctx, task.WaitingSecondID(s.Queue, s.Wake), groups); err != nil {
			return err
		}
	}
	if err := errors.Join(bad...); err != nil {
		return err
	}
	dctx := context.WithoutCancel(ctx)
	if err := w.store.secondDone(dctx, s.Queue, s.Wake); err != nil {
		// A later run takes the same groups and finds them settled.
		w.log.Warn("marking a held second done failed", "queue", s.Queue, "second", s.Wake, "err", err)
	}
	return nil
}
