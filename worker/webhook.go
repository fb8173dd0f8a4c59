package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/mutant"
	"github.com/hushpush/hush/webhook"
	"github.com/hushpush/hush/wire"
)

// DefaultWebhookRetries are the waits between a webhook POST that failed
// and its next attempt, after the Standard Webhooks specification's
// example schedule: ten attempts over about three days. An event whose
// last attempt fails is given up (hush_webhook_posts_total{outcome=
// "given_up"}).
var DefaultWebhookRetries = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour,
}

// DefaultWebhookClaimAfter is Options.WebhookClaimAfter's default: a
// POST's wait for a free slot and its timeout, twice over.
const DefaultWebhookClaimAfter = 4 * webhookTimeout

// Bounds of the webhook's delivery.
const (
	// webhookTimeout bounds one POST, its answer's status included.
	webhookTimeout = 15 * time.Second
	// webhookConcurrency is the POSTs one process has under way at once.
	webhookConcurrency = 8
	// webhookAnswerBody is the most of an answer's body read (and
	// dropped), so a connection can be kept.
	webhookAnswerBody = 16 << 10
	// webhookMaxRetries bounds the events waiting for a retry, each with
	// its body; an event failing beyond it is given up at once.
	webhookMaxRetries = 100_000
	// webhookMaxRetryAfter bounds the wait a receiver's Retry-After asks.
	webhookMaxRetryAfter = 24 * time.Hour
	// webhookGroup is the consumer group of hush:events the webhook reads
	// through: each event is handed to one process, and one that dies
	// holding it leaves it pending in the group for another to claim.
	webhookGroup = "webhook"
	// webhookForgetEvery is how often, and after how long without a
	// read, consumers that left the group are removed from it.
	webhookForgetEvery = time.Hour
	// webhookEndpoint names the one endpoint, HUSH_WEBHOOK_URL, in the
	// webhook's keys.
	webhookEndpoint = "default"
)

// webhookKeys are the Redis keys of one endpoint, in one hash slot.
type webhookKeys struct {
	due      string // ZSET: stream id -> when its next attempt is due (ms)
	retry    string // HASH: stream id -> webhookRetry JSON
	retrier  string // STRING: the process running the retries (a lease)
	disabled string // STRING: why the endpoint is disabled; absent: enabled
	failing  string // STRING: when the endpoint's POSTs began to fail (ms)
}

func keysOfWebhook(endpoint string) webhookKeys {
	p := "{hush:webhook:" + endpoint + "}:"
	return webhookKeys{due: p + "due", retry: p + "retry", retrier: p + "retrier", disabled: p + "disabled", failing: p + "failing"}
}

// webhookRetry is an event waiting for its next attempt.
type webhookRetry struct {
	Attempts int    `json:"a"` // attempts made
	ID       string `json:"id"`
	Body     string `json:"b"`
}

// WebhookDisabled says why an endpoint is disabled.
type WebhookDisabled = wire.WebhookDisabled

// webhookDelivery POSTs the events of hush:events to one URL, signed, at
// least once: it reads them through a consumer group, acknowledges an
// event once it was answered 2xx or its retry is stored, retries on the
// schedule from a sorted set that one process at a time works through,
// and claims the events a dead process left unacknowledged. A 410, or
// failures for longer than the schedule, disable the endpoint until it is
// enabled again (EnableWebhook).
type webhookDelivery struct {
	rdb      redis.UniversalClient
	url      string
	secrets  []webhook.Secret
	retries  []time.Duration
	client   *http.Client
	keys     webhookKeys
	consumer string
	log      *slog.Logger
	m        *metrics
	now      func() time.Time
	// claimIdle is how long an event stays unacknowledged with a
	// consumer before another claims it: beyond a POST's wait for a free
	// slot and its own timeout.
	claimIdle time.Duration
	// poll is how often the retries, the claims and whether the endpoint
	// is disabled are looked at.
	poll time.Duration
	// forgetAfter is how long a consumer holding no event may go without a
	// read before forgetConsumers removes it.
	forgetAfter time.Duration
	// disabled is the endpoint's disabled key as last read, or set by this
	// process's own disable.
	disabled atomic.Bool
	// types are the event types the endpoint receives; nil: every type.
	types map[string]bool
}

// typeSet is ts as a set, nil for none (every type).
func typeSet(ts []string) map[string]bool {
	if len(ts) == 0 {
		return nil
	}
	set := make(map[string]bool, len(ts))
	for _, t := range ts {
		set[t] = true
	}
	return set
}

func newWebhookDelivery(rdb redis.UniversalClient, url string, secrets []webhook.Secret, retries []time.Duration, log *slog.Logger, m *metrics) *webhookDelivery {
	if len(retries) == 0 {
		retries = DefaultWebhookRetries
	}
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &webhookDelivery{
		rdb: rdb, url: url, secrets: secrets, retries: retries, log: log, m: m, now: time.Now,
		keys:     keysOfWebhook(webhookEndpoint),
		consumer: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:])),
		client: &http.Client{
			Timeout: webhookTimeout,
			// A redirect is a failure (the URL should be updated), as
			// the specification advises.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		claimIdle:   DefaultWebhookClaimAfter,
		forgetAfter: webhookForgetEvery,
		poll:        min(time.Second, max(slices.Min(retries)/2, 10*time.Millisecond)),
	}
}

// run delivers events until ctx is done. POSTs under way then are
// abandoned unacknowledged, and another process (or this one's next start)
// claims and sends them again.
func (d *webhookDelivery) run(ctx context.Context) {
	err := d.rdb.XGroupCreateMkStream(ctx, EventsStream, webhookGroup, "$").Err()
	for err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		d.log.Warn("webhook: cannot create the consumer group, trying again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(d.poll):
		}
		err = d.rdb.XGroupCreateMkStream(ctx, EventsStream, webhookGroup, "$").Err()
	}
	sem := make(chan struct{}, webhookConcurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	handle := func(msgs []redis.XMessage) {
		for _, msg := range msgs {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				d.first(ctx, msg)
			}()
		}
	}
	wg.Go(func() {
		forgotten := time.Time{}
		for ctx.Err() == nil {
			if n, err := d.rdb.Exists(ctx, d.keys.disabled).Result(); err == nil {
				d.disabled.Store(n > 0)
			}
			d.retryDue(ctx)
			handle(d.claim(ctx))
			if time.Since(forgotten) > webhookForgetEvery {
				d.forgetConsumers(ctx)
				forgotten = time.Now()
			}
			select {
			case <-ctx.Done():
			case <-time.After(d.poll):
			}
		}
	})
	for ctx.Err() == nil {
		if d.disabled.Load() {
			select {
			case <-ctx.Done():
			case <-time.After(d.poll):
			}
			continue
		}
		streams, err := d.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: webhookGroup, Consumer: d.consumer, Streams: []string{EventsStream, ">"},
			Count: webhookConcurrency, Block: 2 * time.Second,
		}).Result()
		if err != nil {
			if !errors.Is(err, redis.Nil) && ctx.Err() == nil {
				d.log.Warn("webhook: cannot read the events", "err", err)
				time.Sleep(d.poll)
			}
			continue
		}
		for _, s := range streams {
			handle(s.Messages)
		}
	}
}

// forgetConsumers removes the group's consumers that hold no event and
// have not read for forgetAfter: processes gone, each of which joined the
// group under a name of its own.
func (d *webhookDelivery) forgetConsumers(ctx context.Context) {
	cs, err := d.rdb.XInfoConsumers(ctx, EventsStream, webhookGroup).Result()
	if err != nil {
		return
	}
	for _, c := range cs {
		if c.Pending == 0 && c.Idle > d.forgetAfter && c.Name != d.consumer {
			d.rdb.XGroupDelConsumer(ctx, EventsStream, webhookGroup, c.Name)
		}
	}
}

// claim takes over the events another consumer held unacknowledged for
// claimIdle, a process that died mid-POST; entries the stream's cap
// trimmed meanwhile are acknowledged and counted lost.
func (d *webhookDelivery) claim(ctx context.Context) []redis.XMessage {
	if d.disabled.Load() {
		return nil
	}
	msgs, _, err := d.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: EventsStream, Group: webhookGroup, Consumer: d.consumer,
		MinIdle: d.claimIdle, Start: "0-0", Count: webhookConcurrency,
	}).Result()
	if err != nil {
		return nil
	}
	var live []redis.XMessage
	for _, m := range msgs {
		if m.Values == nil { // trimmed from the stream
			d.rdb.XAck(ctx, EventsStream, webhookGroup, m.ID)
			d.m.webhookPosts.WithLabelValues("lost").Inc()
			continue
		}
		live = append(live, m)
	}
	return live
}

// first makes an event's first attempt (or the first after a claim).
func (d *webhookDelivery) first(ctx context.Context, msg redis.XMessage) {
	body, _ := msg.Values["event"].(string)
	var e Event
	if json.Unmarshal([]byte(body), &e) != nil || e.ID == "" {
		// Not an event this build wrote (an older build's, without an
		// id, or another writer's): nothing a receiver could check.
		d.rdb.XAck(ctx, EventsStream, webhookGroup, msg.ID)
		return
	}
	if d.types != nil && !d.types[e.Type] {
		d.rdb.XAck(ctx, EventsStream, webhookGroup, msg.ID) // not a type it receives
		return
	}
	r := webhookRetry{ID: e.ID, Body: body}
	if d.disabled.Load() {
		// Read before the endpoint was disabled: it waits with the
		// retries, due when the endpoint is enabled.
		if d.book(context.WithoutCancel(ctx), msg.ID, &r, d.now()) == nil {
			d.rdb.XAck(context.WithoutCancel(ctx), EventsStream, webhookGroup, msg.ID)
		}
		return
	}
	if d.attempt(ctx, msg.ID, &r, false) {
		// Answered, given up, or its retry stored: the group need not
		// keep it. When ctx ended mid-POST it stays pending, for a
		// claim.
		d.rdb.XAck(context.WithoutCancel(ctx), EventsStream, webhookGroup, msg.ID)
	}
}

// retryDue makes the attempts that are due, while this process holds the
// retrier lease.
func (d *webhookDelivery) retryDue(ctx context.Context) {
	if d.disabled.Load() {
		return
	}
	lease := d.retrierLease()
	ok, err := d.rdb.SetNX(ctx, d.keys.retrier, d.consumer, lease).Result()
	if err != nil {
		return
	}
	if !ok {
		if holder, _ := d.rdb.Get(ctx, d.keys.retrier).Result(); holder != d.consumer {
			return
		}
		d.rdb.PExpire(ctx, d.keys.retrier, lease)
	}
	ids, err := d.rdb.ZRangeByScore(ctx, d.keys.due, &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(d.now().UnixMilli(), 10), Count: webhookConcurrency}).Result()
	if err != nil || len(ids) == 0 {
		return
	}
	vals, err := d.rdb.HMGet(ctx, d.keys.retry, ids...).Result()
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		s, _ := vals[i].(string)
		var r webhookRetry
		if json.Unmarshal([]byte(s), &r) != nil {
			d.forget(ctx, id)
			continue
		}
		wg.Go(func() { d.attempt(ctx, id, &r, true) })
	}
	wg.Wait()
}

// attempt POSTs r's event once and books what follows: done on a 2xx, a
// retry at the schedule's next wait, the endpoint disabled on a 410 or
// failures for longer than the schedule, or the event given up after its
// last attempt. It reports whether the event's fate is written (false:
// ctx ended, or Redis refused the write, and the event stays where it
// was).
func (d *webhookDelivery) attempt(ctx context.Context, id string, r *webhookRetry, retried bool) bool {
	status, retryAfter, err := d.post(ctx, r.ID, []byte(r.Body))
	if ctx.Err() != nil {
		return false
	}
	r.Attempts++
	now := d.now()
	wctx := context.WithoutCancel(ctx)
	if err == nil && status/100 == 2 {
		d.m.webhookPosts.WithLabelValues("delivered").Inc()
		if !retried {
			return d.rdb.Del(wctx, d.keys.failing).Err() == nil
		}
		_, werr := d.rdb.TxPipelined(wctx, func(p redis.Pipeliner) error {
			p.ZRem(wctx, d.keys.due, id)
			p.HDel(wctx, d.keys.retry, id)
			p.Del(wctx, d.keys.failing)
			return nil
		})
		return werr == nil
	}
	why := fmt.Sprintf("answered %d", status)
	if err != nil {
		why = err.Error()
	}
	if status == http.StatusGone {
		d.disable(wctx, "the endpoint answered 410 Gone", now)
		return d.book(wctx, id, r, now) == nil
	}
	if r.Attempts > len(d.retries) || mutant.On("webhookNoRetry") {
		d.m.webhookPosts.WithLabelValues("given_up").Inc()
		d.log.Warn("webhook: event given up after its last attempt", "event", r.ID, "attempts", r.Attempts, "last", why)
		return d.forget(wctx, id) == nil
	}
	// An endpoint whose every POST failed for longer than one event's
	// whole schedule (and a fifth, beyond the retries' spread) is
	// disabled: its events would only pile up.
	since, _ := d.rdb.Get(wctx, d.keys.failing).Int64()
	if since == 0 {
		d.rdb.SetNX(wctx, d.keys.failing, now.UnixMilli(), 0)
		since = now.UnixMilli()
	}
	if failing := now.Sub(time.UnixMilli(since)); failing > d.failingLimit() {
		d.disable(wctx, fmt.Sprintf("every POST failed for %s (the last: %s)", failing.Round(time.Second), why), now)
		return d.book(wctx, id, r, now) == nil
	}
	d.m.webhookPosts.WithLabelValues("retry").Inc()
	wait := d.retries[r.Attempts-1]
	wait += time.Duration(float64(wait) * 0.1 * (mrand.Float64()*2 - 1)) // ±10 %: retries of many events spread out
	wait = max(wait, min(retryAfter, webhookMaxRetryAfter))
	d.log.Info("webhook: POST failed, retrying", "event", r.ID, "attempt", r.Attempts, "in", wait.Round(time.Second), "why", why)
	return d.book(wctx, id, r, now.Add(wait)) == nil
}

// book stores r's next attempt at due, or gives it up when too many wait.
func (d *webhookDelivery) book(ctx context.Context, id string, r *webhookRetry, due time.Time) error {
	if n, err := d.rdb.ZCard(ctx, d.keys.due).Result(); err == nil && n >= webhookMaxRetries {
		if s, _ := d.rdb.ZScore(ctx, d.keys.due, id).Result(); s == 0 {
			d.m.webhookPosts.WithLabelValues("given_up").Inc()
			d.log.Warn("webhook: event given up: too many waiting for a retry", "event", r.ID, "waiting", n)
			return nil
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = d.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, d.keys.retry, id, b)
		p.ZAdd(ctx, d.keys.due, redis.Z{Score: float64(due.UnixMilli()), Member: id})
		return nil
	})
	return err
}

// forget drops an event's retry.
func (d *webhookDelivery) forget(ctx context.Context, id string) error {
	_, err := d.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, d.keys.due, id)
		p.HDel(ctx, d.keys.retry, id)
		return nil
	})
	return err
}

// retrierLease is how long the retrier lease lasts: one pass (its POSTs'
// timeout) and a few polls, so a process that dies holding it delays the
// retries that long.
func (d *webhookDelivery) retrierLease() time.Duration { return webhookTimeout + 3*d.poll }

// failingLimit is how long an endpoint's POSTs may all fail before it is
// disabled: the time from an event's first attempt to its last, a fifth
// more for the retries' spread, the polls between, and the retrier lease
// a process that died holding it makes every retry wait (meanwhile only
// first POSTs go out, and those may all be refused by a receiver that
// takes retries).
func (d *webhookDelivery) failingLimit() time.Duration {
	var t time.Duration
	for _, w := range d.retries {
		t += w + d.poll
	}
	return t + t/5 + d.retrierLease()
}

func (d *webhookDelivery) disable(ctx context.Context, reason string, now time.Time) {
	d.disabled.Store(true)
	b, _ := json.Marshal(WebhookDisabled{Reason: reason, At: now.UTC()})
	if ok, err := d.rdb.SetNX(ctx, d.keys.disabled, b, 0).Result(); err == nil && ok {
		d.m.webhookPosts.WithLabelValues("disabled").Inc()
		d.log.Error("webhook: endpoint disabled, no event is posted until it is enabled again (hush webhook enable)", "url", d.url, "reason", reason)
	}
}

// post sends one signed POST and returns the answer's status and
// Retry-After.
func (d *webhookDelivery) post(ctx context.Context, id string, body []byte) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	webhook.Sign(req.Header, d.secrets, id, d.now(), body)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.CopyN(io.Discard, resp.Body, webhookAnswerBody)
	var after time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		after = time.Duration(min(int64(s), int64(math.MaxInt32))) * time.Second
	}
	return resp.StatusCode, after, nil
}

// WebhookStatus reads the webhook's state.
func (c *Client) WebhookStatus(ctx context.Context) (wire.WebhookStatus, error) {
	k := keysOfWebhook(webhookEndpoint)
	var st wire.WebhookStatus
	s, err := c.rdb.Get(ctx, k.disabled).Result()
	switch {
	case err == nil:
		var dis WebhookDisabled
		if json.Unmarshal([]byte(s), &dis) != nil {
			dis.Reason = s
		}
		st.Disabled = &dis
	case !errors.Is(err, redis.Nil):
		return st, err
	}
	if st.Retrying, err = c.rdb.ZCard(ctx, k.due).Result(); err != nil {
		return st, err
	}
	return st, nil
}

// EnableWebhook enables a disabled endpoint: its events are posted again
// from where they stopped, and those waiting for a retry are due at once.
func (c *Client) EnableWebhook(ctx context.Context) error {
	k := keysOfWebhook(webhookEndpoint)
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, k.disabled, k.failing)
		// Every waiting retry is due now: its score becomes 0.
		p.ZUnionStore(ctx, k.due, &redis.ZStore{Keys: []string{k.due}, Weights: []float64{0}})
		return nil
	})
	return err
}
