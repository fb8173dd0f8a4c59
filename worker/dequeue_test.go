package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/payload"
)

func TestDequeueQueue(t *testing.T) {
	keys := func(q string, kinds ...string) []string {
		var out []string
		for _, k := range kinds {
			out = append(out, "asynq:{"+q+"}:"+k)
		}
		return out
	}
	tests := []struct {
		name  string
		keys  []string
		queue string
	}{
		{"dequeue", keys("normal", "pending", "paused", "active", "lease"), "normal"},
		{"shard queue", keys("critical.3", "pending", "paused", "active", "lease"), "critical.3"},
		{"other script on pending", keys("normal", "pending", "archived"), ""},
		{"five keys", keys("normal", "pending", "paused", "active", "lease", "deadlines"), ""},
		{"keys of two queues", append(keys("normal", "pending"), keys("high", "paused", "active", "lease")...), ""},
		{"not asynq", []string{"hush:{normal}:pending", "asynq:{normal}:paused", "asynq:{normal}:active", "asynq:{normal}:lease"}, ""},
		{"no keys", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, ok := dequeueQueue(tt.keys)
			if q != tt.queue || ok != (tt.queue != "") {
				t.Errorf("dequeueQueue(%q) = %q, %v; want %q", tt.keys, q, ok, tt.queue)
			}
		})
	}
}

// TestDequeueGatePauses: a queue that answers empty is spared for a pause
// that doubles up to idleMax, one probe at a time; a task (or a queue never
// found empty) lets every dequeue through; an error changes nothing.
func TestDequeueGatePauses(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	g := newDequeueGate(nil)
	g.now = func() time.Time { return now }
	step := func(d time.Duration) { now = now.Add(d) }

	for range 2 {
		if !g.admit("normal") {
			t.Fatal("a queue never found empty is not probed on every dequeue")
		}
	}
	g.answered("normal", nil)

	want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond,
		16 * time.Millisecond, idleMax, idleMax}
	g.answered("critical", redis.Nil)
	for i, pause := range want {
		if g.admit("critical") {
			t.Fatalf("empty answer %d: probed at once, want a pause of %v", i+1, pause)
		}
		step(pause - time.Microsecond)
		if g.admit("critical") {
			t.Fatalf("empty answer %d: probed before its pause of %v ended", i+1, pause)
		}
		step(time.Microsecond)
		if !g.admit("critical") {
			t.Fatalf("empty answer %d: not probed once its pause of %v ended", i+1, pause)
		}
		if g.admit("critical") {
			t.Fatalf("empty answer %d: a second probe while one is under way", i+1)
		}
		g.answered("critical", redis.Nil)
	}

	// An error (Redis unreachable) ends the probe and keeps the pause.
	step(idleMax)
	if !g.admit("critical") {
		t.Fatal("not probed after idleMax")
	}
	g.answered("critical", errors.New("connection refused"))
	if !g.admit("critical") {
		t.Fatal("after an error: not probed again")
	}
	g.answered("critical", nil) // a task
	for range 3 {
		if !g.admit("critical") {
			t.Fatal("after a task: a dequeue was spared")
		}
	}
	g.answered("critical", redis.Nil)
	step(time.Millisecond)
	if !g.admit("critical") {
		t.Fatal("after a task then empty: the pause did not start again at idleFirst")
	}
	if !g.admit("normal") {
		t.Fatal("another queue's pause spared normal")
	}
}

// dequeueProbes counts the dequeue scripts that reach Redis, by queue
// (not an EVALSHA answered NOSCRIPT: the EVAL that follows is the same
// dequeue).
type dequeueProbes struct {
	mu sync.Mutex
	n  map[string]int
}

func (p *dequeueProbes) DialHook(next redis.DialHook) redis.DialHook { return next }
func (p *dequeueProbes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		err := next(ctx, c)
		if redis.HasErrorPrefix(err, "NOSCRIPT") || redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			return err
		}
		args := c.Args()
		if name := c.Name(); (name == "evalsha" || name == "eval") && len(args) >= 7 && fmt.Sprint(args[2]) == "4" {
			keys := []string{fmt.Sprint(args[3]), fmt.Sprint(args[4]), fmt.Sprint(args[5]), fmt.Sprint(args[6])}
			if q, ok := dequeueQueue(keys); ok {
				p.mu.Lock()
				p.n[q]++
				p.mu.Unlock()
			}
		}
		return err
	}
}
func (p *dequeueProbes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (p *dequeueProbes) of(queues ...string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, q := range queues {
		n += p.n[q]
	}
	return n
}

// probeBound is the most dequeues of one queue that stays empty the gate
// lets through in d on a server of concurrency conc: the first probes of
// every token, under way before the first answer, then pauses ramping up
// from idleFirst (5 probes before they reach idleMax), then at most one
// probe per idleMax.
func probeBound(d time.Duration, conc int) int { return conc + 6 + int(d/idleMax) }

// TestDequeueGateSparesEmptyQueues runs a real Asynq server through the
// gate with the default weights and every task on normal: the two empty
// queues, which Asynq used to probe before normal on most dequeues (about
// 1.7 probes a task), are probed at most once per idleMax; and tasks that
// reach them afterwards are still taken.
func TestDequeueGateSparesEmptyQueues(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	probes := &dequeueProbes{n: map[string]int{}}
	rdb.AddHook(probes) // below the gate: it sees what reaches Redis

	const tasks = 2000
	var done atomic.Int64
	var mu sync.Mutex
	took := map[string]int{}
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(ctx context.Context, task *asynq.Task) error {
		q, _ := asynq.GetQueueName(ctx)
		mu.Lock()
		took[q]++
		mu.Unlock()
		done.Add(1)
		return nil
	})
	aq := enqueueNormal(t, rdb, "noop", tasks)
	start := time.Now()
	startGated(t, rdb, mux)
	waitFor(t, 60*time.Second, "the normal tasks", func() bool { return done.Load() == tasks })
	elapsed := time.Since(start)
	empty := probes.of("critical", "high")
	t.Logf("%d tasks in %v: %d dequeues of normal, %d of the empty queues (%.3f a task)",
		tasks, elapsed.Round(time.Millisecond), probes.of("normal"), empty, float64(empty)/tasks)
	if bound := 2 * probeBound(elapsed, 10); empty > bound {
		t.Errorf("the empty queues were probed %d times in %v, want at most %d (one per %v each after the ramp)", empty, elapsed, bound, idleMax)
	}

	// Tasks reaching the queues found empty are taken.
	for _, q := range []string{"critical", "high"} {
		if _, err := aq.Enqueue(asynq.NewTask("noop", nil), asynq.Queue(q)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "the critical and high tasks", func() bool { return done.Load() == tasks+2 })
	mu.Lock()
	defer mu.Unlock()
	if took["critical"] != 1 || took["high"] != 1 || took["normal"] != tasks {
		t.Errorf("tasks taken by queue %v, want critical 1, high 1, normal %d", took, tasks)
	}
}

// TestWorkerSparesEmptyQueues: the worker's own Asynq server runs through
// the gate: single-recipient jobs on normal, with critical and high served
// and empty, probe those at most once per idleMax.
func TestWorkerSparesEmptyQueues(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	probes := &dequeueProbes{n: map[string]int{}}
	e.rdb.AddHook(probes)
	const jobs = 300
	ids := make([]string, jobs)
	for i := range jobs {
		job := alertJob(fmt.Sprint("gate-", i), "g", apnsRecipient(fmt.Sprint("u-", i), apnsToken(fmt.Sprint("gate-", i))))
		job.Priority = payload.PriorityNormal
		ids[i] = e.submit(job)
	}
	start := time.Now()
	e.start()
	t.Cleanup(e.shutdown)
	for _, id := range ids {
		e.waitDone(id, 60*time.Second)
	}
	elapsed := time.Since(start)
	empty := probes.of("critical", "high")
	t.Logf("%d jobs in %v: %d dequeues of normal, %d of the empty queues", jobs, elapsed.Round(time.Millisecond), probes.of("normal"), empty)
	if bound := 2 * probeBound(elapsed, e.opts.Concurrency); empty > bound {
		t.Errorf("the empty queues were probed %d times in %v, want at most %d", empty, elapsed, bound)
	}
	// hush_dequeues_total: what reached Redis, and what was spared.
	e.shutdown()
	count := func(q, result string) int {
		return int(testutil.ToFloat64(e.w.m.dequeues.WithLabelValues(q, result)))
	}
	for _, q := range []string{"critical", "high", "normal"} {
		// A dequeue under way when Run returned is counted as it ends.
		asked := func() int { return count(q, "task") + count(q, "empty") + count(q, "error") }
		waitFor(t, 5*time.Second, q+": hush_dequeues_total counting every dequeue Redis saw", func() bool {
			return asked() == probes.of(q)
		})
	}
	if n := count("normal", "task"); n != jobs {
		t.Errorf("hush_dequeues_total{queue=normal,result=task} %d, want %d", n, jobs)
	}
	if n := count("critical", "spared") + count("high", "spared"); n == 0 {
		t.Error("hush_dequeues_total counts no dequeue spared")
	}
}

// TestDequeuePausesDocumented: docs/job.md states the gate's pauses and
// the idle wait the worker gives Asynq.
func TestDequeuePausesDocumented(t *testing.T) {
	page, err := os.ReadFile("../docs/job.md")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(page)), " ")
	for _, want := range []string{
		fmt.Sprintf("skipped for a pause of %d ms, doubling on each empty answer up to %d ms", idleFirst.Milliseconds(), idleMax.Milliseconds()),
		fmt.Sprintf("waits up to %d ms longer to be taken", idleMax.Milliseconds()),
		fmt.Sprintf("asks again every %d to %d ms", (taskCheckInterval / 2).Milliseconds(), (taskCheckInterval * 3 / 2).Milliseconds()),
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("docs/job.md does not say %q", want)
		}
	}
}

// TestDequeueGateKeepsPriority: a critical task that reaches its queue
// after the gate found it empty, while normal is flooded, is still taken
// ahead of the normal backlog (within a pause or so), not after it.
func TestDequeueGateKeepsPriority(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const backlog = 3000
	var normal atomic.Int64
	tookCritical := make(chan int64, 1)
	mux := asynq.NewServeMux()
	mux.HandleFunc("work", func(ctx context.Context, task *asynq.Task) error {
		if q, _ := asynq.GetQueueName(ctx); q == "critical" {
			tookCritical <- normal.Load()
			return nil
		}
		time.Sleep(2 * time.Millisecond) // the work being simulated: a backlog that lasts at least 600 ms at concurrency 10
		normal.Add(1)
		return nil
	})
	aq := enqueueNormal(t, rdb, "work", backlog)
	gate := startGated(t, rdb, mux)
	waitFor(t, 30*time.Second, "critical found empty long enough to be spared the longest pause", func() bool {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		iq := gate.idle["critical"]
		return iq != nil && iq.wait == idleMax
	})
	if _, err := aq.Enqueue(asynq.NewTask("work", nil), asynq.Queue("critical")); err != nil {
		t.Fatal(err)
	}
	enqueuedAt := normal.Load()
	select {
	case at := <-tookCritical:
		t.Logf("critical taken after %d normal tasks (%d when it was enqueued, of %d)", at, enqueuedAt, backlog)
		if enqueuedAt > backlog/4 {
			t.Fatalf("the backlog was mostly done (%d of %d) before critical was enqueued: the test proves nothing", enqueuedAt, backlog)
		}
		if at > backlog/2 {
			t.Errorf("critical taken after %d of %d normal tasks: it waited behind the backlog", at, backlog)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the critical task was not taken")
	}
}

// enqueueNormal enqueues n tasks of type typ on normal.
func enqueueNormal(t *testing.T, rdb *redis.Client, typ string, n int) *asynq.Client {
	t.Helper()
	aq := asynq.NewClientFromRedisClient(rdb)
	for i := range n {
		if _, err := aq.Enqueue(asynq.NewTask(typ, nil), asynq.Queue("normal"), asynq.TaskID(fmt.Sprint("n", i))); err != nil {
			t.Fatal(err)
		}
	}
	return aq
}

// startGated starts an Asynq server of concurrency 10 with the default
// queues and weights on rdb through a dequeue gate, stopped when the test
// ends.
func startGated(t *testing.T, rdb *redis.Client, mux *asynq.ServeMux) *dequeueGate {
	t.Helper()
	gate := newDequeueGate(rdb)
	asrv := asynq.NewServerFromRedisClient(gate, asynq.Config{
		Concurrency:       10,
		Queues:            DefaultQueues(),
		TaskCheckInterval: taskCheckInterval,
		LogLevel:          asynq.WarnLevel,
	})
	if err := asrv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(asrv.Shutdown)
	return gate
}
