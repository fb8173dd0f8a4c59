package worker

import (
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hushpush/hush/worker/internal/task"
)

// MetricsHandler serves the worker's Prometheus metrics (GET /metrics).
func (w *Worker) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(w.m.reg, promhttp.HandlerOpts{Registry: w.m.reg})
}

// metrics are the worker's Prometheus instruments, on a private registry.
type metrics struct {
	reg           *prometheus.Registry
	deviceSends   *prometheus.CounterVec // hush_device_sends_total
	lateSends     *prometheus.CounterVec // hush_late_sends_total
	deliveries    *prometheus.CounterVec // hush_deliveries_total
	limiter       *prometheus.CounterVec
	deferral      prometheus.Histogram
	latency       *prometheus.HistogramVec
	jobs          *prometheus.CounterVec
	eventsDropped *prometheus.CounterVec
	webhookPosts  *prometheus.CounterVec
	dequeues      *prometheus.CounterVec // hush_dequeues_total
	taskJobs      prometheus.Histogram   // hush_submit_task_jobs
	// credentialRefusals counts provider answers that refused the app's
	// credentials (Result.Credential): hush_credential_refusals_total.
	credentialRefusals *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		deviceSends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hush_device_sends_total",
			Help: "Provider answers per device, by app, platform and outcome (delivered, token_invalid, throttled, transient, permanent).",
		}, []string{"app", "platform", "outcome"}),
		lateSends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hush_late_sends_total",
			Help: "Device calls not made because they would have left after their send-by time (more than 100 ms after the booked slot, or 3 s after the job's cancellation was read): the process was late (overloaded CPU, a pause, a slow Redis); each delivery is booked again and sent at its new slot. A delivery found that late before its call counts as the rebooked limiter decision instead. By app and platform.",
		}, []string{"app", "platform"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hush_deliveries_total",
			Help: "Deliveries (one per recipient) that reached a final state, by app: " + strings.Join(task.FinalStates(), ", ") + ".",
		}, []string{"app", "state"}),
		limiter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hush_limiter_decisions_total",
			Help: "Limiter decisions for deliveries: allowed (slot now), waited (short wait in the worker), deferred (handed back to the queue until the slot), bypass (priority skips the limiter), expired (slot after the deadline), full (the user holds HUSH_THROTTLE_MAX_PENDING bookings), collapsed (a newer push with the same collapse key took the booking's place), opted_out (the user opted out of the push's category), paced (held past its slot by its app's max rate, booked again from its turn), rebooked (a late booking or a retry booked again); by app.",
		}, []string{"app", "decision"}),
		deferral: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hush_deferral_delay_seconds",
			Help:    "Time from a limiter decision to the booked slot, for deliveries that had to wait.",
			Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400},
		}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hush_provider_latency_seconds",
			Help:    "Duration of one provider send, by platform.",
			Buckets: prometheus.DefBuckets,
		}, []string{"app", "platform"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hush_jobs_submitted_total",
			Help: "Jobs submitted through this process, by result (accepted, duplicate, invalid).",
		}, []string{"result"}),
		webhookPosts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hush_webhook_posts_total",
			Help: "Webhook POST attempts by what followed: delivered (a 2xx), retry (failed, tried again on the schedule), given_up (its last attempt failed, or too many wait), disabled (a 410, or failures beyond the schedule, disabled the endpoint), lost (trimmed from hush:events before a process claimed it).",
		}, []string{"outcome"}),
		eventsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hush_events_dropped_total",
			Help: "Events that could not be written to hush:events (sink stream); the webhook's attempts are hush_webhook_posts_total.",
		}, []string{"sink"}),
		dequeues: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hush_dequeues_total",
			Help: "Asynq's attempts to take a task from a queue, by queue and result: task, empty (Redis had none), spared (the queue had just answered empty: not asked), error.",
		}, []string{"queue", "result"}),
	}
	m.taskJobs = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "hush_submit_task_jobs",
		Help:    "Jobs per queue task written by this process's submissions: 1 for a job written alone (its own hush:job task), up to 100 for a hush:batch task of a batch or of gathered submissions.",
		Buckets: []float64{1, 2, 5, 10, 25, 50, 100},
	})
	m.credentialRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hush_credential_refusals_total",
		Help: "Provider answers that refused the app's credentials (an APNs key or certificate, an FCM service account, a VAPID key): the deliveries retry until the credentials are fixed or HUSH_MAX_RETRY is spent. Also counted as permanent in hush_device_sends_total. By app and platform.",
	}, []string{"app", "platform"})
	m.reg.MustRegister(m.credentialRefusals, m.deviceSends, m.lateSends, m.deliveries, m.limiter, m.deferral, m.latency, m.jobs, m.eventsDropped, m.webhookPosts, m.dequeues, m.taskJobs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// queueCollector reports queue depths from the Asynq Inspector at scrape
// time.
type queueCollector struct {
	insp    *asynq.Inspector
	weights map[string]int // the priority queues served
	shards  int            // delivery shards per priority
	log     *slog.Logger
	depth   *prometheus.Desc
	latency *prometheus.Desc
}

func newQueueCollector(insp *asynq.Inspector, weights map[string]int, shards int, log *slog.Logger) *queueCollector {
	return &queueCollector{
		insp:    insp,
		weights: weights,
		shards:  shards,
		log:     log,
		depth: prometheus.NewDesc("hush_queue_tasks",
			"Tasks in each Asynq queue by state (pending, active, scheduled, retry, archived).",
			[]string{"queue", "state"}, nil),
		latency: prometheus.NewDesc("hush_queue_latency_seconds",
			"Age of the oldest pending task in each Asynq queue (0 when none is pending): how long the next task has waited for a worker.",
			[]string{"queue"}, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.depth; ch <- c.latency }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	known, err := c.insp.Queues()
	if err != nil {
		c.log.Warn("queue depth unavailable", "err", err)
		return
	}
	served := task.ServedQueues(c.weights, c.shards, known)
	maps.Copy(served, task.ServedHeldQueues(c.weights, c.shards, known))
	for _, q := range task.SortedQueues(served) {
		info := &asynq.QueueInfo{Queue: q}
		if slices.Contains(known, q) {
			info, err = c.insp.GetQueueInfo(q)
		}
		if err != nil {
			c.log.Warn("queue depth unavailable", "queue", q, "err", err)
			continue
		}
		for state, n := range map[string]int{
			"pending": info.Pending, "active": info.Active, "scheduled": info.Scheduled,
			"retry": info.Retry, "archived": info.Archived,
		} {
			ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(n), q, state)
		}
		ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, info.Latency.Seconds(), q)
	}
}
