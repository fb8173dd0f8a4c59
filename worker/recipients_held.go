package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/task"
)

// MaxHeldLookups is the most held recipients of one page whose booking
// ExplainHeld looks up: each costs a read of its task (shared by the
// recipients of one task) and of its user's limiter state, so a page's
// cost stays bounded. Ask with state=held and a limit of at most this to
// have every one looked up.
const MaxHeldLookups = 20

// ExplainHeld adds to the first MaxHeldLookups held recipients of p, of
// the Worker's app p.App, their booked slot and the rule that holds it,
// as the limiter reports them (throttle.Entry.HeldBy, as `hush throttle
// status` shows them). The job records name neither the user nor the
// booking: the user is read from the task that holds the recipient, the
// booking from that user's limiter state, whose entry of the delivery's
// member (task.Member) has both. A recipient whose task or booking is gone
// (its slot came, or the limiter was reset) keeps what the records said.
// It returns how many recipients it looked up; an error is the first
// read that failed, with the others still looked up.
func (w *Worker) ExplainHeld(ctx context.Context, p *RecipientsPage) (int, error) {
	app, err := w.App(p.App)
	if err != nil {
		return 0, err
	}
	admin, ok := app.Limiter.(ThrottleAdmin)
	if !ok {
		return 0, nil
	}
	tasks := map[string]map[int]string{} // task id -> recipient index -> user
	users := map[string]throttle.Status{}
	var errs []error
	n := 0
	for k := range p.Items {
		r := &p.Items[k]
		if r.Held == nil || n == MaxHeldLookups {
			continue
		}
		n++
		byIndex, seen := tasks[r.Held.Task]
		if !seen {
			byIndex, err = w.heldUsers(ctx, r.Held.Queue, r.Held.Task)
			if err != nil {
				errs = append(errs, err)
			}
			tasks[r.Held.Task] = byIndex
		}
		user, ok := byIndex[r.Index]
		if !ok {
			continue
		}
		st, seen := users[user]
		if !seen {
			if st, err = admin.Status(ctx, user, w.DefaultLocation()); err != nil {
				errs = append(errs, fmt.Errorf("limiter state of a held recipient's user: %w", err))
			}
			users[user] = st
		}
		if e, ok := bookingOf(st, task.Member(p.ID, r.Index, r.Attempts)); ok {
			r.Held.Slot, r.Held.HeldBy = e.At.UTC(), e.HeldBy
		}
	}
	return n, errors.Join(errs...)
}

// bookingOf is member's entry in st: the global rules' or a category's.
func bookingOf(st throttle.Status, member string) (throttle.Entry, bool) {
	for _, e := range st.Entries {
		if e.Member == member {
			return e, true
		}
	}
	for _, c := range st.Categories {
		for _, e := range c.Entries {
			if e.Member == member {
				return e, true
			}
		}
	}
	return throttle.Entry{}, false
}

// heldUsers reads the Asynq task id in queue and returns the user of each
// of its recipients, by recipient index: a hush:held task's (a chunk), a
// hush:waiting-jobs task's (jobs' chunks; a job's recipients are its only
// one) or a hush:delivery task's. A task that is gone has none.
func (w *Worker) heldUsers(ctx context.Context, queue, id string) (map[int]string, error) {
	info, err := w.insp.GetTaskInfo(queue, id)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read held task %s: %w", id, err)
	}
	_ = ctx // the Inspector takes no context
	out := map[int]string{}
	switch {
	case strings.HasPrefix(id, "delivery:"):
		var d task.Delivery
		if json.Unmarshal(info.Payload, &d) == nil {
			out[d.Index] = d.UserID
		}
	case strings.HasPrefix(id, task.WaitingJobsPrefix):
		var h waitingJobs
		if json.Unmarshal(info.Payload, &h) == nil {
			for _, c := range h.Jobs {
				addUsers(out, &c)
			}
		}
	default:
		var c task.Chunk
		if json.Unmarshal(info.Payload, &c) == nil {
			addUsers(out, &c)
		}
	}
	return out, nil
}

// addUsers puts c's recipients' users into out by index.
func addUsers(out map[int]string, c *task.Chunk) {
	for i, r := range c.Recipients {
		if c.Indices == nil || i < len(c.Indices) {
			out[c.Index(i)] = r.UserID
		}
	}
}
