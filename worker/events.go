package worker

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker/internal/task"
)

// EventsStream is the Redis stream events are appended to.
const EventsStream = "hush:events"

// Event types: one per device whose token is dead, and one per recipient's
// final state, but token_invalid, whose events are its devices'.
const (
	EventDelivered    = "delivered"
	EventFailed       = "failed"
	EventTokenInvalid = "token_invalid"
	EventDropped      = "dropped"
)

// eventTypes are the Event* types, in the order docs/events.md lists them.
var eventTypes = []string{EventDelivered, EventFailed, EventTokenInvalid, EventDropped}

// IsEventType reports whether t is an event type hush emits.
func IsEventType(t string) bool { return slices.Contains(eventTypes, t) }

// EventTypesText lists the event types for an error message.
func EventTypesText() string { return strings.Join(eventTypes, ", ") }

// Event is one entry of hush:events (field "event", JSON), one webhook
// POST body and one item of GET /v1/events: package wire's, which the Go
// client decodes.
type Event = wire.Event

// events writes events to the stream, which the webhook (webhookDelivery)
// reads.
type events struct {
	rdb    redis.UniversalClient
	maxLen int64
	m      *metrics
}

// finalEvent is the event of a recipient's final state, about naming the
// job, app, user, time and, for a failure, the reason: delivered, failed,
// or dropped with the state as its reason (expired, throttle_full,
// collapsed, cancelled, opted_out). A recipient ending token_invalid has none: its
// devices' events report it.
func finalEvent(state string, about Event) (Event, bool) {
	switch state {
	case task.TokenInvalid:
		return Event{}, false
	case task.Delivered:
		about.Type, about.Reason = EventDelivered, ""
	case task.Failed:
		about.Type = EventFailed
		if about.Reason == "" {
			about.Reason = "failed"
		}
		about.Reason = clip(about.Reason, maxEventReason)
	default:
		if mutant("eventCancelledLost") && state == task.Cancelled {
			return Event{}, false
		}
		about.Type, about.Reason = EventDropped, state
	}
	if state != task.Collapsed {
		about.ReplacedBy = ""
	}
	return about, true
}

// maxEventReason bounds the bytes of a failed event's reason: a provider's
// error text is not hush's to trust.
const maxEventReason = 256

// clip is s cut to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// encodeEvent names e by its eventID, when it has none, and encodes it: the
// one encoding of the stream's entries and the webhook's bodies.
func encodeEvent(e *Event) ([]byte, error) {
	if e.ID == "" {
		e.ID = eventID(*e)
	}
	return json.Marshal(e)
}

// eventID is "evt_" and 26 base32 characters of a SHA-256 over what names
// the outcome: the type, the app, the job, the user and, for a device's
// event, its platform and token. It holds no '.', as the webhook-id header
// must not.
func eventID(e Event) string {
	h := sha256.New()
	for _, f := range []string{e.Type, e.App, e.Job, e.UserID, e.Platform, e.Token} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return "evt_" + eventIDEncoding.EncodeToString(h.Sum(nil)[:16])
}

var eventIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
