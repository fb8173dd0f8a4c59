package worker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker/internal/task"
)

// "What happened to this push?": a job's recipients and devices as its
// records hold them (Client.Recipients, GET
// /v1/notifications/{id}/recipients). Nothing is written for it: a page is
// read from the job's three keys (store.go, doc.go), which say per
// recipient index its final state (:r), per device its state when it is
// delivered or token_invalid (:dev "<i>/<d>"), the attempts made
// (:dev "<i>/a"), and for a held recipient the task that owns it (the job
// record's "h:<i>", task.HeldMark). The records name no user or device token,
// so neither is answered. The recipients that ended other than delivered
// are kept apart too, with a failure's reason (:x, store.ExceptKey).
//
// What is answerable when: while the job is live (accepted and not
// finished) every recipient, as far as its deliveries have come; once the
// job finishes (fanned out, every recipient final) its records are retired
// at once (worker/internal/store/done.go) and, for HUSH_JOB_RETENTION, the counts per state
// remain and the exceptions: the page then says Retired and lists every
// recipient's final state (delivered unless an exception says otherwise),
// without devices or attempts. A job finished by a build that kept no
// exceptions (their number falls short of the counts) lists no one.

// Bounds of a read of a job's recipients.
const (
	// DefaultRecipientsLimit is the recipients a page reads when the query
	// names no limit.
	DefaultRecipientsLimit = 100
	// MaxRecipientsLimit is the most recipients one page reads.
	MaxRecipientsLimit = 1000
)

// Recipient states besides the final ones (FinalStates) that a page
// reports and a query may select.
const (
	// RecipientHeld: no final state; its delivery waits for the slot the
	// limiter booked (RecipientState.Held says where).
	RecipientHeld = "held"
	// RecipientPending: no final state and not held: not yet delivered,
	// or being retried.
	RecipientPending = "pending"
)

// RecipientStates are the states RecipientsQuery.State may name: the
// final ones, then RecipientHeld and RecipientPending.
func RecipientStates() []string {
	return append(FinalStates(), RecipientHeld, RecipientPending)
}

// RecipientsQuery selects a page of a job's recipients, by index.
type RecipientsQuery struct {
	// State, when set, is the one state listed (RecipientStates).
	State string
	// Cursor is an earlier page's Next: the first recipient index this
	// page reads ("": 0).
	Cursor string
	// Limit is how many recipients (by index) the page reads, matching
	// State or not (0: DefaultRecipientsLimit; at most
	// MaxRecipientsLimit).
	Limit int
}

// check reports the query's first problem and returns its first index.
func (q *RecipientsQuery) check() (int, error) {
	if q.State != "" && !slices.Contains(RecipientStates(), q.State) {
		return 0, &QueryError{"state", "want one of " + strings.Join(RecipientStates(), ", ") + ", got " + strconv.Quote(q.State)}
	}
	if q.Limit < 0 || q.Limit > MaxRecipientsLimit {
		return 0, &QueryError{"limit", fmt.Sprintf("want 1 to %d, got %d", MaxRecipientsLimit, q.Limit)}
	}
	if q.Limit == 0 {
		q.Limit = DefaultRecipientsLimit
	}
	if q.Cursor == "" {
		return 0, nil
	}
	from, err := strconv.Atoi(q.Cursor)
	if err != nil || from < 0 || strconv.Itoa(from) != q.Cursor {
		return 0, &QueryError{"cursor", fmt.Sprintf("want the next_cursor of an earlier page (such as 100), got %.40q", q.Cursor)}
	}
	return from, nil
}

// RecipientsPage is one page of a job's recipients (package wire's, which
// the Go client decodes), RecipientState one recipient of it, DeviceState
// one of its devices and HeldState where a held one waits.
type (
	RecipientsPage = wire.RecipientsPage
	RecipientState = wire.RecipientState
	DeviceState    = wire.DeviceState
	HeldState      = wire.HeldState
)

// Recipients reads a page of job id's recipients: those of indices
// [cursor, cursor+limit) in State (any, when empty). It reads at most
// MaxRecipientsLimit recipients in one round trip. A *QueryError names a
// bad field; an unknown job wraps ErrNotFound.
func (c *Client) Recipients(ctx context.Context, id string, q RecipientsQuery) (RecipientsPage, error) {
	return c.store.recipients(ctx, id, q)
}

// splitExcept reads a value of the job's exceptions (store.ExceptKey): the
// final state, and a failure's reason.
func splitExcept(v string) (state, reason string) {
	state, reason, _ = strings.Cut(v, "|")
	return state, reason
}

// recipientOf is recipient i of job id from its final state, its held
// marker and its device fields (payload.MaxDevices device states, then
// its attempts).
func recipientOf(id string, i int, final, mark string, dev []string) RecipientState {
	r := RecipientState{Index: i, State: final}
	for d, st := range dev[:payload.MaxDevices] {
		if st != "" {
			r.Devices = append(r.Devices, DeviceState{Device: d, State: st})
		}
	}
	r.Attempts, _ = strconv.Atoi(dev[payload.MaxDevices])
	switch {
	case final != "":
	case mark != "":
		r.State = RecipientHeld
		queue, owner := task.ParseHeldMark(mark)
		h := &HeldState{Queue: queue, Task: owner}
		if owner == "" {
			h.Task = task.DeliveryID(id, i)
		} else if _, _, wake, _, ok := task.ParseHeldID(owner); ok {
			h.WakesAt = time.Unix(wake, 0).UTC()
		}
		r.Held = h
	default:
		r.State = RecipientPending
	}
	return r
}
