package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/semaphore"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/webhook"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// Defaults of Options: New fills a zero field with them, and hush serve's
// HUSH_* keys default to the same values (setup.DefaultConfig uses these).
const (
	DefaultConcurrency     = 50
	DefaultEventsMaxLen    = 100_000
	DefaultShutdownTimeout = 10 * time.Second
)

// DefaultHeldConcurrency is the held task slots a process has by default
// for conc delivery slots: ten times as many. A held task only sleeps
// until its slots (about a second, at most about two), and a throttled
// burst of small batches wakes many of them at once; one that waits for a
// held slot past its pushes' slots makes them book again, through delivery
// tasks, which costs Redis several times what the held task does.
func DefaultHeldConcurrency(conc int) int { return 10 * conc }

// CollapseMargin is the limiter's Options.CollapseMargin the worker needs:
// a held booking less than this from its slot is never collapsed, because
// its delivery may be past its last look at the limiter (it waits in place
// up to decide.MaxInlineWait, and sends up to decide.LateRebook after its
// slot).
const CollapseMargin = 5 * time.Second

// DefaultQueues returns the default queues and weights:
// critical:6,high:3,normal:1.
func DefaultQueues() map[string]int {
	return map[string]int{
		string(payload.PriorityCritical): 6,
		string(payload.PriorityHigh):     3,
		string(payload.PriorityNormal):   1,
	}
}

// Options configure a Worker. setup.Serve fills them from the environment; tests inject
// their own limiter and senders.
type Options struct {
	// Apps are the applications the worker delivers for. When nil, the
	// one app DefaultApp is made of Limiter, Policy and Senders.
	Apps *Apps
	// Pacer paces the sends of apps with a MaxRate across every process;
	// required when one has.
	Pacer Pacer
	// Limiter books delivery slots of DefaultApp (when Apps is nil:
	// required then). When it also implements ThrottleAdmin, the API
	// serves and resets users' limiter state.
	Limiter Limiter
	// Policy is the limiter's policy: it names rules in the API, and its
	// Categories are the job categories Enqueue accepts.
	Policy throttle.Policy
	// DefaultLocation is the time zone of a recipient without one, for the
	// quiet hours (nil: UTC).
	DefaultLocation *time.Location
	// Senders per platform. A platform without a sender fails its devices
	// permanently ("no sender configured").
	Senders map[payload.Platform]Sender
	// Queues to serve and their weights (default DefaultQueues).
	Queues map[string]int
	// DeliveryShards spreads each priority's delivery and chunk tasks over
	// this many queues (task.ShardQueue); 0 or 1: none.
	DeliveryShards int
	// Concurrency is the number of deliveries processed at once (default
	// DefaultConcurrency).
	Concurrency int
	// HeldConcurrency is the number of held tasks (hush:held,
	// hush:waiting-jobs) that may wait for their recipients' slots at once,
	// in slots of their own beside Concurrency's (default:
	// DefaultHeldConcurrency). A waiting held task holds no send permit;
	// its sends take Concurrency's.
	HeldConcurrency int
	// MaxRetry is the number of retries for transient failures (default 0:
	// none).
	MaxRetry int
	// MaxThrottled bounds the time a delivery may spend throttled by a
	// provider before it fails (0: only its expiry ends it).
	MaxThrottled time.Duration
	// Bypass lists priorities that skip the limiter.
	Bypass []payload.Priority
	// WebhookURL, when set, receives every event as a JSON POST, signed
	// with WebhookSecrets by the Standard Webhooks specification (package
	// webhook).
	WebhookURL string
	// WebhookSecrets sign every webhook POST, each adding one signature,
	// so a receiver rotating its secret accepts either. New refuses a
	// WebhookURL without them.
	WebhookSecrets []webhook.Secret
	// WebhookTypes are the event types POSTed to WebhookURL (IsEventType);
	// empty: every type. The stream holds every event whatever they are.
	WebhookTypes []string
	// WebhookRetries are the waits between a failed webhook POST and its
	// next attempt (default DefaultWebhookRetries).
	WebhookRetries []time.Duration
	// WebhookClaimAfter is how long an event a process read stays
	// unacknowledged before another process claims and posts it: the
	// time a process that died mid-POST delays its events (default
	// DefaultWebhookClaimAfter; at least a POST's timeout and its wait
	// for a free slot).
	WebhookClaimAfter time.Duration
	// EventsMaxLen caps hush:events approximately (default
	// DefaultEventsMaxLen).
	EventsMaxLen int64
	// JobRetention is how long a finished job's id answers duplicates and
	// its status stays readable (default DefaultJobRetention); every
	// process and Client of a deployment must use the same (worker/internal/store/done.go).
	JobRetention time.Duration
	// AppWait is how long a delivery waits for its app, or its app's
	// sender for a platform it needs, when this process has neither
	// (default DefaultAppWait): counted from the first time a delivery of
	// its job found it missing; after that the delivery fails, naming
	// what was missing.
	AppWait time.Duration
	// Eviction is what readiness makes of a Redis that may evict keys
	// (any maxmemory-policy but noeviction): by default (EvictionRefused)
	// the worker is not ready.
	Eviction EvictionCheck
	// ShutdownTimeout bounds how long in-flight deliveries may take after
	// Run's context is done (default DefaultShutdownTimeout); the rest are
	// handed back.
	ShutdownTimeout time.Duration
	// Logger receives the worker's logs (default: discard).
	Logger *slog.Logger
	// Metrics are collectors served beside the worker's own on
	// MetricsHandler: the process's Redis client's (setup's
	// redismetrics.Hook).
	Metrics []prometheus.Collector
	// Clock is the time the worker decides by (default: the system
	// clock); the limiter keeps its own (throttle.Options.Clock).
	Clock Clock
}

// withDefaults fills o's zero fields with the defaults above: the one place
// they are applied.
func (o Options) withDefaults() Options {
	if o.Queues == nil {
		o.Queues = DefaultQueues()
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.HeldConcurrency <= 0 {
		o.HeldConcurrency = DefaultHeldConcurrency(o.Concurrency)
	}
	if o.AppWait <= 0 {
		o.AppWait = DefaultAppWait
	}
	if o.EventsMaxLen <= 0 {
		o.EventsMaxLen = DefaultEventsMaxLen
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.JobRetention <= 0 {
		o.JobRetention = DefaultJobRetention
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.DefaultLocation == nil {
		o.DefaultLocation = time.UTC
	}
	if o.Clock == nil {
		o.Clock = task.SystemClock{}
	}
	return o
}

// Worker processes hush's Asynq tasks; worker/httpapi serves the HTTP API
// in front of it. It does not own the Redis client.
type Worker struct {
	rdb   redis.UniversalClient
	apps  *Apps
	pacer Pacer // nil: no app has a MaxRate
	// limClocks are the apps' limiterClocks, by app name.
	limClocks sync.Map

	// defaultLoc is the time zone of a recipient without one; zones caches
	// the others by name (location).
	defaultLoc *time.Location
	zones      sync.Map
	// unknownCats are the categories jobs named that the policy lacks,
	// each warned about once.
	unknownCats sync.Map
	queues      map[string]int // priority queues and weights
	shards      int            // delivery shards per priority
	conc        int
	heldConc    int
	retry       decide.RetryPolicy
	bypass      map[payload.Priority]bool
	shutdown    time.Duration
	appWait     time.Duration // Options.AppWait
	log         *slog.Logger
	store       jobStore
	m           *metrics
	events      *store.Events
	// webhook posts the events to Options.WebhookURL; nil without it.
	webhook *webhookDelivery
	rec     *store.Recorder // device outcomes as they come
	client  *Client
	insp    *asynq.Inspector
	// seconds: the hush:waiting-second tasks this process made sure of.
	seconds seconds

	// halt is cancelled by Run when in-flight provider calls must end: a
	// while after shutdown began, just before Asynq gives up on handlers.
	halt       context.Context
	cancelHalt context.CancelFunc
	// stopping is cancelled by Run when handlers must stop starting work
	// and hand their tasks back (see handling).
	stopping context.Context
	calls    tracker // provider calls under way, until their answers are recorded

	pool  *goPool             // goroutines for handlers and provider calls
	sends *semaphore.Weighted // permits for chunks' provider calls
	wave  int                 // recipients of a chunk booked and sent together

	running  atomic.Bool
	creds    credentials // when each app's credentials were last refused
	eviction *evictionWatch
	appWaits appWaits // deliveries waiting here for their app
	clock    Clock    // Options.Clock
}

// newServer is an Asynq server of conc slots serving queues, on the
// shared client through a dequeue gate of its own.
func (w *Worker) newServer(baseCtx context.Context, conc int, queues map[string]int) *asynq.Server {
	gate := newDequeueGate(w.rdb)
	gate.count = func(queue, result string) { w.m.dequeues.WithLabelValues(queue, result).Inc() }
	return asynq.NewServerFromRedisClient(gate, asynq.Config{
		Concurrency:              conc,
		BaseContext:              func() context.Context { return baseCtx },
		Queues:                   queues,
		RetryDelayFunc:           retryDelay,
		IsFailure:                isFailure,
		ErrorHandler:             asynq.ErrorHandlerFunc(w.handleError),
		ShutdownTimeout:          w.shutdown + haltAfter + 500*time.Millisecond,
		DelayedTaskCheckInterval: delayedCheck,
		TaskCheckInterval:        taskCheckInterval,
		Logger:                   asynqLogger{w.log},
		LogLevel:                 asynq.WarnLevel,
	})
}

// New returns a Worker using rdb for Asynq, job records and events.
func New(rdb redis.UniversalClient, o Options) (*Worker, error) {
	apps := o.Apps
	if apps == nil {
		if o.Limiter == nil {
			return nil, errors.New("worker: Options.Limiter (or Options.Apps) is required")
		}
		var err error
		if apps, err = NewApps(App{Name: DefaultApp, Senders: o.Senders, Limiter: o.Limiter, Policy: o.Policy}); err != nil {
			return nil, err
		}
	}
	for _, t := range o.WebhookTypes {
		if !IsEventType(t) {
			return nil, fmt.Errorf("worker: Options.WebhookTypes: want each of %s, got %q", EventTypesText(), t)
		}
	}
	if o.WebhookURL != "" && len(o.WebhookSecrets) == 0 {
		return nil, errors.New("worker: Options.WebhookURL needs Options.WebhookSecrets: hush signs every webhook POST")
	}
	if o.Pacer == nil {
		for _, name := range apps.Names() {
			if a, _ := apps.Get(name); len(a.MaxRate) > 0 {
				return nil, fmt.Errorf("worker: app %q has a max rate: Options.Pacer is required", name)
			}
		}
	}
	o = o.withDefaults()
	m := newMetrics()
	w := &Worker{
		rdb:   rdb,
		apps:  apps,
		pacer: o.Pacer,

		defaultLoc: o.DefaultLocation,
		queues:     o.Queues,
		shards:     max(1, o.DeliveryShards),
		conc:       o.Concurrency,
		heldConc:   o.HeldConcurrency,
		retry:      decide.RetryPolicy{MaxRetry: o.MaxRetry, MaxThrottled: o.MaxThrottled},
		bypass:     map[payload.Priority]bool{},
		shutdown:   o.ShutdownTimeout,
		appWait:    o.AppWait,
		log:        o.Logger,
		store:      newStore(rdb, o.JobRetention),
		m:          m,
		client:     NewClient(rdb, WithJobRetention(o.JobRetention), WithShards(o.DeliveryShards), WithClock(o.Clock.Now)),
		insp:       asynq.NewInspectorFromRedisClient(rdb),
		pool:       newGoPool(),
		sends:      semaphore.NewWeighted(int64(o.Concurrency)),
		wave:       min(maxWave, o.Concurrency),
		clock:      o.Clock,
	}
	w.store.clock, w.seconds.clock = o.Clock.Now, o.Clock.Now
	w.eviction = &evictionWatch{rdb: rdb, check: o.Eviction, log: o.Logger}
	for _, p := range o.Bypass {
		w.bypass[p] = true
	}
	w.halt, w.cancelHalt = context.WithCancel(context.Background())
	w.stopping = context.Background() // Run replaces it; tests call handlers directly
	w.events = newEvents(rdb, o.EventsMaxLen, m)
	w.rec = store.NewRecorder(rdb, w.events)
	w.store.records = store.NewRecordBatcher(rdb, w.events)
	w.store.held = w.rec
	if o.WebhookURL != "" {
		w.webhook = newWebhookDelivery(rdb, o.WebhookURL, o.WebhookSecrets, o.WebhookRetries, o.Logger, m)
		w.webhook.types = typeSet(o.WebhookTypes)
		if o.WebhookClaimAfter > 0 {
			w.webhook.claimIdle = o.WebhookClaimAfter
		}
	}
	w.client.m = m
	w.client.apps = apps
	w.client.log = o.Logger
	m.reg.MustRegister(newQueueCollector(w.insp, o.Queues, w.shards, o.Logger), newConnCollector(apps), apps.Reloads(), newAppWaitCollector(&w.appWaits, w.now))
	for _, c := range o.Metrics {
		if err := m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("worker: Options.Metrics: %w", err)
		}
	}
	return w, nil
}

// Client returns the worker's job client (sharing its Redis client).
func (w *Worker) Client() *Client { return w.client }

// DefaultLocation is the time zone of a recipient without one
// (Options.DefaultLocation, else UTC).
func (w *Worker) DefaultLocation() *time.Location { return w.defaultLoc }

// Run processes tasks until ctx is done, then stops taking work, lets
// in-flight deliveries finish for up to ShutdownTimeout and hands the rest
// back to their queues. It returns nil after a clean shutdown.
func (w *Worker) Run(ctx context.Context) error {
	// Handlers run under their own context, cancelled shortly before Asynq
	// gives up on them, so a delivery waiting for its slot returns and is
	// handed back (not a failure) instead of being abandoned mid-send.
	//
	// Asynq must not see that cancellation: it treats a task whose context
	// is done as failed at once and schedules its retry while the handler
	// still runs, so another process could re-run a chunk whose provider
	// answers were still on their way and send them again. Asynq's context
	// is therefore never cancelled by shutdown; handlers watch stopping
	// (handling) and return, with every answer recorded, before Asynq hands
	// the task back.
	baseCtx := context.WithoutCancel(ctx)
	// Each run has its own halt and stopping: a Worker run again after a
	// shutdown (as tests do) must not find them cancelled from the start.
	w.halt, w.cancelHalt = context.WithCancel(context.Background())
	var cancelHandlers context.CancelFunc
	w.stopping, cancelHandlers = context.WithCancel(context.Background())
	defer cancelHandlers()

	// Shard queues left by a deployment with more shards are served too.
	existing, err := w.insp.Queues()
	if err != nil {
		return fmt.Errorf("list queues: %w", err)
	}
	queues := task.ServedQueues(w.queues, w.shards, existing)
	heldQueues := task.ServedHeldQueues(w.queues, w.shards, existing)
	// Read the eviction policy now, so its warning is logged at start.
	w.ReadyWarnings(ctx)

	// Two Asynq servers run on the shared client, each through a gate that
	// spares its dequeues the queues it just found empty (dequeue.go): one
	// for deliveries, chunks, jobs and batches, and one for held tasks,
	// which wait in their handlers for their slots in slots of their own
	// (task.HeldQueuePrefix).
	srv := w.newServer(baseCtx, w.conc, queues)
	held := w.newServer(baseCtx, w.heldConc, heldQueues)
	mux, heldMux := w.serveMuxes()
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("start task server: %w", err)
	}
	if err := held.Start(heldMux); err != nil {
		srv.Shutdown()
		return fmt.Errorf("start held task server: %w", err)
	}
	w.running.Store(true)
	if w.webhook != nil {
		done := make(chan struct{})
		go func() { defer close(done); w.webhook.run(ctx) }()
		defer func() { <-done }()
	}
	w.log.Info("worker running", "queues", task.SortedQueues(queues), "concurrency", w.conc,
		"held_queues", task.SortedQueues(heldQueues), "held_concurrency", w.heldConc)

	<-ctx.Done()
	w.running.Store(false)
	w.log.Info("worker stopping: no new tasks, finishing in-flight deliveries", "timeout", w.shutdown)
	// At ShutdownTimeout handlers are told to stop starting sends and hand
	// their deliveries back; provider calls already under way go on, so
	// an answer on its way is recorded rather than sent again, until
	// haltAfter later, just before Asynq stops waiting for handlers. Both
	// count from the signal: an Asynq server's Stop waits for its fetch
	// loop, which may be sleeping between polls of empty queues (up to
	// 375 ms) or in a dequeue's round trip, so timers started after the
	// two Stops ran late by that much, and a held task waiting for a slot
	// inside that delay sent after the timeout had passed.
	stop := time.AfterFunc(w.shutdown, cancelHandlers)
	defer stop.Stop()
	halt := time.AfterFunc(w.shutdown+haltAfter, w.cancelHalt)
	defer halt.Stop()
	// Both stop fetching, then wait for their handlers, side by side.
	heldDone := make(chan struct{})
	go func() {
		defer close(heldDone)
		held.Stop()
		held.Shutdown()
	}()
	srv.Stop()
	srv.Shutdown()
	<-heldDone
	// Asynq may have stopped waiting for a handler whose provider call or
	// outcome write is still under way: wait for those, so every answer
	// the providers gave is recorded before the process exits.
	callsDone := w.calls.wait(haltAfter + time.Second)
	// Waited for even when some call hangs: the answers already in must
	// still be written.
	if err := w.drainRecords(); !callsDone || err != nil {
		w.log.Error("worker stopped with provider answers not recorded; those devices may get their push again")
	}
	w.cancelHalt()
	w.log.Info("worker stopped")
	return nil
}

// serveMuxes are the handlers of the two task servers: mux the delivery
// server's, for deliveries, chunks, jobs and batches and the task types
// only earlier builds make (legacy.go), and held the held server's.
func (w *Worker) serveMuxes() (mux, held *asynq.ServeMux) {
	mux = asynq.NewServeMux()
	mux.HandleFunc(TypeJob, w.handleJob)
	mux.HandleFunc(TypeDelivery, w.handleDelivery)
	mux.HandleFunc(TypeGroupingChunk, w.handleChunk)
	mux.HandleFunc(task.TypeRereadingChunk, w.handleChunk)
	mux.HandleFunc(TypeBatch, w.handleBatch)
	for _, l := range legacyTasks() {
		mux.HandleFunc(l.typ, func(ctx context.Context, t *asynq.Task) error { return l.handle(w, ctx, t) })
	}
	held = asynq.NewServeMux()
	held.HandleFunc(TypeHeld, w.handleChunk)
	held.HandleFunc(TypeWaitingJobs, w.handleWaitingJobs)
	held.HandleFunc(TypeWaitingSecond, w.handleWaitingSecond)
	return mux, held
}

// drainRecords writes the device outcomes and chunk records waiting in
// group commits and waits for every such write under way, for up to
// store.RecordTimeout in all.
func (w *Worker) drainRecords() error {
	ctx, cancel := context.WithTimeout(context.Background(), store.RecordTimeout)
	defer cancel()
	return errors.Join(w.rec.Drain(ctx), w.store.records.Drain(ctx))
}

// haltAfter is how long provider calls under way may go on after handlers
// were told to stop; Asynq waits haltAfter+500ms longer than that.
const haltAfter = 1500 * time.Millisecond

// handleError logs real failures once; deferrals, provider throttling and
// hand-backs are expected and not logged as errors.
func (w *Worker) handleError(ctx context.Context, t *asynq.Task, err error) {
	if !isFailure(err) {
		return
	}
	id, _ := asynq.GetTaskID(ctx)
	retried, _ := asynq.GetRetryCount(ctx)
	level := slog.LevelWarn
	if errors.Is(err, asynq.SkipRetry) {
		level = slog.LevelError
	}
	w.log.Log(ctx, level, "task failed", "type", t.Type(), "task", id, "retried", retried, "err", err)
}

// asynqLogger routes Asynq's own logs to slog.
type asynqLogger struct{ log *slog.Logger }

func (l asynqLogger) Debug(args ...any) { l.log.Debug(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Info(args ...any)  { l.log.Info(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Warn(args ...any)  { l.log.Warn(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Error(args ...any) { l.log.Error(fmt.Sprint(args...), "component", "asynq") }
func (l asynqLogger) Fatal(args ...any) { l.log.Error(fmt.Sprint(args...), "component", "asynq") }

// handle runs task t with run on a pool goroutine (see goPool), under the
// context handling gives it: what every task handler does.
func (w *Worker) handle(ctx context.Context, t *asynq.Task, run func(context.Context, *asynq.Task) error) (err error) {
	w.pool.Run(func() {
		ctx, done := w.handling(ctx)
		defer done()
		err = run(ctx, t)
	})
	return err
}

// handling is the context a handler works under: Asynq's task context,
// also cancelled when Run tells handlers to stop (stopping) and taskMargin
// before the task's own deadline (its Asynq Timeout). done releases it.
//
// Either way the handler hands its task back (context.Canceled, not a
// failure) after recording every answer of the provider calls it started.
// Asynq must not reach the deadline first: it fails a task whose context
// is done at once and schedules its retry while the handler may still be
// waiting for a provider's answer, so a retry elsewhere could send again.
func (w *Worker) handling(ctx context.Context) (_ context.Context, done func()) {
	ctx, cancel := context.WithCancel(ctx)
	unwatch := context.AfterFunc(w.stopping, cancel)
	stopTimer := func() bool { return false }
	if deadline, ok := ctx.Deadline(); ok {
		stopTimer = time.AfterFunc(time.Until(deadline.Add(-taskMargin)), cancel).Stop
	}
	return ctx, func() { stopTimer(); unwatch(); cancel() }
}

// taskMargin is how long before its task's Asynq deadline a handler stops
// starting work: a provider call started just before has sendTimeout to
// answer and its outcome store.RecordTimeout to be written, and the handler a few
// seconds to return.
const taskMargin = sendTimeout + store.RecordTimeout + 5*time.Second
