package wire

import "time"

// Event is one event (docs/events.md): an entry of the hush:events stream
// (its field "event"), one webhook POST's body and one item of GET
// /v1/events. Fields a type does not use are left out.
type Event struct {
	// ID names the outcome the event reports, the same each time hush
	// emits it again (after a re-run or a lost reply), so a receiver
	// de-duplicates by it; it is also the webhook-id header.
	ID       string `json:"id"`
	Type     string `json:"type"`
	Platform string `json:"platform,omitempty"`
	// Token is the whole device token, so a backend can remove it; logs
	// never show more than its ends.
	Token  string `json:"token,omitempty"`
	UserID string `json:"user_id,omitempty"`
	Reason string `json:"reason,omitempty"`
	Job    string `json:"job,omitempty"`
	// App is the app of the event's job.
	App string `json:"app,omitempty"`
	// ReplacedBy, on a dropped event of reason collapsed, is the id of the
	// job whose push for the same user and collapse key took this one's
	// place; empty when hush no longer knows it.
	ReplacedBy string    `json:"replaced_by,omitempty"`
	At         time.Time `json:"at"`
}

// EventsPage is one page of GET /v1/events (schema EventsPage).
type EventsPage struct {
	// Events are newest first, or oldest first when the request gave
	// after.
	Events []EventEntry `json:"events"`
	// Next continues the listing in the same direction: as before, empty
	// once the oldest event was read; as after (when the request gave
	// after), always set, so that asking again with it later reads the
	// events written since. A page may hold fewer events than asked, even
	// none, and still have a Next: each request reads a bounded part of
	// the stream.
	Next string `json:"next,omitempty"`
}

// EventEntry is one event with its place in the stream.
type EventEntry struct {
	// Cursor is the stream entry's id, for before or after.
	Cursor string `json:"cursor"`
	Event  Event  `json:"event"`
}

// WebhookStatus is the webhook's state (GET /v1/webhook, schema
// WebhookStatus): whether the endpoint is disabled and why, and how many
// events wait for a retry.
type WebhookStatus struct {
	Disabled *WebhookDisabled `json:"disabled,omitempty"`
	Retrying int64            `json:"retrying"`
}

// WebhookDisabled says why and since when the endpoint is disabled.
type WebhookDisabled struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}
