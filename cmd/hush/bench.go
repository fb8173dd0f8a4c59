package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/setup"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// benchFlags are the flags of hush bench.
type benchFlags struct {
	jobs       int
	fanout     int
	recipients int
	perUser    int
	batch      int
	limits     string
	minGap     time.Duration
	timeout    time.Duration
	json       bool
	verbose    bool
}

// benchLooseLimits is bench's default rule: loose enough that nothing is
// deferred, so a run measures a delivery's own cost.
const benchLooseLimits = "1000000/1s"

func benchFlagSet(f *benchFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&f.jobs, "jobs", 5000, "single-recipient jobs in the first run (0: skip it)")
	fs.IntVar(&f.fanout, "fanout", 5, "fan-out jobs in the second run (0: skip it)")
	fs.IntVar(&f.recipients, "recipients", 1000, "recipients per fan-out job")
	fs.IntVar(&f.perUser, "per-user", 1, "pushes per user in each run (a user's single-recipient jobs are adjacent); with --min-gap or --limits, more than 1 measures deferral")
	fs.IntVar(&f.batch, "batch", 0, "submit the jobs this many at a time, as POST /v1/notifications:batch does (due jobs share one queue task per 100); 0: one at a time from 16 goroutines, gathered as hush gathers concurrent submissions; 1: each job its own queue task, as for a backend submitting one job at a time")
	fs.StringVar(&f.limits, "limits", benchLooseLimits, "per-user rolling-window caps, `N/W` comma list (the default defers nothing)")
	fs.DurationVar(&f.minGap, "min-gap", 0, "minimum gap between two pushes to one user")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "give up on a run whose pushes have not all arrived by then")
	fs.BoolVar(&f.json, "json", false, "print the results as JSON")
	fs.BoolVar(&f.verbose, "v", false, "show the worker's logs on standard error")
	return fs
}

const benchHelp = `Usage:
  HUSH_REDIS_URL=redis://HOST:6379/DB hush bench [--jobs N] [--fanout N] [--recipients N] [--per-user N] [--batch N] [--limits N/W,...] [--min-gap D] [--timeout D] [--json] [-v]
  HUSH_REDIS_CLUSTER_ADDRS=HOST:PORT,... hush bench ...

Measures what hush costs the Redis you point it at, so you can size a
deployment: it runs a hush worker in this process (the HUSH_* keys you set:
concurrency, shards, retention; the rules and providers are bench's own)
against that Redis and local fake APNs servers that the real APNs client
talks to over TLS and HTTP/2, and times two runs:

  single-recipient  --jobs jobs of one recipient and one device each
  fan-out           --fanout jobs of --recipients recipients each

Each run's jobs are submitted first; the run is timed from the worker's
start to the fake's last arrival. For each run it prints deliveries/s, the
Redis CPU per delivery (INFO cpu, user + system, summed over the masters),
Redis commands per delivery (INFO commandstats), the busiest master's share
of the CPU, and the ceiling: the deliveries/s at which the busiest master
would spend one full core (1 s / its CPU per delivery). The worker process
is usually the limit of the run itself; the ceiling says how many processes
one Redis, or one cluster, can carry.

hush's and Asynq's keys have no prefix of their own, so bench needs a Redis
database to itself: it refuses to start when any master already holds a
hush:* or asynq:* key, and deletes every hush:* and asynq:* key when it
ends (also on failure or Ctrl-C). Use a spare database number
(redis://HOST:6379/15) or a staging Redis, never the database production
workers use. INFO cpu counts everything the server does: run it while
nothing else uses that server.

Examples:
  HUSH_REDIS_URL=redis://127.0.0.1:6379/15 hush bench
  HUSH_REDIS_URL=redis://127.0.0.1:6379/15 HUSH_CONCURRENCY=100 hush bench --jobs 20000 --fanout 0
  HUSH_REDIS_CLUSTER_ADDRS=10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379 HUSH_DELIVERY_SHARDS=3 hush bench --json
  HUSH_REDIS_URL=redis://127.0.0.1:6379/15 hush bench --per-user 4 --min-gap 3s   # 3 of 4 pushes deferred
  HUSH_REDIS_URL=redis://127.0.0.1:6379/15 hush bench --batch 100   # jobs submitted in batches of 100
`

// benchRun is one run's result.
type benchRun struct {
	Name          string        `json:"name"`
	Jobs          int           `json:"jobs"`
	Deliveries    int           `json:"deliveries"`
	Submit        float64       `json:"submit_seconds"`
	Seconds       float64       `json:"seconds"`
	PerSecond     float64       `json:"deliveries_per_second"`
	RedisCPUus    float64       `json:"redis_cpu_us_per_delivery"`
	RedisCmds     float64       `json:"redis_commands_per_delivery"`
	Masters       []benchMaster `json:"masters"`
	BusiestShare  float64       `json:"busiest_master_cpu_share"`
	CeilingPerSec float64       `json:"ceiling_deliveries_per_second"`
}

// benchMaster is one master's share of a run.
type benchMaster struct {
	Addr        string  `json:"addr"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	Commands    int64   `json:"commands"`
	CPUus       float64 `json:"cpu_us_per_delivery"`
	CeilingRate float64 `json:"ceiling_deliveries_per_second"`
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f benchFlags
	pos, err := parseFlags(benchFlagSet(&f), args, stdout, benchHelp)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("bench takes no arguments, got %q (run 'hush bench --help')", pos)
	}
	switch {
	case f.jobs < 0 || f.fanout < 0:
		return usageErrorf("bench: --jobs and --fanout must be 0 or more")
	case f.jobs == 0 && f.fanout == 0:
		return usageErrorf("bench: --jobs and --fanout are both 0: nothing to run")
	case f.fanout > 0 && (f.recipients < 1 || f.recipients > payload.MaxRecipients):
		return usageErrorf("bench: --recipients must be between 1 and %d, got %d", payload.MaxRecipients, f.recipients)
	case f.perUser < 1:
		return usageErrorf("bench: --per-user must be 1 or more, got %d", f.perUser)
	case f.batch < 0 || f.batch > worker.MaxBatch:
		return usageErrorf("bench: --batch must be between 0 (one job at a time) and %d, got %d", worker.MaxBatch, f.batch)
	case f.fanout > 0 && f.perUser > f.fanout:
		return usageErrorf("bench: --per-user %d needs at least %d fan-out jobs (--fanout), since a job names each user once", f.perUser, f.perUser)
	case f.timeout <= 0:
		return usageErrorf("bench: --timeout must be positive")
	}
	if _, err := throttle.ParsePolicy(f.limits, f.minGap.String()); err != nil {
		return usageErrorf("bench: --limits %q --min-gap %s: %v", f.limits, f.minGap, err)
	}
	cfg, err := setup.LoadConfig()
	if err != nil {
		return fmt.Errorf("bench: invalid configuration (see 'hush serve --help'):\n%w", err)
	}
	if cfg.RedisURL == "" && len(cfg.RedisClusterAddrs) == 0 && len(cfg.RedisSentinelAddrs) == 0 {
		return usageErrorf("bench: HUSH_REDIS_URL is empty: bench measures a real Redis, so point HUSH_REDIS_URL (a database of its own, e.g. redis://127.0.0.1:6379/15) or HUSH_REDIS_CLUSTER_ADDRS at the one you want to size")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	b, err := newBencher(ctx, cfg, f, stderr)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer b.close()
	submitted := "submitted one at a time (gathered)"
	if f.batch == 1 {
		submitted = "submitted one at a time, each its own task"
	} else if f.batch > 1 {
		submitted = fmt.Sprintf("submitted in batches of %d", f.batch)
	}
	fmt.Fprintf(stderr, "bench: Redis %s (%s), concurrency %d (held tasks %d), %s, rules %s min-gap %s, %s per user, jobs %s\n",
		cfg.RedisTarget(), plural(len(b.masters), "master"), cfg.Concurrency, cfg.HeldSlots(), plural(cfg.DeliveryShards, "shard"), f.limits, f.minGap, plural(f.perUser, "push"), submitted)

	var runs []benchRun
	if f.jobs > 0 {
		r, err := b.run(ctx, "single-recipient", f.jobs, 1)
		if err != nil {
			return fmt.Errorf("bench: single-recipient run: %w", err)
		}
		runs = append(runs, r)
	}
	if f.fanout > 0 {
		r, err := b.run(ctx, fmt.Sprintf("fan-out x %d", f.recipients), f.fanout, f.recipients)
		if err != nil {
			return fmt.Errorf("bench: fan-out run: %w", err)
		}
		runs = append(runs, r)
	}
	if err := b.cleanup(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	b.cleaned = true
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"redis": cfg.RedisTarget(), "concurrency": cfg.Concurrency, "held_concurrency": cfg.HeldSlots(),
			"delivery_shards": cfg.DeliveryShards, "per_user": f.perUser, "limits": f.limits, "min_gap": f.minGap.String(), "runs": runs})
	}
	printBench(stdout, runs)
	return nil
}

// printBench writes the runs as a table, then each run's masters when
// there are several.
func printBench(w io.Writer, runs []benchRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tjobs\tdeliveries\tseconds\tdeliveries/s\tRedis CPU us/delivery\tRedis cmds/delivery\tbusiest master\tceiling deliveries/s\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.0f\t%.1f\t%.1f\t%.0f%%\t%.0f\t\n", r.Name, r.Jobs, r.Deliveries, r.Seconds,
			r.PerSecond, r.RedisCPUus, r.RedisCmds, 100*r.BusiestShare, r.CeilingPerSec)
	}
	_ = tw.Flush()
	for _, r := range runs {
		if len(r.Masters) < 2 {
			continue
		}
		fmt.Fprintf(w, "\n%s, per master:\n", r.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "master\tCPU s\tcommands\tCPU us/delivery\tceiling deliveries/s\t")
		for _, m := range r.Masters {
			fmt.Fprintf(tw, "%s\t%.3f\t%d\t%.1f\t%.0f\t\n", m.Addr, m.CPUSeconds, m.Commands, m.CPUus, m.CeilingRate)
		}
		_ = tw.Flush()
	}
	fmt.Fprintln(w, "\nceiling: the deliveries/s at which the busiest master spends one full core (1 s / its Redis CPU per delivery)")
}

// bencher holds what every run shares: the Redis, the fake APNs and its
// credentials, and the worker's configuration.
type bencher struct {
	cfg     setup.Config
	f       benchFlags
	rdb     redis.UniversalClient
	closeDB func()
	masters []*redis.Client
	apns    *fake.APNs
	dir     string
	stderr  io.Writer
	logs    *logTail
	cleaned bool
}

func newBencher(ctx context.Context, cfg setup.Config, f benchFlags, stderr io.Writer) (_ *bencher, err error) {
	b := &bencher{cfg: cfg, f: f, stderr: stderr, logs: &logTail{max: 12}, cleaned: true}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if b.rdb, b.closeDB, err = setup.OpenRedis(cfg, quiet); err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = b.rdb.Ping(pingCtx).Err()
	cancel()
	if err != nil {
		return nil, fmt.Errorf("the Redis at %s does not answer: %w", cfg.RedisTarget(), err)
	}
	if b.masters, err = benchMasters(ctx, b.rdb); err != nil {
		return nil, err
	}
	for _, m := range b.masters {
		for _, pattern := range benchKeyPatterns {
			keys, err := scanAll(ctx, m, pattern, 1)
			if err != nil {
				return nil, fmt.Errorf("look for existing keys on %s: %w", m.Options().Addr, err)
			}
			if len(keys) > 0 {
				return nil, fmt.Errorf("%s (master %s) already holds %s keys (%q): bench needs a database of its own, as it deletes every hush:* and asynq:* key when it ends; "+
					"use a spare database number (redis://HOST:6379/15) or a staging Redis, never production's", cfg.RedisTarget(), m.Options().Addr, pattern, keys[0])
			}
		}
	}
	b.cleaned = false
	if b.dir, err = os.MkdirTemp("", "hush-bench-"); err != nil {
		return nil, err
	}
	if b.apns, err = fake.StartAPNs(); err != nil {
		return nil, fmt.Errorf("fake APNs: %w", err)
	}
	b.apns.Record(false) // counts only: a large run would hold every request
	return b, nil
}

// benchKeyPatterns are the keys bench creates, and deletes when it ends.
var benchKeyPatterns = []string{"hush:*", "asynq:*"}

// benchMasters returns a client per master: the cluster's masters, or rdb's
// one server.
func benchMasters(ctx context.Context, rdb redis.UniversalClient) ([]*redis.Client, error) {
	switch c := rdb.(type) {
	case *redis.Client:
		return []*redis.Client{c}, nil
	case *redis.ClusterClient:
		var mu sync.Mutex
		var out []*redis.Client
		err := c.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			out = append(out, m)
			return nil
		})
		slices.SortFunc(out, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
		return out, err
	}
	return nil, fmt.Errorf("unsupported Redis client %T", rdb)
}

// scanAll returns up to limit keys matching pattern (limit 0: all).
func scanAll(ctx context.Context, m *redis.Client, pattern string, limit int) ([]string, error) {
	var out []string
	iter := m.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, iter.Err()
}

// cleanup deletes every hush:* and asynq:* key on every master.
func (b *bencher) cleanup(ctx context.Context) error {
	deleted := 0
	for _, m := range b.masters {
		for _, pattern := range benchKeyPatterns {
			keys, err := scanAll(ctx, m, pattern, 0)
			if err != nil {
				return fmt.Errorf("clean up %s on %s: %w", pattern, m.Options().Addr, err)
			}
			for batch := range slices.Chunk(keys, 500) {
				pipe := m.Pipeline()
				for _, k := range batch {
					pipe.Unlink(ctx, k) // one key per command: a cluster's keys differ in slot
				}
				if _, err := pipe.Exec(ctx); err != nil {
					return fmt.Errorf("clean up %s on %s: %w", pattern, m.Options().Addr, err)
				}
			}
			deleted += len(keys)
		}
	}
	if deleted > 0 {
		fmt.Fprintf(b.stderr, "bench: deleted the %s it created\n", plural(deleted, "key"))
	}
	return nil
}

func (b *bencher) close() {
	if !b.cleaned && b.masters != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := b.cleanup(ctx); err != nil {
			fmt.Fprintf(b.stderr, "bench: %v (delete hush:* and asynq:* by hand)\n", err)
		}
		cancel()
	}
	if b.apns != nil {
		b.apns.Close()
	}
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
	if b.closeDB != nil {
		b.closeDB()
	}
}

// benchSnapshot is one master's counters at an instant.
type benchSnapshot struct {
	cpu      float64 // seconds, user + system
	commands int64
}

func (b *bencher) snapshot(ctx context.Context) ([]benchSnapshot, error) {
	out := make([]benchSnapshot, len(b.masters))
	for i, m := range b.masters {
		info, err := m.Info(ctx, "cpu", "commandstats").Result()
		if err != nil {
			return nil, fmt.Errorf("INFO on %s: %w", m.Options().Addr, err)
		}
		out[i] = parseBenchInfo(info)
	}
	return out, nil
}

// parseBenchInfo reads used_cpu_user + used_cpu_sys and the calls summed
// over every cmdstat_ line of an INFO reply.
func parseBenchInfo(info string) benchSnapshot {
	var s benchSnapshot
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case name == "used_cpu_user" || name == "used_cpu_sys":
			v, _ := strconv.ParseFloat(value, 64)
			s.cpu += v
		case strings.HasPrefix(name, "cmdstat_"):
			for field := range strings.SplitSeq(value, ",") {
				if n, ok := strings.CutPrefix(field, "calls="); ok {
					v, _ := strconv.ParseInt(n, 10, 64)
					s.commands += v
				}
			}
		}
	}
	return s
}

// benchJobs are jobs of size recipients with one APNs device each, tokens
// unique within the run. Each user gets perUser pushes: a user's
// single-recipient jobs are adjacent, a fan-out's recipients are users
// g % users, so that every fan-out job reaches the users the others do.
func benchJobs(run string, jobs, size, perUser int) []payload.Job {
	out := make([]payload.Job, jobs)
	users := max(1, (jobs*size+perUser-1)/perUser)
	for j := range out {
		rs := make([]payload.Recipient, size)
		for i := range rs {
			g := j*size + i
			u := g % users
			if size == 1 {
				u = g / perUser
			}
			rs[i] = payload.Recipient{
				UserID:  fmt.Sprintf("bench-%s-%d", run, u),
				Devices: []payload.Device{{Platform: payload.APNs, Token: fmt.Sprintf("%064x", g)}},
			}
		}
		out[j] = payload.Job{
			ID:         fmt.Sprintf("bench-%s-%d", run, j),
			Recipients: rs,
			Content:    payload.Content{Alert: &payload.Alert{Title: "hush bench", Body: "a benchmark push"}},
		}
	}
	return out
}

// run submits jobs x size, starts a worker, waits for every push at the
// fake, stops the worker and deletes what the run left.
func (b *bencher) run(ctx context.Context, name string, jobs, size int) (benchRun, error) {
	r := benchRun{Name: name, Jobs: jobs, Deliveries: jobs * size}
	tag := "s"
	if size > 1 {
		tag = "f"
	}
	js := benchJobs(tag, jobs, size, b.f.perUser)
	opts := []worker.ClientOption{worker.WithShards(b.cfg.DeliveryShards), worker.WithJobRetention(b.cfg.JobRetention)}
	if b.f.batch == 1 {
		opts = append(opts, worker.WithoutGathering())
	}
	client := worker.NewClient(b.rdb, opts...)
	start := time.Now()
	if err := b.submit(ctx, client, js); err != nil {
		return r, err
	}
	r.Submit = time.Since(start).Seconds()
	fmt.Fprintf(b.stderr, "bench: %s: submitted %s in %.1fs\n", name, plural(jobs, "job"), r.Submit)

	b.apns.Reset()
	before, err := b.snapshot(ctx)
	if err != nil {
		return r, err
	}
	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	cfg, err := b.workerConfig()
	if err != nil {
		stopServe()
		return r, err
	}
	start = time.Now()
	go func() { served <- setup.Serve(serveCtx, cfg, b.serveLog()) }()
	stopped := false
	stopWorker := func() error {
		if stopped {
			return nil
		}
		stopped = true
		stopServe()
		return <-served
	}
	defer func() { _ = stopWorker() }()

	last, err := b.waitArrivals(ctx, name, r.Deliveries, served, &stopped)
	if err != nil {
		return r, err
	}
	after, err := b.snapshot(ctx)
	if err != nil {
		return r, err
	}
	r.Seconds = last.Sub(start).Seconds()
	if err := stopWorker(); err != nil {
		return r, fmt.Errorf("the worker stopped with an error: %w", err)
	}
	r.summarize(b.masters, before, after)
	if err := b.cleanup(context.WithoutCancel(ctx)); err != nil {
		return r, err
	}
	return r, nil
}

// submit enqueues js with 16 goroutines, one job at a time or --batch at
// a time, reporting progress each second.
func (b *bencher) submit(ctx context.Context, client *worker.Client, js []payload.Job) error {
	var next, done atomic.Int64
	errs := make(chan error, 16)
	size := max(b.f.batch, 1)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				from := (int(next.Add(1)) - 1) * size
				if from >= len(js) {
					return
				}
				part := js[from:min(from+size, len(js))]
				if err := submitPart(ctx, client, part, b.f.batch > 1); err != nil {
					errs <- err
					return
				}
				done.Add(int64(len(part)))
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-finished:
			select {
			case err := <-errs:
				return err
			default:
				return nil
			}
		case <-tick.C:
			fmt.Fprintf(b.stderr, "bench: submitted %d of %d jobs\n", done.Load(), len(js))
		}
	}
}

// submitPart enqueues part: in one EnqueueBatch call when batch is set,
// else job by job (--batch 1: a client without gathering).
func submitPart(ctx context.Context, client *worker.Client, part []payload.Job, batch bool) error {
	if !batch {
		for _, j := range part {
			if _, err := client.Enqueue(ctx, j); err != nil {
				return fmt.Errorf("submit job %s: %w", j.ID, err)
			}
		}
		return nil
	}
	res, err := client.EnqueueBatch(ctx, part)
	if err != nil {
		return fmt.Errorf("submit a batch of %d jobs: %w", len(part), err)
	}
	for i, r := range res {
		if r.Err != nil {
			return fmt.Errorf("submit job %s in a batch: %w", part[i].ID, r.Err)
		}
	}
	return nil
}

// waitArrivals waits until the fake has accepted n pushes and returns the
// instant it had; it reports progress each second.
func (b *bencher) waitArrivals(ctx context.Context, name string, n int, served <-chan error, stopped *bool) (time.Time, error) {
	deadline := time.NewTimer(b.f.timeout)
	defer deadline.Stop()
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	report := time.Now()
	for {
		got, rejected := b.apns.Counts()
		now := time.Now()
		if got >= n {
			return now, nil
		}
		if now.Sub(report) >= time.Second {
			report = now
			fmt.Fprintf(b.stderr, "bench: %s: %d of %d pushes arrived\n", name, got, n)
		}
		select {
		case err := <-served:
			*stopped = true
			return time.Time{}, fmt.Errorf("the worker stopped after %d of %d pushes: %v\n%s", got, n, err, b.logs)
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("interrupted after %d of %d pushes", got, n)
		case <-deadline.C:
			return time.Time{}, fmt.Errorf("only %d of %d pushes arrived (%d refused) within --timeout %s; the worker's last warnings:\n%s", got, n, rejected, b.f.timeout, b.logs)
		case <-poll.C:
		}
	}
}

// workerConfig is the user's configuration with bench's rules, the fake
// APNs and a free loopback port for the HTTP API.
func (b *bencher) workerConfig() (setup.Config, error) {
	cfg := b.cfg
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(b.dir)
	if err != nil {
		return cfg, err
	}
	caFile, err := b.apns.WriteCA(b.dir)
	if err != nil {
		return cfg, fmt.Errorf("fake APNs CA: %w", err)
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return cfg, err
	}
	cfg.AppsFile = ""
	cfg.ThrottleLimits, cfg.ThrottleMinGap = b.f.limits, b.f.minGap
	cfg.ThrottleCategories, cfg.QuietHours = "", ""
	cfg.APNSKeyFile, cfg.APNSKeyID, cfg.APNSTeamID = keyFile, keyID, teamID
	cfg.APNSTopic, cfg.APNSEndpoint, cfg.APNSCaFile = "com.example.hush.bench", b.apns.URL, caFile
	cfg.APNSCertFile, cfg.APNSCertPassword = "", ""
	cfg.FCMCredentialsFile, cfg.FCMEndpoint = "", ""
	cfg.DryRun = false
	cfg.WebhookURL = ""
	cfg.HTTPAddr = addr
	cfg.LogLevel = "warn"
	if b.f.verbose {
		cfg.LogLevel = "info"
	}
	return cfg, nil
}

func (b *bencher) serveLog() *slog.Logger {
	if b.f.verbose {
		return b.cfg.NewLogger(b.stderr)
	}
	return slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// summarize fills r's Redis figures from the masters' counters before and
// after the run.
func (r *benchRun) summarize(masters []*redis.Client, before, after []benchSnapshot) {
	var cpu float64
	var cmds int64
	for i, m := range masters {
		bm := benchMaster{
			Addr:       m.Options().Addr,
			CPUSeconds: after[i].cpu - before[i].cpu,
			Commands:   after[i].commands - before[i].commands,
		}
		bm.CPUus = 1e6 * bm.CPUSeconds / float64(r.Deliveries)
		if bm.CPUus > 0 {
			bm.CeilingRate = 1e6 / bm.CPUus
		}
		cpu += bm.CPUSeconds
		cmds += bm.Commands
		r.Masters = append(r.Masters, bm)
	}
	busiest := slices.MaxFunc(r.Masters, func(a, b benchMaster) int { return cmp.Compare(a.CPUSeconds, b.CPUSeconds) })
	r.PerSecond = float64(r.Deliveries) / r.Seconds
	r.RedisCPUus = 1e6 * cpu / float64(r.Deliveries)
	r.RedisCmds = float64(cmds) / float64(r.Deliveries)
	if cpu > 0 {
		r.BusiestShare = busiest.CPUSeconds / cpu
	}
	r.CeilingPerSec = busiest.CeilingRate
}
