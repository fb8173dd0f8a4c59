package worker

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
)

// BenchmarkPipeline measures the whole pipeline in one run on one private
// redis-server, against Asynq's own ceiling on this machine:
//
//	go test -run '^$' -bench Pipeline -benchtime 1x ./worker/
//
// HUSH_BENCH_SCALE (default 1) scales the task counts, e.g. 0.1 for a quick
// run. Sub-benchmarks, in order (later ones use earlier results):
//
//   - asynq-noop: N no-op Asynq tasks, the same concurrency and queues as
//     the worker: the baseline.
//   - single: N single-recipient jobs, loose rules (nothing deferred).
//   - single-batched: the same jobs submitted batchJobs at a time
//     (EnqueueBatch): one Asynq task per batch.
//   - fanout: N/1000 jobs of 1,000 recipients, loose rules.
//   - pressure-single, pressure-fanout: the same with tight rules (4
//     deliveries per user, 3 s minimum gap): 3 of 4 deliveries are deferred.
//   - paced, paced-e2e: single-recipient jobs submitted live at 80% of
//     single's rate: its delivery-only rate, and its end-to-end rate
//     (submission time included).
//   - paced-fanout: 1,000-recipient jobs submitted live at 80% of
//     fanout's delivery rate; a delivery's lag counts from its job's
//     submission.
//
// The work is enqueued before the worker starts (paced excepted); a run is
// timed from the worker's start to the fakes' last arrival. Lag is the
// fake's arrival time minus the earliest allowed instant: the worker's start
// (or, paced, the submission) under loose rules, the booked limiter slot
// under pressure. Redis CPU is the server's used_cpu_user+sys delta; round
// trips are counted by a go-redis hook (a pipeline is one), commands by the
// server's total_commands_processed; process CPU is this test process's
// (worker, Asynq and the fakes together). Each run also logs the Redis
// commands that cost the server most.
func BenchmarkPipeline(b *testing.B) {
	scale := 1.0
	if s := os.Getenv("HUSH_BENCH_SCALE"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 {
			b.Fatalf("HUSH_BENCH_SCALE=%q: want a positive number", s)
		}
		scale = v
	}
	n := max(int(20000*scale), 1000)
	srv := redistest.Start(b)
	if !srv.Real() {
		b.Skip("needs a real redis-server")
	}
	rt := &redistest.RoundTrips{}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 200})
	b.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(rt)
	fa, ff, senders := startFakes(b)
	bb := &pipelineBench{rdb: rdb, rt: rt, apns: fa, fcm: ff, senders: senders, conc: 50}

	var baseline, peak, peakE2E, peakFanout float64
	var rows []string
	row := func(b *testing.B, name string, r benchResult) {
		rows = append(rows, r.row(name, baseline))
		r.report(b, baseline)
	}
	b.Run("asynq-noop", func(b *testing.B) {
		r := bb.asynqNoop(b, n)
		baseline = r.rate()
		row(b, "Asynq no-op tasks (baseline)", r)
	})
	loose := throttle.Policy{Limits: []throttle.Limit{{N: 1000, Window: time.Minute}}}
	tight := throttle.Policy{Limits: []throttle.Limit{{N: 100, Window: time.Minute}}, MinGap: 3 * time.Second}
	b.Run("single", func(b *testing.B) {
		r := bb.hush(b, loose, n, 1, n, 0)
		peak = r.rate()
		peakE2E = float64(r.deliveries) / (r.submit + r.elapsed).Seconds()
		b.Logf("submission took %s: %.0f jobs/s end to end, submission included", r.submit.Round(time.Millisecond), peakE2E)
		row(b, fmt.Sprintf("hush, %d single-recipient jobs", n), r)
	})
	b.Run("single-batched", func(b *testing.B) {
		r := bb.hush(b, loose, n, 1, n, batchJobs)
		b.Logf("submission took %s: %.0f jobs/s end to end, submission included", r.submit.Round(time.Millisecond),
			float64(r.deliveries)/(r.submit+r.elapsed).Seconds())
		row(b, fmt.Sprintf("hush, %d single-recipient jobs submitted in batches of %d", n, batchJobs), r)
	})
	b.Run("fanout", func(b *testing.B) {
		r := bb.hush(b, loose, n/1000, 1000, n, 0)
		peakFanout = r.rate()
		row(b, fmt.Sprintf("hush, %d jobs x 1,000 recipients", n/1000), r)
	})
	b.Run("pressure-single", func(b *testing.B) {
		r := bb.hush(b, tight, n, 1, n/4, 0)
		row(b, fmt.Sprintf("hush under pressure, %d single-recipient jobs, 4 per user, gap 3s", n), r)
	})
	b.Run("pressure-fanout", func(b *testing.B) {
		r := bb.hush(b, tight, n/1000, 1000, max(n/4, 1000), 0)
		row(b, fmt.Sprintf("hush under pressure, %d jobs x 1,000 recipients, 4 per user, gap 3s", n/1000), r)
	})
	// Paced runs submit live, in this process, at 80% of a peak: the
	// delivery-only peak of single (its jobs were enqueued beforehand), and
	// the end-to-end one (its submission time counted too), which is what
	// the process can sustain when it also accepts the jobs.
	for _, p := range []struct {
		name, what string
		peak       *float64
	}{{"paced", "delivery-only", &peak}, {"paced-e2e", "end-to-end", &peakE2E}} {
		b.Run(p.name, func(b *testing.B) {
			if *p.peak == 0 {
				b.Skip("needs the single sub-benchmark's rate")
			}
			rate := 0.8 * *p.peak
			r := bb.paced(b, loose, rate, max(int(rate*5*scale), 500), 1)
			row(b, fmt.Sprintf("hush, single-recipient jobs submitted at %.0f/s (80%% of the %s peak)", rate, p.what), r)
		})
	}
	b.Run("paced-fanout", func(b *testing.B) {
		if peakFanout == 0 {
			b.Skip("needs the fanout sub-benchmark's rate")
		}
		rate := 0.8 * peakFanout
		r := bb.paced(b, loose, rate, max(int(rate*5*scale), 2000), 1000)
		row(b, fmt.Sprintf("hush, 1,000-recipient jobs submitted at %.1f/s (%.0f deliveries/s, 80%% of fanout's peak)", rate/1000, rate), r)
	})
	b.Logf("\n| run | deliveries/s | x baseline | Redis CPU µs/delivery | process CPU µs/delivery | round trips/delivery | Redis cmds/delivery | lag p50 | lag p99 | Redis B/job settled / retained |\n|---|---|---|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

// pipelineBench is the shared state of BenchmarkPipeline's runs.
type pipelineBench struct {
	rdb     *redis.Client
	rt      *redistest.RoundTrips
	apns    *fake.APNs
	fcm     *fake.FCM
	senders map[payload.Platform]Sender
	conc    int
}

// benchResult is one run's measurements.
type benchResult struct {
	deliveries int
	elapsed    time.Duration
	redisCPU   time.Duration
	procCPU    time.Duration // this process: worker, Asynq, fakes
	commands   int64
	roundTrips int64
	lags       []time.Duration // sorted; empty when not measured
	submit     time.Duration   // enqueueing the jobs beforehand
	// memPerJob is used_memory's growth per job once the run settled,
	// retainedPerJob the same without the limiter's keys and the events
	// stream, and streamPerEvent the stream's bytes per event it holds
	// (bench_memory_test.go); 0: not measured.
	memPerJob, retainedPerJob, streamPerEvent float64
}

func (r benchResult) rate() float64 { return float64(r.deliveries) / r.elapsed.Seconds() }

func (r benchResult) per(v float64) float64 { return v / float64(r.deliveries) }

func (r benchResult) lag(q float64) time.Duration {
	if len(r.lags) == 0 {
		return 0
	}
	return r.lags[min(int(q*float64(len(r.lags))), len(r.lags)-1)]
}

func (r benchResult) report(b *testing.B, baseline float64) {
	b.ReportMetric(r.rate(), "deliveries/s")
	if baseline > 0 {
		b.ReportMetric(r.rate()/baseline, "x-baseline")
	}
	b.ReportMetric(r.per(float64(r.redisCPU.Microseconds())), "redis-µs/delivery")
	b.ReportMetric(r.per(float64(r.procCPU.Microseconds())), "proc-µs/delivery")
	b.ReportMetric(r.per(float64(r.roundTrips)), "roundtrips/delivery")
	b.ReportMetric(r.per(float64(r.commands)), "cmds/delivery")
	if len(r.lags) > 0 {
		b.ReportMetric(float64(r.lag(0.5).Milliseconds()), "p50-lag-ms")
		b.ReportMetric(float64(r.lag(0.99).Milliseconds()), "p99-lag-ms")
	}
	if r.memPerJob > 0 {
		b.ReportMetric(r.memPerJob, "redis-B/job")
		b.ReportMetric(r.retainedPerJob, "retained-B/job")
		b.ReportMetric(r.streamPerEvent, "stream-B/event")
	}
}

func (r benchResult) row(name string, baseline float64) string {
	ratio, p50, p99, mem := "–", "–", "–", "–"
	if r.memPerJob > 0 {
		mem = fmt.Sprintf("%.0f / %.0f", r.memPerJob, r.retainedPerJob)
	}
	if baseline > 0 {
		ratio = fmt.Sprintf("%.2f", r.rate()/baseline)
	}
	if len(r.lags) > 0 {
		p50, p99 = fmtLag(r.lag(0.5)), fmtLag(r.lag(0.99))
	}
	return fmt.Sprintf("| %s | %.0f | %s | %.1f | %.0f | %.2f | %.2f | %s | %s | %s |", name, r.rate(), ratio,
		r.per(float64(r.redisCPU.Microseconds())), r.per(float64(r.procCPU.Microseconds())), r.per(float64(r.roundTrips)), r.per(float64(r.commands)), p50, p99, mem)
}

func fmtLag(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// meter takes the counters at the start of a run.
type meter struct {
	bb    *pipelineBench
	start time.Time
	stats redisStats
	rts   int64
	cpu   time.Duration
	// scripts logs the cost of each script (HUSH_BENCH_SCRIPTS=1).
	scripts scriptCosts
}

func (bb *pipelineBench) meter(b *testing.B) meter {
	sc := bb.scriptCostsStart(b)
	return meter{bb: bb, start: time.Now(), stats: bb.redisStats(b), rts: bb.rt.Count(), cpu: fake.ProcessCPU(), scripts: sc}
}

// done returns the run's result for deliveries ending at end (read after
// the counters, so that reading the fakes' records is not counted).
func (m meter) done(b *testing.B, deliveries int, end func() time.Time) benchResult {
	s := m.bb.redisStats(b)
	type cost struct {
		name string
		usec int64
	}
	var costs []cost
	for k, v := range s.usec {
		costs = append(costs, cost{k, v - m.stats.usec[k]})
	}
	slices.SortFunc(costs, func(a, b cost) int { return int(b.usec - a.usec) })
	var top []string
	for _, c := range costs[:min(6, len(costs))] {
		top = append(top, fmt.Sprintf("%s %.1f", c.name, float64(c.usec)/float64(deliveries)))
	}
	b.Logf("Redis server µs per delivery by command: %s", strings.Join(top, ", "))
	r := benchResult{
		deliveries: deliveries,
		redisCPU:   s.cpu - m.stats.cpu,
		procCPU:    fake.ProcessCPU() - m.cpu,
		commands:   s.commands - m.stats.commands,
		roundTrips: m.bb.rt.Count() - m.rts,
	}
	r.elapsed = end().Sub(m.start)
	m.scripts.log(b, m.bb, deliveries)
	return r
}

type redisStats struct {
	cpu      time.Duration
	commands int64
	usec     map[string]int64 // per command: server time, from commandstats
}

// redisStats reads the server's CPU time and command count (not through the
// counting hook).
func (bb *pipelineBench) redisStats(b *testing.B) redisStats {
	c := redis.NewClient(&redis.Options{Addr: bb.rdb.Options().Addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "cpu", "stats", "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	s := redisStats{usec: map[string]int64{}}
	for line := range strings.SplitSeq(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "used_cpu_user", "used_cpu_sys":
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += time.Duration(f * float64(time.Second))
		case "total_commands_processed":
			s.commands, _ = strconv.ParseInt(v, 10, 64)
		}
		if name, ok := strings.CutPrefix(k, "cmdstat_"); ok {
			for f := range strings.SplitSeq(v, ",") {
				if u, ok := strings.CutPrefix(f, "usec="); ok {
					s.usec[name], _ = strconv.ParseInt(u, 10, 64)
				}
			}
		}
	}
	return s
}

// reset empties Redis and the fakes between runs.
func (bb *pipelineBench) reset(b *testing.B) {
	if err := bb.rdb.FlushAll(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	bb.apns.Reset()
	bb.fcm.Reset()
	bb.apns.Record(true)
}

// asynqNoop processes n no-op tasks enqueued beforehand.
func (bb *pipelineBench) asynqNoop(b *testing.B, n int) benchResult {
	bb.reset(b)
	aq := asynq.NewClientFromRedisClient(bb.rdb)
	parallel(b, n, func(i int) error {
		_, err := aq.Enqueue(asynq.NewTask("noop", []byte(`{"i":`+strconv.Itoa(i)+`}`)), asynq.Queue("normal"))
		return err
	})
	var done atomic.Int64
	all := make(chan time.Time, 1)
	srv := asynq.NewServerFromRedisClient(bb.rdb, asynq.Config{
		Concurrency:              bb.conc,
		Queues:                   map[string]int{"critical": 6, "high": 3, "normal": 1},
		DelayedTaskCheckInterval: delayedCheck,
		TaskCheckInterval:        250 * time.Millisecond,
		LogLevel:                 asynq.WarnLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(context.Context, *asynq.Task) error {
		if done.Add(1) == int64(n) {
			all <- time.Now()
		}
		return nil
	})
	m := bb.meter(b)
	if err := srv.Start(mux); err != nil {
		b.Fatal(err)
	}
	var end time.Time
	select {
	case end = <-all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d no-op tasks done", done.Load(), n)
	}
	r := m.done(b, n, func() time.Time { return end })
	srv.Shutdown()
	return r
}

// benchLimiter records every booked slot so lag can be measured from it
// (when record is set: runs with a minimum gap).
type benchLimiter struct {
	*throttle.Redis
	record bool
	slots  sync.Map // member -> time.Time
}

func (l *benchLimiter) Reserve(ctx context.Context, user, member string) (throttle.Reservation, error) {
	r, err := l.Redis.Reserve(ctx, user, member)
	if err == nil && l.record {
		l.slots.Store(member, r.At)
	}
	return r, err
}

func (l *benchLimiter) ReserveBatch(ctx context.Context, reqs []throttle.Request) ([]throttle.Reservation, error) {
	return l.ReserveBatchWith(ctx, reqs, nil)
}

func (l *benchLimiter) ReserveBatchWith(ctx context.Context, reqs []throttle.Request, queue func(redis.Pipeliner)) ([]throttle.Reservation, error) {
	rs, err := l.Redis.ReserveBatchWith(ctx, reqs, queue)
	for i, r := range rs {
		if !r.Now.IsZero() && l.record {
			l.slots.Store(reqs[i].Member, r.At)
		}
	}
	return rs, err
}

// benchWorker returns a worker for one run and a func running it until the
// returned stop is called.
func (bb *pipelineBench) benchWorker(b *testing.B, p throttle.Policy) (*Worker, *benchLimiter) {
	rl, err := throttle.NewRedis(bb.rdb, p, throttle.Options{})
	if err != nil {
		b.Fatal(err)
	}
	lim := &benchLimiter{Redis: rl, record: p.MinGap > 0}
	w, err := New(bb.rdb, Options{Limiter: lim, Policy: p, Senders: bb.senders, Concurrency: bb.conc})
	if err != nil {
		b.Fatal(err)
	}
	return w, lim
}

// run starts w; the returned func stops it.
func run(b *testing.B, w *Worker) func() {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	return func() {
		cancel()
		if err := <-stopped; err != nil {
			b.Error(err)
		}
	}
}

// benchJobs builds jobs of size recipients; recipient g (counting over all
// jobs) is user g%users with a token of its own. tokens maps each token to
// its limiter member.
func benchJobs(prefix string, jobs, size, users int) ([]payload.Job, map[string]string) {
	out := make([]payload.Job, jobs)
	tokens := make(map[string]string, jobs*size)
	for j := range out {
		id := fmt.Sprintf("%s-%d", prefix, j)
		rs := make([]payload.Recipient, size)
		for i := range rs {
			g := j*size + i
			tok := fmt.Sprintf("%064x", g)
			// A user's single-recipient jobs are adjacent (user g*users/jobs),
			// so that under pressure they are deferred however fast the run
			// is: spread g%users, a user's 4 jobs lay 5,000 jobs apart and a
			// machine slower than 5,000 jobs per gap of 3 s deferred none.
			// A fan-out job's recipients are users g%users: every job of a
			// run reaches the users the others do.
			u := g % users
			if size == 1 {
				u = g * users / jobs
			}
			rs[i] = payload.Recipient{UserID: "u-" + strconv.Itoa(u), Devices: []payload.Device{{Platform: payload.APNs, Token: tok}}}
			tokens[tok] = id + "/" + strconv.Itoa(i)
		}
		out[j] = payload.Job{ID: id, Recipients: rs, Content: payload.Content{Alert: &payload.Alert{Title: "bench", Body: "a benchmark push"}}}
	}
	return out, tokens
}

// hush runs jobs x size deliveries to users users under p, the jobs
// submitted one by one (Enqueue), or batch at a time (EnqueueBatch).
func (bb *pipelineBench) hush(b *testing.B, p throttle.Policy, jobs, size, users, batch int) benchResult {
	bb.reset(b)
	base := bb.usedMemory(b)
	w, lim := bb.benchWorker(b, p)
	js, tokens := benchJobs("bench", jobs, size, users)
	submitStart := time.Now()
	if batch > 0 {
		parallel(b, (len(js)+batch-1)/batch, func(i int) error {
			res, err := w.Client().EnqueueBatch(context.Background(), js[i*batch:min((i+1)*batch, len(js))])
			for _, r := range res {
				err = cmp.Or(err, r.Err)
			}
			return err
		})
	} else {
		parallel(b, len(js), func(i int) error {
			_, err := w.Client().Enqueue(context.Background(), js[i])
			if err != nil && len(err.Error()) > 300 {
				err = fmt.Errorf("%.300s…", err.Error())
			}
			return err
		})
	}
	submit := time.Since(submitStart)
	n := jobs * size
	m := bb.meter(b)
	stop := run(b, w)
	bb.waitArrivals(b, n, 10*time.Minute)
	r := m.done(b, n, bb.lastArrival)
	r.submit = submit
	stop()
	if p.MinGap > 0 {
		// What a run late for its slots cost: each of these pushes was
		// booked again, through its own delivery task (decide.go).
		rebooked := counterTotal(b, w.m.limiter, func(l map[string]string) bool { return l["decision"] == "rebooked" })
		b.Logf("late for their slots: %d pushes found late before their calls, %d at their calls (%.1f per 1,000 deliveries)",
			rebooked, counterTotal(b, w.m.lateSends, nil), float64(rebooked+counterTotal(b, w.m.lateSends, nil))*1000/float64(n))
	}
	r.memPerJob, r.retainedPerJob, r.streamPerEvent = bb.memoryPerJob(b, jobs, base)
	for _, req := range bb.apns.Requests() {
		from := m.start
		if p.MinGap > 0 {
			v, ok := lim.slots.Load(tokens[req.Token])
			if !ok {
				b.Fatalf("no slot booked for %s", tokens[req.Token])
			}
			from = v.(time.Time)
		}
		r.lags = append(r.lags, req.At.Sub(from))
	}
	slices.Sort(r.lags)
	return r
}

// paced submits n deliveries, as jobs of size recipients, at rate
// deliveries per second to a running worker; a delivery's lag is measured
// from its job's submission.
func (bb *pipelineBench) paced(b *testing.B, p throttle.Policy, rate float64, n, size int) benchResult {
	bb.reset(b)
	w, _ := bb.benchWorker(b, p)
	jobs := max(n/size, 1)
	n = jobs * size
	js, tokens := benchJobs("paced", jobs, size, n)
	stop := run(b, w)
	defer stop()
	waitWorker(b, w)
	submitted := make([]time.Time, jobs)
	subs := map[string]int{}
	for i, j := range js {
		subs[j.ID] = i
	}
	m := bb.meter(b)
	submitters := min(16, jobs)
	var wg sync.WaitGroup
	for k := range submitters {
		wg.Go(func() {
			for i := k; i < jobs; i += submitters {
				// Pacing, not waiting for a condition.
				time.Sleep(time.Until(m.start.Add(time.Duration(float64(i*size) / rate * float64(time.Second)))))
				submitted[i] = time.Now()
				if _, err := w.Client().Enqueue(context.Background(), js[i]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	lastSubmit := time.Now()
	bb.waitArrivals(b, n, 5*time.Minute)
	r := m.done(b, n, bb.lastArrival)
	if behind := lastSubmit.Sub(m.start) - time.Duration(float64((jobs-1)*size)/rate*float64(time.Second)); behind > 100*time.Millisecond {
		b.Logf("submissions fell %s behind the pace", behind)
	}
	for _, req := range bb.apns.Requests() {
		id, _, _ := strings.Cut(tokens[req.Token], "/")
		r.lags = append(r.lags, req.At.Sub(submitted[subs[id]]))
	}
	slices.Sort(r.lags)
	return r
}

func waitWorker(b *testing.B, w *Worker) {
	deadline := time.Now().Add(10 * time.Second)
	for !w.running.Load() {
		if time.Now().After(deadline) {
			b.Fatal("worker not running")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitArrivals polls the fakes until n requests arrived.
func (bb *pipelineBench) waitArrivals(b *testing.B, n int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		a, _ := bb.apns.Counts()
		f, _ := bb.fcm.Counts()
		if a+f >= n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d pushes arrived in %s", a+f, n, timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// lastArrival is the time of the fakes' last request.
func (bb *pipelineBench) lastArrival() time.Time {
	var last time.Time
	for _, r := range bb.apns.Requests() {
		if r.At.After(last) {
			last = r.At
		}
	}
	return last
}

// parallel runs f(0..n-1) on 16 goroutines.
func parallel(b *testing.B, n int, f func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := f(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}
