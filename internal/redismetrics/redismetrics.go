// Package redismetrics counts the commands a go-redis client sends and
// times its round trips, as Prometheus metrics: Hook is both the client's
// hook (AddHook) and a prometheus.Collector. It imports the standard
// library, go-redis and the Prometheus client only.
package redismetrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// The results a command is counted under (hush_redis_commands_total).
const (
	ResultOK         = "ok"          // Redis answered
	ResultNil        = "nil"         // Redis answered nil (a key or a value that is not there)
	ResultNoScript   = "noscript"    // Redis did not know a script's digest; go-redis sends its source next
	ResultReplyError = "reply_error" // Redis answered an error (OOM, READONLY, WRONGTYPE, a script's own)
	ResultCanceled   = "canceled"    // the caller's context was cancelled before the answer
	ResultError      = "error"       // no answer: dial, I/O, a timeout, a full pool, a closed client
)

var results = []string{ResultOK, ResultNil, ResultNoScript, ResultReplyError, ResultCanceled, ResultError}

// roundTripBuckets span a Redis on the same host (tens of microseconds) to
// a client waiting out its read timeout.
var roundTripBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Hook counts each command a client sends by its result and observes the
// time of each command and each pipeline, go-redis's retries and its wait
// for a pooled connection included. Commands that never reach the client
// (a wrapper answering for Redis) are not seen, and neither are those
// that set up a new connection (setUp): a failed set-up fails the command
// that needed the connection, which counts it.
type Hook struct {
	commands  *prometheus.CounterVec
	byResult  map[string]prometheus.Counter
	roundTrip prometheus.Histogram
}

// New returns a Hook whose counters all start at zero, so an alert on one
// result has a series before the first such command.
func New() *Hook {
	h := &Hook{
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hush_redis_commands_total",
			Help: "Commands this process sent to Redis, each command of a pipeline counted, by result: ok, nil (answered nil), noscript (a script's digest unknown: its source follows), reply_error (Redis answered an error: OOM, READONLY, a script's), canceled (the caller gave up), error (no answer: dial, I/O, timeout, pool).",
		}, []string{"result"}),
		byResult: make(map[string]prometheus.Counter, len(results)),
		roundTrip: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hush_redis_round_trip_seconds",
			Help:    "Time from a command, or a pipeline, handed to the Redis client until its answer: one round trip, plus the wait for a pooled connection and go-redis's retries when there were any.",
			Buckets: roundTripBuckets,
		}),
	}
	for _, r := range results {
		h.byResult[r] = h.commands.WithLabelValues(r)
	}
	return h
}

// Result classifies a command's error for hush_redis_commands_total.
func Result(err error) string {
	var re redis.Error
	switch {
	case err == nil:
		return ResultOK
	case errors.Is(err, redis.Nil):
		return ResultNil
	case redis.HasErrorPrefix(err, "NOSCRIPT"):
		return ResultNoScript
	case errors.As(err, &re):
		return ResultReplyError
	case errors.Is(err, context.Canceled):
		return ResultCanceled
	}
	return ResultError
}

// DialHook leaves dialling alone: a failed dial fails the command that
// needed the connection, which counts it.
func (h *Hook) DialHook(next redis.DialHook) redis.DialHook { return next }

// setUp reports whether cmd is one go-redis sends to set up a new
// connection (HELLO, AUTH, SELECT, CLIENT SETINFO), which hush itself never
// sends: Redis before 7.2 answers CLIENT SETINFO with an error on every
// new connection, which is no failure of the workload's.
func setUp(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "select", "client":
		return true
	}
	return false
}

// ProcessHook counts and times one command.
func (h *Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if setUp(cmd) {
			return next(ctx, cmd)
		}
		start := time.Now()
		err := next(ctx, cmd)
		h.roundTrip.Observe(time.Since(start).Seconds())
		h.byResult[Result(err)].Inc()
		return err
	}
}

// ProcessPipelineHook times a pipeline (or a transaction) as one round trip
// and counts each of its commands by its own result.
func (h *Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && setUp(cmds[0]) {
			return next(ctx, cmds)
		}
		start := time.Now()
		err := next(ctx, cmds)
		h.roundTrip.Observe(time.Since(start).Seconds())
		for _, cmd := range cmds {
			// go-redis sets a failed round trip's error on every command
			// of the pipeline.
			h.byResult[Result(cmd.Err())].Inc()
		}
		return err
	}
}

// Describe implements prometheus.Collector.
func (h *Hook) Describe(ch chan<- *prometheus.Desc) {
	h.commands.Describe(ch)
	h.roundTrip.Describe(ch)
}

// Collect implements prometheus.Collector.
func (h *Hook) Collect(ch chan<- prometheus.Metric) {
	h.commands.Collect(ch)
	h.roundTrip.Collect(ch)
}
