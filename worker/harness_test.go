package worker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/providers/fcm"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// env is one worker process under test: a private redis-server (Asynq uses
// fixed key names), the Redis limiter, the real APNs client against a fake
// APNs, and a running Worker.
type env struct {
	t       *testing.T
	rdb     *redis.Client
	lim     *recordingLimiter
	apns    *fake.APNs
	fcm     *fake.FCM
	webpush *fakeWebPush
	w       *Worker
	client  *Client
	insp    *asynq.Inspector
	calls   *sendCalls
	stopped chan error
	stop    context.CancelFunc
	opts    Options // what w was built with, for restart
}

type envOptions struct {
	limits, gap     string // default "100/1m", "0s"
	maxRetry        int
	bypass          []payload.Priority
	shutdownTimeout time.Duration // default 3s
	wrap            func(Limiter) Limiter
	webhookURL      string
	webhookRetries  []time.Duration // Options.WebhookRetries
	webhookTypes    []string        // Options.WebhookTypes
	shards          int             // HUSH_DELIVERY_SHARDS
	maxThrottled    time.Duration
	webpush         fake.WebPushOptions // a hostile push service
	maxPending      int                 // HUSH_THROTTLE_MAX_PENDING
	concurrency     int                 // default 10
	retention       time.Duration       // HUSH_JOB_RETENTION
	noRun           bool
	logs            io.Writer // the worker's JSON logs (default: testLogger)
	// policy, when set, changes the policy limits and gap make (categories,
	// quiet hours).
	policy func(*throttle.Policy)
	// location is Options.DefaultLocation.
	location *time.Location
	// apps, when set, are the worker's apps instead of DefaultApp alone,
	// made from the env's Redis, its default limiter and senders; the
	// worker then has a Pacer on that Redis.
	apps func(rdb *redis.Client, lim Limiter, senders map[payload.Platform]Sender) []App
}

const (
	apnsTopic  = "com.example.hush"
	fcmProject = "hush-test"
)

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	if o.limits == "" {
		o.limits = "100/1m"
	}
	if o.shutdownTimeout == 0 {
		o.shutdownTimeout = 3 * time.Second
	}
	if o.gap == "" {
		o.gap = "0s"
	}
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	policy, err := throttle.ParsePolicy(o.limits, o.gap)
	if err != nil {
		t.Fatal(err)
	}
	if o.policy != nil {
		o.policy(&policy)
	}
	rl, err := throttle.NewRedis(rdb, policy, throttle.Options{MaxPending: o.maxPending, CollapseMargin: CollapseMargin})
	if err != nil {
		t.Fatal(err)
	}
	lim := &recordingLimiter{Redis: rl, slots: map[string]time.Time{}}

	fa, ff, senders := startFakes(t)
	fw := startWebPush(t, senders, o.webpush)
	calls := &sendCalls{by: map[string][]time.Time{}}
	for p, s := range senders {
		senders[p] = calls.wrap(s)
	}

	var l Limiter = lim
	if o.wrap != nil {
		l = o.wrap(lim)
	}
	if o.concurrency == 0 {
		o.concurrency = 10
	}
	opts := Options{
		Limiter:         l,
		Policy:          policy,
		Senders:         senders,
		Concurrency:     o.concurrency,
		MaxThrottled:    o.maxThrottled,
		DeliveryShards:  o.shards,
		MaxRetry:        o.maxRetry,
		Bypass:          o.bypass,
		ShutdownTimeout: o.shutdownTimeout,
		WebhookURL:      o.webhookURL,
		WebhookSecrets:  testWebhookSecrets(o.webhookURL),
		WebhookRetries:  o.webhookRetries,
		WebhookTypes:    o.webhookTypes,
		DefaultLocation: o.location,
		JobRetention:    o.retention,
		Logger:          testLogger(t),
	}
	if o.logs != nil {
		opts.Logger = slog.New(slog.NewJSONHandler(o.logs, nil))
	}
	if o.apps != nil {
		if opts.Apps, err = NewApps(o.apps(rdb, l, senders)...); err != nil {
			t.Fatal(err)
		}
		if opts.Pacer, err = throttle.NewPacer(rdb, throttle.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := New(rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, rdb: rdb, lim: lim, apns: fa, fcm: ff, webpush: fw, w: w, client: w.Client(), insp: asynq.NewInspectorFromRedisClient(rdb), calls: calls, opts: opts}
	if !o.noRun {
		e.start()
		t.Cleanup(e.shutdown)
	}
	return e
}

// startFakes starts a fake APNs and a fake FCM and returns the real
// providers' senders pointed at them.
func startFakes(tb testing.TB) (*fake.APNs, *fake.FCM, map[payload.Platform]Sender) {
	tb.Helper()
	fa, err := fake.StartAPNs()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(fa.Close)
	dir := tb.TempDir()
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(dir)
	if err != nil {
		tb.Fatal(err)
	}
	as := apnsSenderFor(tb, fa, dir, keyFile, keyID, teamID, apnsTopic)

	ff, err := fake.StartFCM()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(ff.Close)
	saFile, err := fake.WriteServiceAccount(dir, ff.TokenURL(), fcmProject)
	if err != nil {
		tb.Fatal(err)
	}
	fs, err := fcm.New(tb.Context(), fcm.Config{CredentialsFile: saFile, Endpoint: ff.Endpoint()})
	if err != nil {
		tb.Fatal(err)
	}

	return fa, ff, map[payload.Platform]Sender{payload.APNs: as, payload.FCM: fs}
}

// apnsSenderFor is the real APNs sender for topic, signing with the key
// in keyFile, pointed at fa.
func apnsSenderFor(tb testing.TB, fa *fake.APNs, dir, keyFile, keyID, teamID, topic string) Sender {
	tb.Helper()
	caFile, err := fa.WriteCA(dir)
	if err != nil {
		tb.Fatal(err)
	}
	as, err := apns.New(apns.Config{KeyFile: keyFile, KeyID: keyID, TeamID: teamID, Topic: topic, Endpoint: fa.URL, CAFile: caFile})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(as.Close)
	// Warm the connection as hush serve does (setup/senders.go): a first
	// call on a cold connection spends its slot's 100 ms on TCP and TLS
	// and is not sent (docs/delivery.md, section 3).
	if err := as.Warm(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	return as
}

// start runs the worker until shutdown.
func (e *env) start() {
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	e.stopped = make(chan error, 1)
	go func() { e.stopped <- e.w.Run(ctx) }()
	waitFor(e.t, 10*time.Second, "worker running", e.w.running.Load)
}

// restart shuts the worker down (as SIGTERM does) and runs a new one, as
// a new process would, on the same Redis with the same options.
func (e *env) restart() {
	e.shutdown()
	w, err := New(e.rdb, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.w, e.client = w, w.Client()
	e.start()
}

// shutdown stops a started worker and checks Run's result.
func (e *env) shutdown() {
	if e.stop == nil {
		return
	}
	e.stop()
	e.stop = nil
	if err := <-e.stopped; err != nil {
		e.t.Errorf("Run: %v", err)
	}
}

// testLogger writes the worker's logs to the test log when -v asks for
// them (HUSH_TEST_LOG=1), else discards them.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("HUSH_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

var _ io.Writer = tWriter{}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, timeout, what, cond)
}

// submit enqueues job and fails the test on error.
func (e *env) submit(job payload.Job) string {
	e.t.Helper()
	acc, err := e.client.Enqueue(context.Background(), job)
	if err != nil {
		e.t.Fatalf("Enqueue: %v", err)
	}
	return acc.ID
}

// waitQuiet waits until no task of any queue is pending or active: what
// the worker was handed has run, a task enqueued by mistake has run too,
// and every push its handlers sent has reached the fakes (a sender's call
// returns after the fake's answer). A test checks that nothing more
// arrives after it, instead of sleeping in the hope that it would have.
func (e *env) waitQuiet(timeout time.Duration) {
	e.t.Helper()
	waitFor(e.t, timeout, "no task pending or active", func() bool {
		queues, err := e.insp.Queues()
		if err != nil {
			return false
		}
		for _, q := range queues {
			info, err := e.insp.GetQueueInfo(q)
			if err != nil || info.Pending+info.Active > 0 {
				return false
			}
		}
		return true
	})
}

// waitDone waits until every recipient of the job has a final state and
// returns the job's status.
func (e *env) waitDone(id string, timeout time.Duration) JobStatus {
	e.t.Helper()
	var st JobStatus
	waitFor(e.t, timeout, "job "+id+" done", func() bool {
		var err error
		st, err = e.client.Status(context.Background(), id)
		return err == nil && st.State == jobDone
	})
	return st
}

// waitDelivered waits for each job of ids to be done with its one
// recipient delivered, and returns how many deferrals they took in all.
func (e *env) waitDelivered(ids []string, timeout time.Duration) (deferrals int) {
	e.t.Helper()
	for _, id := range ids {
		st := e.waitDone(id, timeout)
		if st.Counts[task.Delivered] != 1 {
			e.t.Errorf("job %s: counts %v, want 1 delivered", id, st.Counts)
		}
		deferrals += st.Deferrals
	}
	return deferrals
}

// events returns the events in hush:events, each checked to carry its
// outcome's id and returned without it.
func (e *env) events() []Event {
	e.t.Helper()
	msgs, err := e.rdb.XRange(context.Background(), EventsStream, "-", "+").Result()
	if err != nil {
		e.t.Fatal(err)
	}
	var out []Event
	for _, m := range msgs {
		var ev Event
		s, _ := m.Values["event"].(string)
		if err := json.Unmarshal([]byte(s), &ev); err != nil {
			e.t.Fatalf("event %s: %v", m.ID, err)
		}
		// Every event is named by its outcome; the tests compare the
		// rest.
		if want := store.EventID(ev); ev.ID != want {
			e.t.Errorf("event %s has id %q, want %q", m.ID, ev.ID, want)
		}
		ev.ID = ""
		out = append(out, ev)
	}
	return out
}

// requestsFor returns the fake APNs requests for one token.
func requestsFor(reqs []fake.Request, token string) []fake.Request {
	return testkit.RequestsFor(reqs, token)
}

// sendCalls remembers the SendBy of every call the worker made to a
// sender, by device token: the latest instant the worker let that call
// leave. A push that arrives was sent by its SendBy (every sender checks
// it before the call leaves, providers' tests prove that), so a test
// compares SendBy with the booked slot: the worker's decision, whatever
// the machine's speed.
type sendCalls struct {
	mu sync.Mutex
	by map[string][]time.Time
}

func (c *sendCalls) wrap(s Sender) Sender { return &callRecorder{Sender: s, calls: c} }

// sendBys lists the SendBy of each call made for token, in call order.
func (c *sendCalls) sendBys(token string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.by[token])
}

type callRecorder struct {
	Sender
	calls *sendCalls
}

// OpenConns is the wrapped sender's, for hush_webpush_open_connections.
func (r *callRecorder) OpenConns() int {
	if c, ok := r.Sender.(connCounter); ok {
		return c.OpenConns()
	}
	return 0
}

func (r *callRecorder) Send(ctx context.Context, p providers.Push) providers.Result {
	r.calls.mu.Lock()
	r.calls.by[p.Token] = append(r.calls.by[p.Token], p.SendBy)
	r.calls.mu.Unlock()
	return r.Sender.Send(ctx, p)
}

// checkSentInTime checks that the one push for token arrived no earlier
// than slot and that the worker let its call leave no later than
// decide.LateRebook after slot. slot is on the limiter's clock (Redis TIME);
// arrivals and SendBy are on this process's, to which the worker maps a
// slot through a booking's round trip (limiterClock): at or after the
// true instant, by up to that round trip. So an arrival may precede slot
// only by the clocks' rounding (slotEarly), and SendBy may pass slot +
// decide.LateRebook by a round trip (slotRead).
func (e *env) checkSentInTime(what string, arrived, slot time.Time, token string) {
	e.t.Helper()
	if early := slot.Sub(arrived); early > slotEarly {
		e.t.Errorf("%s arrived %s before its slot", what, early)
	}
	bys := e.calls.sendBys(token)
	if len(bys) == 0 {
		e.t.Errorf("%s: no sender call recorded", what)
		return
	}
	if by := bys[len(bys)-1]; by.IsZero() || by.After(slot.Add(decide.LateRebook+slotRead)) {
		e.t.Errorf("%s: its call might leave until %s after its slot, want at most %s and a round trip", what, by.Sub(slot), decide.LateRebook)
	}
}

// slotEarly is how far this process's clock and Redis's may round apart;
// slotRead is the longest round trip through which a test's worker may
// read the limiter's clock on a loaded machine: a quarter of
// decide.LateRebook, so a worker that gave a call twice its time still fails.
const (
	slotEarly = 5 * time.Millisecond
	slotRead  = decide.LateRebook / 4
)

// recordingLimiter remembers the slot booked for each member, so tests can
// compare arrivals with bookings, and counts the batched requests made
// for each member (asks).
type recordingLimiter struct {
	*throttle.Redis
	mu       sync.Mutex
	slots    map[string]time.Time
	users    map[string]string // member's user, for Reset
	released []string
	asks     map[string]int
}

// Reset forgets the user's slots with its bookings: booked again, they
// rightly get new ones.
func (l *recordingLimiter) Reset(ctx context.Context, user string) error {
	l.forget(user)
	return l.Redis.Reset(ctx, user)
}

func (l *recordingLimiter) DeleteUser(ctx context.Context, user string) error {
	l.forget(user)
	return l.Redis.DeleteUser(ctx, user)
}

// forget drops the slots recorded for user's members: its bookings are
// being deleted.
func (l *recordingLimiter) forget(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for m, u := range l.users {
		if u == user {
			delete(l.slots, m)
		}
	}
}

func (l *recordingLimiter) Reserve(ctx context.Context, user, member string) (throttle.Reservation, error) {
	r, err := l.Redis.Reserve(ctx, user, member)
	if err == nil {
		l.mu.Lock()
		if prev, ok := l.slots[member]; ok && !prev.Equal(r.At) {
			err = errors.New("recordingLimiter: member " + member + " got a different slot on re-booking")
		}
		l.slots[member] = r.At
		l.user(member, user)
		l.mu.Unlock()
	}
	return r, err
}

func (l *recordingLimiter) ReserveBatch(ctx context.Context, reqs []throttle.Request) ([]throttle.Reservation, error) {
	return l.ReserveBatchWith(ctx, reqs, nil)
}

func (l *recordingLimiter) ReserveBatchWith(ctx context.Context, reqs []throttle.Request, queue func(redis.Pipeliner)) ([]throttle.Reservation, error) {
	rs, err := l.Redis.ReserveBatchWith(ctx, reqs, queue)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.asks == nil {
		l.asks = map[string]int{}
	}
	for _, q := range reqs {
		l.asks[q.Member]++
	}
	for i, r := range rs {
		if r.Now.IsZero() || r.Refused != "" {
			continue // failed, or refused: nothing booked
		}
		if r.Collapsed != "" {
			delete(l.slots, r.Collapsed) // its booking is gone
		}
		m := reqs[i].Member
		if prev, ok := l.slots[m]; ok && !prev.Equal(r.At) && !l.agedOut(prev, r.Now) {
			err = errors.Join(err, errors.New("recordingLimiter: member "+m+" got a different slot on re-booking"))
		}
		l.slots[m] = r.At
		l.user(m, reqs[i].User)
	}
	return rs, err
}

// user notes member's user (l.mu held).
func (l *recordingLimiter) user(member, user string) {
	if l.users == nil {
		l.users = map[string]string{}
	}
	l.users[member] = user
}

// agedOut reports whether a booking at slot has left the limiter by now
// (older than every window and the gap), so that booking the member again
// rightly gets a new slot.
func (l *recordingLimiter) agedOut(slot, now time.Time) bool {
	p := l.Policy()
	horizon := p.MinGap
	for _, lim := range p.Limits {
		horizon = max(horizon, lim.Window)
	}
	return !slot.After(now.Add(-horizon))
}

func (l *recordingLimiter) Release(ctx context.Context, user, member string) (bool, error) {
	l.mu.Lock()
	l.released = append(l.released, member)
	delete(l.slots, member)
	l.mu.Unlock()
	return l.Redis.Release(ctx, user, member)
}

func (l *recordingLimiter) ReleaseBatch(ctx context.Context, hs []throttle.Held) ([]bool, error) {
	l.mu.Lock()
	for _, h := range hs {
		l.released = append(l.released, h.Member)
		delete(l.slots, h.Member)
	}
	l.mu.Unlock()
	return l.Redis.ReleaseBatch(ctx, hs)
}

// asked is how many batched requests member was in.
func (l *recordingLimiter) asked(member string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.asks[member]
}

func (l *recordingLimiter) slot(member string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.slots[member]
	return t, ok
}

// apnsToken returns a valid-looking APNs token derived from s.
func apnsToken(s string) string { return testkit.APNsToken(s) }

func alertJob(id, title string, recipients ...payload.Recipient) payload.Job {
	return testkit.AlertJob(id, title, recipients...)
}

// fcmToken returns a registration-token-like string derived from s.
func fcmToken(s string) string { return testkit.FCMToken(s) }

func apnsRecipient(user string, tokens ...string) payload.Recipient {
	return testkit.APNsRecipient(user, tokens...)
}

// checkCollapsedEvent checks that job's push to user ended with one
// collapsed event naming the job whose push replaced it (by).
func (e *env) checkCollapsedEvent(job, user, by string) {
	e.t.Helper()
	var got []Event
	for _, ev := range e.events() {
		if ev.Job == job && ev.UserID == user && ev.Reason == task.Collapsed {
			got = append(got, ev)
		}
	}
	if len(got) != 1 || got[0].ReplacedBy != by {
		e.t.Errorf("collapsed events of %s to %s: %+v, want one replaced by %s", job, user, got, by)
	}
}
