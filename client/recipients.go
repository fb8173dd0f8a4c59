package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// RecipientsQuery selects a page of a job's recipients (Recipients).
type RecipientsQuery struct {
	// State, when set, lists only recipients in it: a final state
	// (delivered, expired, token_invalid, failed, throttle_full,
	// collapsed, cancelled), "held" or "pending".
	State string
	// Cursor is an earlier page's NextCursor ("": the first recipient).
	Cursor string
	// Limit is how many recipients, by index, the page reads (0: the
	// server's 100; at most 1,000).
	Limit int
}

// RecipientsPage is one page of a job's recipients, the answer of GET
// /v1/notifications/{id}/recipients (docs/api.md).
type RecipientsPage struct {
	ID  string `json:"id"`
	App string `json:"app,omitempty"`
	// State is the job's (JobStatus.State), Recipients its recipient
	// count.
	State      string `json:"state"`
	Recipients int    `json:"recipients"`
	// Retired: the job finished and its per-recipient records are gone;
	// Counts is what remains of them, and Items is empty.
	Retired bool           `json:"retired"`
	Counts  map[string]int `json:"counts,omitempty"`
	// Items are the recipients the page read that match the query.
	Items []RecipientOutcome `json:"items"`
	// NextCursor, when set, is the Cursor of the next page. A filtered
	// page may be short, or empty, and still have one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// RecipientOutcome is what a job's records say of one recipient.
type RecipientOutcome struct {
	// Index is the recipient's place in the submission's Recipients.
	Index int `json:"index"`
	// State is its final state, "held" or "pending".
	State string `json:"state"`
	// Devices are its devices with a recorded state (delivered,
	// token_invalid), by their place in the recipient's Devices.
	Devices []DeviceOutcome `json:"devices,omitempty"`
	// Attempts are the delivery attempts made before the current one.
	Attempts int `json:"attempts,omitempty"`
	// Held, for a held recipient, is the task that will send it.
	Held *HeldRecipient `json:"held,omitempty"`
}

// DeviceOutcome is one device's recorded state.
type DeviceOutcome struct {
	Device int    `json:"device"`
	State  string `json:"state"`
}

// HeldRecipient is where a held recipient's delivery waits: the Asynq
// queue and task that will send it, for a hush:held task when it wakes
// (about a second before the earliest of its recipients' slots), and the
// slot the limiter booked with the rule that holds it there ("10/1m",
// "marketing 2/1d", "quiet 22:00-08:00", "send_at"), for the first 20
// held recipients of a page whose booking the server found.
type HeldRecipient struct {
	Queue   string    `json:"queue"`
	Task    string    `json:"task"`
	WakesAt time.Time `json:"wakes_at,omitzero"`
	Slot    time.Time `json:"slot,omitzero"`
	HeldBy  string    `json:"held_by,omitempty"`
}

// recipientsFields are the fields a page of recipients always has.
var recipientsFields = []string{"id", "state", "recipients", "retired", "items"}

// Recipients reads a page of a job's recipients (GET
// /v1/notifications/{id}/recipients): each one's state, its devices'
// recorded states and, when held, the task that will send it. Ask again
// with Cursor set to the page's NextCursor until it is empty. Once the job
// has finished the page is Retired: only its Counts remain. A bad query is
// a *Error with Status 400 naming the parameter.
func (c *Client) Recipients(ctx context.Context, id string, q RecipientsQuery) (RecipientsPage, error) {
	if id == "" {
		return RecipientsPage{}, errors.New("client: Recipients needs a job id")
	}
	limit := ""
	if q.Limit != 0 {
		limit = strconv.Itoa(q.Limit)
	}
	var p RecipientsPage
	err := c.call(ctx, http.MethodGet, "/v1/notifications/"+url.PathEscape(id)+"/recipients"+
		query("state", q.State, "cursor", q.Cursor, "limit", limit), nil, &p, recipientsFields...)
	return p, err
}
