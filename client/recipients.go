package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hushpush/hush/wire"
)

// RecipientsQuery selects a page of a job's recipients (Recipients).
type RecipientsQuery struct {
	// State, when set, lists only recipients in it: a final state
	// (delivered, expired, token_invalid, failed, throttle_full,
	// collapsed, cancelled, opted_out), "held" or "pending".
	State string
	// Cursor is an earlier page's NextCursor ("": the first recipient).
	Cursor string
	// Limit is how many recipients, by index, the page reads (0: the
	// server's 100; at most 1,000).
	Limit int
}

// RecipientsPage is one page of a job's recipients, the answer of GET
// /v1/notifications/{id}/recipients (docs/api.md); RecipientState is one
// recipient of it, DeviceState one of its devices and HeldState where a
// held one waits.
type (
	RecipientsPage = wire.RecipientsPage
	RecipientState = wire.RecipientState
	DeviceState    = wire.DeviceState
	HeldState      = wire.HeldState
)

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
