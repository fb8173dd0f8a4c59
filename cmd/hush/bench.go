package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hushpush/hush/internal/bench"
	"github.com/hushpush/hush/payload"
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

func benchFlagSet(f *benchFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&f.jobs, "jobs", 5000, "single-recipient jobs in the first run (0: skip it)")
	fs.IntVar(&f.fanout, "fanout", 5, "fan-out jobs in the second run (0: skip it)")
	fs.IntVar(&f.recipients, "recipients", 1000, "recipients per fan-out job")
	fs.IntVar(&f.perUser, "per-user", 1, "pushes per user in each run (a user's single-recipient jobs are adjacent); with --min-gap or --limits, more than 1 measures deferral")
	fs.IntVar(&f.batch, "batch", 0, "submit the jobs this many at a time, as POST /v1/notifications:batch does (due jobs share one queue task per 100); 0: one at a time from 16 goroutines, gathered as hush gathers concurrent submissions; 1: each job its own queue task, as for a backend submitting one job at a time")
	fs.StringVar(&f.limits, "limits", bench.LooseLimits, "per-user rolling-window caps, `N/W` comma list (the default defers nothing)")
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

// runBench parses hush bench's command line and configuration, checks them,
// and hands the measurement to package bench.
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

	return bench.Run(ctx, cfg, bench.Options{
		Jobs: f.jobs, Fanout: f.fanout, Recipients: f.recipients, PerUser: f.perUser, Batch: f.batch,
		Limits: f.limits, MinGap: f.minGap, Timeout: f.timeout, JSON: f.json, Verbose: f.verbose,
	}, stdout, stderr)
}
