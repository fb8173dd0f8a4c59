package wire

import "time"

// RecipientsPage is one page of a job's recipients: the answer of GET
// /v1/notifications/{id}/recipients (docs/api.md).
type RecipientsPage struct {
	ID string `json:"id"`
	// App is the job's app ("" for a record without one).
	App string `json:"app,omitempty"`
	// State is the job's (JobStatus.State), Recipients its recipient
	// count.
	State      string `json:"state"`
	Recipients int    `json:"recipients"`
	// Retired: the job finished and its per-recipient records are gone;
	// Counts (then set) is what remains of them, and Items list each
	// recipient's final state and a failure's reason, without devices or
	// attempts (empty when the job was finished by a build of hush that
	// kept no per-recipient exceptions).
	Retired bool           `json:"retired"`
	Counts  map[string]int `json:"counts,omitempty"`
	// Items are the recipients read that match the query, by index.
	Items []RecipientState `json:"items"`
	// Next is the cursor of the next page; "" after the last recipient.
	// A page with a State reads Limit recipients and lists those that
	// match, so it may be short, or empty, with a Next.
	Next string `json:"next_cursor,omitempty"`
}

// RecipientState is what a job's records say of one recipient.
type RecipientState struct {
	Index int `json:"index"`
	// State is its final state, "held" or "pending".
	State string `json:"state"`
	// Reason is a failed recipient's reason (at most 256 bytes).
	Reason string `json:"reason,omitempty"`
	// Devices are its devices with a recorded state (delivered,
	// token_invalid), by index in the recipient's devices. A device that
	// is not listed has not been answered, or failed, or was never sent
	// to.
	Devices []DeviceState `json:"devices,omitempty"`
	// Attempts are the delivery attempts made before the current one.
	Attempts int `json:"attempts,omitempty"`
	// Held, for a held recipient, is the task that owns its delivery.
	Held *HeldState `json:"held,omitempty"`
}

// DeviceState is one device's recorded state.
type DeviceState struct {
	Device int    `json:"device"`
	State  string `json:"state"`
}

// HeldState is where a held recipient's delivery waits.
type HeldState struct {
	// Queue and Task are the Asynq queue and task id that will send it:
	// a hush:held task ("wait:<job>/<chunk>/<second>") or the recipient's
	// own hush:delivery task ("delivery:<job>/<index>").
	Queue string `json:"queue"`
	Task  string `json:"task"`
	// WakesAt is when a hush:held task wakes, about a second before the
	// earliest of its recipients' slots; zero for a hush:delivery task.
	WakesAt time.Time `json:"wakes_at,omitzero"`
	// Slot is the instant the limiter booked for the delivery, and
	// HeldBy the rule that holds it there (throttle.Entry.HeldBy: "10/1m",
	// "min-gap 3s", "marketing 2/1d", quiet hours, "send_at"), when
	// the server found the booking; zero and "" otherwise.
	Slot   time.Time `json:"slot,omitzero"`
	HeldBy string    `json:"held_by,omitempty"`
}
