package store

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/mutant"
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

// Event is one entry of hush:events (field "event", JSON): package
// wire's.
type Event = wire.Event

// FinalEvent is the event of a recipient's final state, about naming the
// job, app, user, time and, for a failure, the reason: delivered, failed,
// or dropped with the state as its reason (expired, throttle_full,
// collapsed, cancelled, opted_out). A recipient ending token_invalid has none: its
// devices' events report it.
func FinalEvent(state string, about Event) (Event, bool) {
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
		about.Reason = Clip(about.Reason, MaxEventReason)
	default:
		if mutant.On("eventCancelledLost") && state == task.Cancelled {
			return Event{}, false
		}
		about.Type, about.Reason = EventDropped, state
	}
	if state != task.Collapsed {
		about.ReplacedBy = ""
	}
	return about, true
}

// MaxEventReason bounds the bytes of a failed event's reason: a provider's
// error text is not hush's to trust.
const MaxEventReason = 256

// Clip is s cut to at most n bytes, on a rune boundary.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// EncodeEvent names e by its EventID, when it has none, and encodes it: the
// one encoding of the stream's entries and the webhook's bodies.
func EncodeEvent(e *Event) ([]byte, error) {
	if e.ID == "" {
		e.ID = EventID(*e)
	}
	return json.Marshal(e)
}

// EventID is "evt_" and 26 base32 characters of a SHA-256 over what names
// the outcome: the type, the app, the job, the user and, for a device's
// event, its platform and token. It holds no '.', as the webhook-id header
// must not.
func EventID(e Event) string {
	h := sha256.New()
	for _, f := range []string{e.Type, e.App, e.Job, e.UserID, e.Platform, e.Token} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return "evt_" + eventIDEncoding.EncodeToString(h.Sum(nil)[:16])
}

var eventIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Events writes events to the stream, which the webhook reads.
type Events struct {
	RDB    redis.UniversalClient
	MaxLen int64
	// Lost counts n events that could not be appended
	// (hush_events_dropped_total); nil: not counted.
	Lost func(n int)
}

func (ev *Events) lost(n int) {
	if ev.Lost != nil {
		ev.Lost(n)
	}
}

// EmitOrCount appends es (Persist: while Redis cannot be reached, until
// ctx ends), before the outcomes they report are written. When it fails,
// the outcomes are written all the same, since an outcome lost would
// re-send a push, and the events lost are counted (Lost). ev nil or es
// empty: nothing.
func (ev *Events) EmitOrCount(ctx context.Context, es []Event) {
	if ev == nil || len(es) == 0 {
		return
	}
	if err := Persist(ctx, func(ctx context.Context) error { return ev.emitAll(ctx, es) }); err != nil {
		ev.lost(len(es))
	}
}

// emitAll appends events to the stream in one round trip.
func (ev *Events) emitAll(ctx context.Context, es []Event) error {
	_, err := ev.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		_, err := ev.queueAll(ctx, p, es)
		return err
	})
	if err != nil {
		return fmt.Errorf("append %d events to %s: %w", len(es), EventsStream, err)
	}
	return nil
}

// queueAll queues the appends of es on p.
func (ev *Events) queueAll(ctx context.Context, p redis.Pipeliner, es []Event) ([]*redis.StringCmd, error) {
	cmds := make([]*redis.StringCmd, 0, len(es))
	for _, e := range es {
		b, err := EncodeEvent(&e)
		if err != nil {
			return nil, fmt.Errorf("encode %s event: %w", e.Type, err)
		}
		cmds = append(cmds, p.XAdd(ctx, &redis.XAddArgs{Stream: EventsStream, MaxLen: ev.MaxLen, Approx: true, Values: []any{"type", e.Type, "event", b}}))
	}
	return cmds, nil
}

// countFailed counts the appends of cmds that Redis refused (a reply
// error) as events lost: the outcomes after them in their pipeline were
// written all the same. An append the connection lost fails its outcomes'
// writes too, which are tried again, events and all.
func (ev *Events) countFailed(cmds []*redis.StringCmd) {
	for _, c := range cmds {
		var reply redis.Error
		if errors.As(c.Err(), &reply) {
			ev.lost(1)
		}
	}
}
