package task

import (
	"errors"
	"fmt"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/wire"
)

// DefaultApp is the name of the app of the single-app configuration (the
// HUSH_APNS_*, HUSH_FCM_* and HUSH_THROTTLE_* keys), and of a Worker built
// from Options.Limiter and Options.Senders.
const DefaultApp = "default"

// ChunkSize is the most recipients one chunk delivers: one limiter round
// trip, one read and one write of the job's records for all of them.
const ChunkSize = 100

// Chunk is the payload of a chunk task (and what a job task delivers
// itself): recipients [From, From+len(Recipients)) of a job. A hush:held
// task's payload is a chunk too: Indices names its recipients (held back
// by the chunk starting at From) and Wake the second it wakes at.
type Chunk struct {
	Job     string `json:"job"`
	From    int    `json:"from"`
	Indices []int  `json:"indices,omitempty"`
	Wake    int64  `json:"wake,omitempty"`
	// Waits: a held task in a held queue, id "wait:..." (HeldID).
	Waits bool `json:"waits,omitempty"`
	// Slot is a hush:waiting-jobs member's booked instant on the clock of
	// the process that held it back; zero when not known.
	// Kept for processes that read it instead of Slots during a rolling
	// upgrade (CHANGELOG.md); runs here read Slots.
	Slot time.Time `json:"slot,omitzero"`
	// Slots are a hush:held task's recipients' slots, or a
	// hush:waiting-jobs member's, beside Indices, in Unix ms on the
	// limiter's clock (their reservations' At); 0 where not known (a
	// task made by a process that does not set them has none). The task's first run takes them as
	// found instead of looking its bookings up (heldSlots, bookHeldJobs).
	Slots []int64 `json:"slots,omitempty"`
	// Booked is the limiter's instant (Unix ms, its clock) of the earliest
	// booking whose slot Slots carries; 0 when not known (a task
	// made by a process that does not set it). A first run booked before the reset mark looks its
	// bookings up.
	Booked     int64               `json:"booked,omitempty"`
	Recipients []payload.Recipient `json:"recipients"`
	Content    payload.Content     `json:"content"`
	Priority   payload.Priority    `json:"priority"`
	// Deadline is when the deliveries expire; zero: never.
	Deadline   time.Time `json:"deadline,omitzero"`
	AcceptedAt time.Time `json:"accepted_at"`
	// Queue is a held task's queue, while its run creates it.
	Queue string `json:"-"`
	// Group is the id of the hush:waiting-jobs task c is a member of
	// while it runs.
	Group string `json:"-"`
}

// Name is the chunk's task id.
func (c *Chunk) Name() string {
	if c.Group != "" {
		return c.Group
	}
	if c.Held() {
		return HeldID(c.Job, c.From/ChunkSize, c.Wake, c.Waits)
	}
	return ChunkID(c.Job, c.From/ChunkSize)
}

// Held reports whether c is a hush:held task's: recipients a chunk held
// back, woken together.
func (c *Chunk) Held() bool { return c.Wake != 0 }

// About names c's i-th recipient for the event of its final state: its
// job, app, user and the time at.
func (c *Chunk) About(i int, at time.Time) wire.Event {
	return wire.Event{Job: c.Job, App: AppOf(&c.Content), UserID: c.Recipients[i].UserID, At: at.UTC()}
}

// Index is the job's recipient index of c's i-th recipient.
func (c *Chunk) Index(i int) int {
	if c.Indices != nil {
		return c.Indices[i]
	}
	return c.From + i
}

// Delivery is the chunk's i-th recipient as a delivery.
func (c *Chunk) Delivery(i int) Delivery {
	r := c.Recipients[i]
	return Delivery{
		Job: c.Job, Index: c.Index(i), UserID: r.UserID, Timezone: r.Timezone, Devices: r.Devices,
		Content: c.Content, Priority: c.Priority, Deadline: c.Deadline, AcceptedAt: c.AcceptedAt,
	}
}

// TTL is the TTL of its job's records.
func (c *Chunk) TTL() time.Duration {
	return TTLFor(RetainFrom(c.AcceptedAt, &c.Content), c.Deadline)
}

// Expired reports whether the chunk's deliveries are past their deadline at
// t.
func (c *Chunk) Expired(t time.Time) bool { return !c.Deadline.IsZero() && !t.Before(c.Deadline) }

// ChunkOf is job's chunk of recipients starting at index from.
func ChunkOf(job *payload.Job, from int) *Chunk {
	return &Chunk{
		Job: job.ID, From: from, Recipients: job.Recipients[from:min(from+ChunkSize, len(job.Recipients))],
		Content: job.Content, Priority: job.Priority.Effective(), Deadline: job.Deadline(), AcceptedAt: job.AcceptedAt,
	}
}

// Delivery is the payload of a hush:delivery task: one recipient of a job,
// readable JSON for asynqmon.
type Delivery struct {
	Job    string `json:"job"`
	Index  int    `json:"index"`
	UserID string `json:"user_id"`
	// Timezone is the recipient's time zone for the quiet hours (empty:
	// the worker's default).
	Timezone string           `json:"timezone,omitempty"`
	Devices  []payload.Device `json:"devices"`
	Content  payload.Content  `json:"content"`
	Priority payload.Priority `json:"priority"`
	// Deadline is when the delivery expires; zero: never.
	Deadline   time.Time `json:"deadline,omitzero"`
	AcceptedAt time.Time `json:"accepted_at"`
	// Failed, set by a chunk, is the reason of a failure that ends the
	// delivery: the task records it and is archived with it.
	Failed string `json:"failed,omitempty"`
	// Unsettled, set by a chunk, says the run handing the recipient over
	// found its first booking made by an earlier run that may have ended
	// during its provider call : the first attempt is unsettled.
	Unsettled bool `json:"unsettled,omitempty"`
}

// AppName is the app of the delivery's job as it names it, for metrics,
// events and logs.
func (d *Delivery) AppName() string { return AppOf(&d.Content) }

// About names d for the event of its final state: its job, app, user and
// the time at, with reason for a failure.
func (d *Delivery) About(at time.Time, reason string) wire.Event {
	return wire.Event{Job: d.Job, App: d.AppName(), UserID: d.UserID, Reason: reason, At: at.UTC()}
}

// AppOf is the app a job's content names (DefaultApp when empty: a
// job accepted before apps, or by a standalone Client).
func AppOf(c *payload.Content) string {
	if c.App == "" {
		return DefaultApp
	}
	return c.App
}

// Member is the delivery's first attempt's limiter booking id (logs).
func (d *Delivery) Member() string { return Member(d.Job, d.Index, 0) }

// Check refuses a payload no run can deliver.
func (d *Delivery) Check() error {
	switch {
	case d.Job == "":
		return errors.New("no job id")
	case d.Index < 0:
		return fmt.Errorf("negative recipient index %d", d.Index)
	case d.UserID == "":
		return errors.New("no user_id")
	case len(d.Devices) == 0:
		return errors.New("no devices")
	}
	return nil
}

// RetryUntil is the latest instant a retry of d may run.
func (d *Delivery) RetryUntil() time.Time {
	return RetryUntil(RetainFrom(d.AcceptedAt, &d.Content), d.Deadline)
}

// TTL is the TTL of its job's records.
func (d *Delivery) TTL() time.Duration {
	return TTLFor(RetainFrom(d.AcceptedAt, &d.Content), d.Deadline)
}

// Expired reports whether d is past its deadline at at.
func (d *Delivery) Expired(at time.Time) bool {
	return !d.Deadline.IsZero() && !at.Before(d.Deadline)
}
