package worker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/webhook"
	"github.com/hushpush/hush/wire"
)

// EventsStream is the Redis stream events are appended to.
const EventsStream = "hush:events"

// Event types.
const (
	EventTokenInvalid = "token_invalid"
	EventDropped      = "dropped"
)

// eventTypes are the Event* types, in the order docs/events.md lists them.
var eventTypes = []string{EventTokenInvalid, EventDropped}

// IsEventType reports whether t is an event type hush emits.
func IsEventType(t string) bool { return slices.Contains(eventTypes, t) }

// EventTypesText lists the event types for an error message.
func EventTypesText() string { return strings.Join(eventTypes, ", ") }

// Event is one entry of hush:events (field "event", JSON), one webhook
// POST body and one item of GET /v1/events: package wire's, which the Go
// client decodes.
type Event = wire.Event

// events writes events to the stream and hands them to the webhook.
type events struct {
	rdb     redis.UniversalClient
	maxLen  int64
	webhook *webhookPoster // nil when no HUSH_WEBHOOK_URL
	m       *metrics
}

// emit appends e to the stream (capped) and queues it for the webhook. It
// returns the stream write's error; the webhook never blocks.
func (ev *events) emit(ctx context.Context, e Event) error {
	b, err := encodeEvent(&e)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", e.Type, err)
	}
	if ev.webhook != nil {
		ev.webhook.enqueue(queuedEvent{id: e.ID, body: b})
	}
	err = ev.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: EventsStream,
		MaxLen: ev.maxLen,
		Approx: true,
		Values: []any{"type", e.Type, "event", b},
	}).Err()
	if err != nil {
		ev.m.eventsDropped.WithLabelValues("stream").Inc()
		return fmt.Errorf("append %s event to %s: %w", e.Type, EventsStream, err)
	}
	return nil
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

// queuedEvent is an event waiting for its webhook POST.
type queuedEvent struct {
	id   string
	body []byte
}

// webhookPoster POSTs events to a URL from one goroutine, through a bounded queue:
// when the receiver is slow or down, events are dropped (and counted) rather
// than slowing deliveries. Every POST is signed with every secret.
type webhookPoster struct {
	url     string
	secrets []webhook.Secret
	client  *http.Client
	queue   chan queuedEvent
	log     *slog.Logger
	m       *metrics
}

func newWebhook(url string, secrets []webhook.Secret, log *slog.Logger, m *metrics) *webhookPoster {
	return &webhookPoster{
		url:     url,
		secrets: secrets,
		client:  &http.Client{Timeout: 5 * time.Second},
		queue:   make(chan queuedEvent, 1024),
		log:     log,
		m:       m,
	}
}

func (w *webhookPoster) enqueue(b queuedEvent) {
	select {
	case w.queue <- b:
	default:
		w.m.eventsDropped.WithLabelValues("webhook").Inc()
	}
}

// run posts queued events until ctx is done, then posts what is left with a
// short grace period.
func (w *webhookPoster) run(ctx context.Context) {
	for {
		select {
		case b := <-w.queue:
			w.post(ctx, b)
		case <-ctx.Done():
			grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			for {
				select {
				case b := <-w.queue:
					w.post(grace, b)
				default:
					return
				}
			}
		}
	}
}

func (w *webhookPoster) post(ctx context.Context, e queuedEvent) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(e.body))
	if err != nil {
		w.m.eventsDropped.WithLabelValues("webhook").Inc()
		w.log.Warn("webhook request", "err", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	webhook.Sign(req.Header, w.secrets, e.id, time.Now(), e.body)
	resp, err := w.client.Do(req)
	if err != nil {
		w.m.eventsDropped.WithLabelValues("webhook").Inc()
		w.log.Warn("webhook post failed", "err", err)
		return
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 300 {
		w.m.eventsDropped.WithLabelValues("webhook").Inc()
		w.log.Warn("webhook answered with an error", "status", resp.StatusCode)
	}
}
