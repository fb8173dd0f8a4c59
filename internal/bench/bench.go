package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/cmdkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/setup"
	"github.com/hushpush/hush/worker"
)

// LooseLimits is bench's default rule: loose enough that nothing is
// deferred, so a run measures a delivery's own cost.
const LooseLimits = "1000000/1s"

// Options are what hush bench's flags ask for.
type Options struct {
	// Jobs single-recipient jobs in the first run, Fanout jobs of
	// Recipients recipients each in the second (0: skip the run).
	Jobs, Fanout, Recipients int
	// PerUser pushes per user in each run.
	PerUser int
	// Batch submits the jobs this many at a time (0: one at a time from 16
	// goroutines, gathered; 1: each job its own task).
	Batch int
	// Limits and MinGap are the worker's rules during the runs.
	Limits string
	MinGap time.Duration
	// Timeout ends a run whose pushes have not all arrived.
	Timeout time.Duration
	// JSON prints the results as JSON; Verbose shows the worker's logs.
	JSON, Verbose bool
}

// Run measures the runs o asks for on the Redis cfg names, with cfg's
// worker settings, writes the results to stdout and notes to stderr, and
// deletes every key it made.
func Run(ctx context.Context, cfg setup.Config, o Options, stdout, stderr io.Writer) error {
	b, err := newBencher(ctx, cfg, o, stderr)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer b.close()
	submitted := "submitted one at a time (gathered)"
	if o.Batch == 1 {
		submitted = "submitted one at a time, each its own task"
	} else if o.Batch > 1 {
		submitted = fmt.Sprintf("submitted in batches of %d", o.Batch)
	}
	fmt.Fprintf(stderr, "bench: Redis %s (%s), concurrency %d (held tasks %d), %s, rules %s min-gap %s, %s per user, jobs %s\n",
		cfg.RedisTarget(), cmdkit.Plural(len(b.masters), "master"), cfg.Concurrency, cfg.HeldSlots(), cmdkit.Plural(cfg.DeliveryShards, "shard"), o.Limits, o.MinGap, cmdkit.Plural(o.PerUser, "push"), submitted)

	var runs []Result
	if o.Jobs > 0 {
		r, err := b.run(ctx, "single-recipient", o.Jobs, 1)
		if err != nil {
			return fmt.Errorf("bench: single-recipient run: %w", err)
		}
		runs = append(runs, r)
	}
	if o.Fanout > 0 {
		r, err := b.run(ctx, fmt.Sprintf("fan-out x %d", o.Recipients), o.Fanout, o.Recipients)
		if err != nil {
			return fmt.Errorf("bench: fan-out run: %w", err)
		}
		runs = append(runs, r)
	}
	if err := b.cleanup(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	b.cleaned = true
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"redis": cfg.RedisTarget(), "concurrency": cfg.Concurrency, "held_concurrency": cfg.HeldSlots(),
			"delivery_shards": cfg.DeliveryShards, "per_user": o.PerUser, "limits": o.Limits, "min_gap": o.MinGap.String(), "runs": runs})
	}
	printResults(stdout, runs)
	return nil
}

// Result is one run's result.
type Result struct {
	Name          string   `json:"name"`
	Jobs          int      `json:"jobs"`
	Deliveries    int      `json:"deliveries"`
	Submit        float64  `json:"submit_seconds"`
	Seconds       float64  `json:"seconds"`
	PerSecond     float64  `json:"deliveries_per_second"`
	RedisCPUus    float64  `json:"redis_cpu_us_per_delivery"`
	RedisCmds     float64  `json:"redis_commands_per_delivery"`
	Masters       []Master `json:"masters"`
	BusiestShare  float64  `json:"busiest_master_cpu_share"`
	CeilingPerSec float64  `json:"ceiling_deliveries_per_second"`
}

// Master is one master's share of a run.
type Master struct {
	Addr        string  `json:"addr"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	Commands    int64   `json:"commands"`
	CPUus       float64 `json:"cpu_us_per_delivery"`
	CeilingRate float64 `json:"ceiling_deliveries_per_second"`
}

// printResults writes the runs as a table, then each run's masters when
// there are several.
func printResults(w io.Writer, runs []Result) {
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
	o       Options
	rdb     redis.UniversalClient
	closeDB func()
	masters []*redis.Client
	apns    *fake.APNs
	dir     string
	stderr  io.Writer
	logs    *cmdkit.LogTail
	cleaned bool
}

func newBencher(ctx context.Context, cfg setup.Config, o Options, stderr io.Writer) (_ *bencher, err error) {
	b := &bencher{cfg: cfg, o: o, stderr: stderr, logs: &cmdkit.LogTail{Max: 12}, cleaned: true}
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
	if b.masters, err = redisMasters(ctx, b.rdb); err != nil {
		return nil, err
	}
	for _, m := range b.masters {
		for _, pattern := range keyPatterns {
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

// keyPatterns are the keys bench creates, and deletes when it ends.
var keyPatterns = []string{"hush:*", "asynq:*"}

// redisMasters returns a client per master: the cluster's masters, or rdb's
// one server.
func redisMasters(ctx context.Context, rdb redis.UniversalClient) ([]*redis.Client, error) {
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
		for _, pattern := range keyPatterns {
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
		fmt.Fprintf(b.stderr, "bench: deleted the %s it created\n", cmdkit.Plural(deleted, "key"))
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

// Usage is one master's counters at an instant.
type Usage struct {
	CPU      float64 // seconds, user + system
	Commands int64
}

func (b *bencher) snapshot(ctx context.Context) ([]Usage, error) {
	out := make([]Usage, len(b.masters))
	for i, m := range b.masters {
		info, err := m.Info(ctx, "cpu", "commandstats").Result()
		if err != nil {
			return nil, fmt.Errorf("INFO on %s: %w", m.Options().Addr, err)
		}
		out[i] = ParseInfo(info)
	}
	return out, nil
}

// ParseInfo reads used_cpu_user + used_cpu_sys and the calls summed
// over every cmdstat_ line of an INFO reply.
func ParseInfo(info string) Usage {
	var s Usage
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case name == "used_cpu_user" || name == "used_cpu_sys":
			v, _ := strconv.ParseFloat(value, 64)
			s.CPU += v
		case strings.HasPrefix(name, "cmdstat_"):
			for field := range strings.SplitSeq(value, ",") {
				if n, ok := strings.CutPrefix(field, "calls="); ok {
					v, _ := strconv.ParseInt(n, 10, 64)
					s.Commands += v
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
func (b *bencher) run(ctx context.Context, name string, jobs, size int) (Result, error) {
	r := Result{Name: name, Jobs: jobs, Deliveries: jobs * size}
	tag := "s"
	if size > 1 {
		tag = "f"
	}
	js := benchJobs(tag, jobs, size, b.o.PerUser)
	opts := []worker.ClientOption{worker.WithShards(b.cfg.DeliveryShards), worker.WithJobRetention(b.cfg.JobRetention)}
	if b.o.Batch == 1 {
		opts = append(opts, worker.WithoutGathering())
	}
	client := worker.NewClient(b.rdb, opts...)
	start := time.Now()
	if err := b.submit(ctx, client, js); err != nil {
		return r, err
	}
	r.Submit = time.Since(start).Seconds()
	fmt.Fprintf(b.stderr, "bench: %s: submitted %s in %.1fs\n", name, cmdkit.Plural(jobs, "job"), r.Submit)

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
	size := max(b.o.Batch, 1)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				from := (int(next.Add(1)) - 1) * size
				if from >= len(js) {
					return
				}
				part := js[from:min(from+size, len(js))]
				if err := submitPart(ctx, client, part, b.o.Batch > 1); err != nil {
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
	deadline := time.NewTimer(b.o.Timeout)
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
			return time.Time{}, fmt.Errorf("only %d of %d pushes arrived (%d refused) within --timeout %s; the worker's last warnings:\n%s", got, n, rejected, b.o.Timeout, b.logs)
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
	addr, err := cmdkit.FreeLoopbackAddr()
	if err != nil {
		return cfg, err
	}
	cfg.AppsFile = ""
	cfg.ThrottleLimits, cfg.ThrottleMinGap = b.o.Limits, b.o.MinGap
	cfg.ThrottleCategories, cfg.QuietHours = "", ""
	cfg.APNSKeyFile, cfg.APNSKeyID, cfg.APNSTeamID = keyFile, keyID, teamID
	cfg.APNSTopic, cfg.APNSEndpoint, cfg.APNSCaFile = "com.example.hush.bench", b.apns.URL, caFile
	cfg.APNSCertFile, cfg.APNSCertPassword = "", ""
	cfg.FCMCredentialsFile, cfg.FCMEndpoint = "", ""
	cfg.DryRun = false
	cfg.WebhookURL = ""
	cfg.HTTPAddr = addr
	cfg.LogLevel = "warn"
	if b.o.Verbose {
		cfg.LogLevel = "info"
	}
	return cfg, nil
}

func (b *bencher) serveLog() *slog.Logger {
	if b.o.Verbose {
		return b.cfg.NewLogger(b.stderr)
	}
	return slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// summarize fills r's Redis figures from the masters' counters before and
// after the run.
func (r *Result) summarize(masters []*redis.Client, before, after []Usage) {
	var cpu float64
	var cmds int64
	for i, m := range masters {
		bm := Master{
			Addr:       m.Options().Addr,
			CPUSeconds: after[i].CPU - before[i].CPU,
			Commands:   after[i].Commands - before[i].Commands,
		}
		bm.CPUus = 1e6 * bm.CPUSeconds / float64(r.Deliveries)
		if bm.CPUus > 0 {
			bm.CeilingRate = 1e6 / bm.CPUus
		}
		cpu += bm.CPUSeconds
		cmds += bm.Commands
		r.Masters = append(r.Masters, bm)
	}
	busiest := slices.MaxFunc(r.Masters, func(a, b Master) int { return cmp.Compare(a.CPUSeconds, b.CPUSeconds) })
	r.PerSecond = float64(r.Deliveries) / r.Seconds
	r.RedisCPUus = 1e6 * cpu / float64(r.Deliveries)
	r.RedisCmds = float64(cmds) / float64(r.Deliveries)
	if cpu > 0 {
		r.BusiestShare = busiest.CPUSeconds / cpu
	}
	r.CeilingPerSec = busiest.CeilingRate
}

// Keys lists the keys bench makes (hush:* and asynq:*) on every master of
// rdb: none once a run has ended, and none before one may start.
func Keys(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	masters, err := redisMasters(ctx, rdb)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, m := range masters {
		for _, p := range keyPatterns {
			ks, err := scanAll(ctx, m, p, 0)
			if err != nil {
				return nil, err
			}
			keys = append(keys, ks...)
		}
	}
	return keys, nil
}
