package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
)

// EventsStream is the Redis stream events are appended to.
const EventsStream = "hush:events"

// Event types.
const (
	EventTokenInvalid = "token_invalid"
	EventDropped      = "dropped"
)

// Event is one entry of hush:events (field "event", JSON) and one webhook
// POST body.
type Event struct {
	Type     string           `json:"type"`
	Platform payload.Platform `json:"platform,omitempty"`
	// Token is the whole device token, so a backend can remove it; logs
	// never show more than its ends.
	Token  string `json:"token,omitempty"`
	UserID string `json:"user_id,omitempty"`
	Reason string `json:"reason,omitempty"`
	Job    string `json:"job,omitempty"`
	// App is the app of the event's job.
	App string    `json:"app,omitempty"`
	At  time.Time `json:"at"`
}

// events writes events to the stream and hands them to the webhook.
type events struct {
	rdb     redis.UniversalClient
	maxLen  int64
	webhook *webhook // nil when no HUSH_WEBHOOK_URL
	m       *metrics
}

// emit appends e to the stream (capped) and queues it for the webhook. It
// returns the stream write's error; the webhook never blocks.
func (ev *events) emit(ctx context.Context, e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", e.Type, err)
	}
	if ev.webhook != nil {
		ev.webhook.enqueue(b)
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

// webhook POSTs events to a URL from one goroutine, through a bounded queue:
// when the receiver is slow or down, events are dropped (and counted) rather
// than slowing deliveries.
type webhook struct {
	url    string
	client *http.Client
	queue  chan []byte
	log    *slog.Logger
	m      *metrics
}

func newWebhook(url string, log *slog.Logger, m *metrics) *webhook {
	return &webhook{
		url:    url,
		client: &http.Client{Timeout: 5 * time.Second},
		queue:  make(chan []byte, 1024),
		log:    log,
		m:      m,
	}
}

func (w *webhook) enqueue(b []byte) {
	select {
	case w.queue <- b:
	default:
		w.m.eventsDropped.WithLabelValues("webhook").Inc()
	}
}

// run posts queued events until ctx is done, then posts what is left with a
// short grace period.
func (w *webhook) run(ctx context.Context) {
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

func (w *webhook) post(ctx context.Context, b []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(b))
	if err != nil {
		w.m.eventsDropped.WithLabelValues("webhook").Inc()
		w.log.Warn("webhook request", "err", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
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
