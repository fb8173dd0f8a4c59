package worker

import (
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker/internal/store"
)

// EventsStream is the Redis stream events are appended to.
const EventsStream = store.EventsStream

// Event types: one per device whose token is dead, and one per recipient's
// final state, but token_invalid, whose events are its devices'.
const (
	EventDelivered    = store.EventDelivered
	EventFailed       = store.EventFailed
	EventTokenInvalid = store.EventTokenInvalid
	EventDropped      = store.EventDropped
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

// newEvents is the writer of events to the stream, capped near maxLen
// entries, counting those it loses in m's hush_events_dropped_total.
func newEvents(rdb redis.UniversalClient, maxLen int64, m *metrics) *store.Events {
	lost := func(n int) { m.eventsDropped.WithLabelValues("stream").Add(float64(n)) }
	return &store.Events{RDB: rdb, MaxLen: maxLen, Lost: lost}
}
