package httpapi

import (
	"context"
	"log/slog"
	"maps"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker"
)

// env is the API in front of a real Worker, built as setup builds it: a
// private redis-server (Asynq uses fixed key names), the Redis limiter,
// and senders that report every push delivered.
type env struct {
	t    *testing.T
	rdb  *redis.Client
	lim  *throttle.Redis
	w    *worker.Worker
	opts Options
}

type envOptions struct {
	limits, gap string // default "100/1m", "0s"
	token       string
	maxBody     int64
	noRun       bool // the worker's tasks are not run: jobs stay queued
	// senders are added to the senders that report every push delivered.
	senders map[payload.Platform]worker.Sender
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	if o.limits == "" {
		o.limits = "100/1m"
	}
	if o.gap == "" {
		o.gap = "0s"
	}
	rdb := redistest.Start(t).Client(t)
	policy, err := throttle.ParsePolicy(o.limits, o.gap)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := throttle.NewRedis(rdb, policy, throttle.Options{CollapseMargin: worker.CollapseMargin})
	if err != nil {
		t.Fatal(err)
	}
	ss := senders()
	maps.Copy(ss, o.senders)
	w, err := worker.New(rdb, worker.Options{Limiter: lim, Policy: policy, Senders: ss, Concurrency: 10,
		ShutdownTimeout: 3 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, rdb: rdb, lim: lim, w: w, opts: Options{Token: o.token, MaxBodyBytes: o.maxBody, Logger: testLogger(t)}}
	if !o.noRun {
		e.run()
	}
	return e
}

// run runs the worker until the test ends.
func (e *env) run() {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- e.w.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			e.t.Errorf("Run: %v", err)
		}
	})
	testkit.WaitFor(e.t, 10*time.Second, "worker ready", func() bool { return len(e.w.NotReady(ctx)) == 0 })
}

// server serves the API in front of w with the env's options until the
// test ends.
func (e *env) server() *httptest.Server {
	return serve(e.t, e.w, e.opts)
}

// serve serves the API in front of w with o until the test ends.
func serve(t *testing.T, w *worker.Worker, o Options) *httptest.Server {
	srv := httptest.NewServer(New(w, w.Client(), o))
	t.Cleanup(srv.Close)
	return srv
}

// submit enqueues job and fails the test on error.
func (e *env) submit(job payload.Job) string {
	e.t.Helper()
	acc, err := e.w.Client().Enqueue(context.Background(), job)
	if err != nil {
		e.t.Fatalf("Enqueue: %v", err)
	}
	return acc.ID
}

// waitDone waits until every recipient of the job has a final state.
func (e *env) waitDone(id string, timeout time.Duration) {
	e.t.Helper()
	testkit.WaitFor(e.t, timeout, "job "+id+" done", func() bool {
		st, err := e.w.Client().Status(context.Background(), id)
		return err == nil && st.State == wire.StateDone
	})
}

// delivered is a sender for every platform that reports each push
// delivered.
type delivered struct{}

func (delivered) Send(context.Context, providers.Push) providers.Result {
	return providers.Result{Outcome: providers.Delivered}
}

func senders() map[payload.Platform]worker.Sender {
	return map[payload.Platform]worker.Sender{payload.APNs: delivered{}, payload.FCM: delivered{}}
}

// testLogger writes the logs to the test log when HUSH_TEST_LOG is set,
// else discards them.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("HUSH_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// apnsToken returns a valid-looking APNs token derived from s.
func apnsToken(s string) string { return testkit.APNsToken(s) }

func alertJob(id, title string, recipients ...payload.Recipient) payload.Job {
	return testkit.AlertJob(id, title, recipients...)
}

func apnsRecipient(user string, tokens ...string) payload.Recipient {
	return testkit.APNsRecipient(user, tokens...)
}
