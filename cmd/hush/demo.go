package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/setup"
	"github.com/hushpush/hush/throttle"
)

// demoFlags are the flags of hush demo.
type demoFlags struct {
	limits  string
	minGap  time.Duration
	users   int
	pushes  int
	timeout time.Duration
	verbose bool
}

// demoFlagSet is hush demo's flag set, parsing into f.
func demoFlagSet(f *demoFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&f.limits, "limits", "3/10s", "per-user rolling-window caps, `N/W` comma list")
	fs.DurationVar(&f.minGap, "min-gap", 2*time.Second, "minimum gap between two pushes to one user")
	fs.IntVar(&f.users, "users", 4, "users in the burst")
	fs.IntVar(&f.pushes, "pushes", 5, "notifications per user, all submitted at once")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "give up when the pushes have not all settled by then")
	fs.BoolVar(&f.verbose, "v", false, "show the worker's logs on standard error")
	return fs
}

// demoHelp is the help of hush demo; its flags follow it.
const demoHelp = `Usage:
  hush demo [--limits N/W,...] [--min-gap D] [--users N] [--pushes N] [--timeout D] [-v]

Shows the per-user throttle at work, with nothing to set up and no network:
it starts an embedded Redis, a hush worker with its HTTP API on a free
127.0.0.1 port, and local fake APNs and FCM servers that the real APNs and
FCM clients talk to. It then submits a burst (every user gets --pushes
notifications at the same instant), prints a live timeline of what happens
to each push, a summary per user, and exits.

In the burst:
  u-1  has an iPhone (APNs) and an Android phone (FCM)
  u-2  also has both, but its APNs token is no longer valid: the fake
       answers 410 Unregistered and hush reports "token invalid"
  u-3  its last push carries a 500ms ttl and is submitted once the others
       are booked: its slot comes too late, so it is dropped as expired
  u-4  its last push is priority critical, which bypasses the limiter
Further users alternate between these device setups.

Timeline lines (times are since the burst was submitted):
  +00.012s  u-1  #1  sent (apns, fcm)
  +00.015s  u-1  #2  deferred until +02.012s  (min-gap 2s)
  +02.014s  u-1  #2  sent (apns, fcm)  (was deferred)
  +00.868s  u-3  #5  dropped: expired (ttl 500ms)

"sent" is when the fake provider received the request; "deferred until" is
the slot the shared limiter booked, with the rule that set it; an expired
push never gets a slot (the limiter books none past a push's expiry). The
summary lists each user's send times and the spacing between them, and
checks the rules on the times the fake providers saw.

Examples:
  hush demo
  hush demo --limits 2/5s --min-gap 1s --users 2 --pushes 4
  hush demo --limits 10/1m,100/24h --min-gap 3s --pushes 12 --timeout 2m
`

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f demoFlags
	pos, err := parseFlags(demoFlagSet(&f), args, stdout, demoHelp)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("demo takes no arguments, got %q (run 'hush demo --help')", pos)
	}
	policy, err := throttle.ParsePolicy(f.limits, f.minGap.String())
	if err != nil {
		return usageErrorf("demo: --limits %q --min-gap %s: %v", f.limits, f.minGap, err)
	}
	switch {
	case f.users < 1 || f.users > 50:
		return usageErrorf("demo: --users must be between 1 and 50, got %d", f.users)
	case f.pushes < 1 || f.pushes > 50:
		return usageErrorf("demo: --pushes must be between 1 and 50, got %d", f.pushes)
	case f.timeout <= 0:
		return usageErrorf("demo: --timeout must be positive")
	}

	env, err := startDemoEnv(ctx, f, stderr)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer env.stop()

	plan := planBurst(f.users, f.pushes)
	fmt.Fprintf(stdout, "hush demo: rules %s; %s x %s submitted at once", policy, plural(f.users, "user"), plural(f.pushes, "push"))
	fmt.Fprintf(stdout, "; worker on %s, fake APNs and FCM on 127.0.0.1\n\n", env.api.BaseURL())

	runCtx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	w := newDemoWatch(env, plan, policy, stdout)
	if err := w.run(runCtx); err != nil {
		if tail := env.warnings.String(); tail != "" {
			return fmt.Errorf("demo: %w\nthe worker's last warnings (run with -v for all its logs):\n%s", err, tail)
		}
		return fmt.Errorf("demo: %w", err)
	}
	w.summary()
	return env.stop()
}

// demoEnv is everything the demo starts: the fakes and a serving worker.
type demoEnv struct {
	apns *fake.APNs
	fcm  *fake.FCM
	api  *client.Client
	dir  string

	// warnings keeps the worker's last warnings and errors.
	warnings *logTail

	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// startDemoEnv starts the fakes, writes their credentials to a temporary
// directory and runs setup.Serve against them with an embedded Redis, then
// waits until the worker is ready.
func startDemoEnv(ctx context.Context, f demoFlags, stderr io.Writer) (*demoEnv, error) {
	env := &demoEnv{done: make(chan error, 1), warnings: &logTail{max: 12}}
	ok := false
	defer func() {
		if !ok {
			_ = env.stop()
		}
	}()
	var err error
	if env.dir, err = os.MkdirTemp("", "hush-demo-"); err != nil {
		return nil, err
	}
	if env.apns, err = fake.StartAPNs(); err != nil {
		return nil, fmt.Errorf("fake APNs: %w", err)
	}
	if env.fcm, err = fake.StartFCM(); err != nil {
		return nil, fmt.Errorf("fake FCM: %w", err)
	}
	env.apns.Script(demoBadAPNsToken, fake.Unregistered())
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(env.dir)
	if err != nil {
		return nil, err
	}
	caFile, err := env.apns.WriteCA(env.dir)
	if err != nil {
		return nil, fmt.Errorf("fake APNs CA: %w", err)
	}
	saFile, err := fake.WriteServiceAccount(env.dir, env.fcm.TokenURL(), "hush-demo")
	if err != nil {
		return nil, err
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	// The defaults hush serve runs with, but the demo's rules, fake
	// providers and listener; RedisURL stays empty: an embedded Redis.
	cfg := setup.DefaultConfig()
	cfg.ThrottleLimits, cfg.ThrottleMinGap = f.limits, f.minGap
	cfg.APNSKeyFile, cfg.APNSKeyID, cfg.APNSTeamID = keyFile, keyID, teamID
	cfg.APNSTopic = "com.example.hush.demo"
	cfg.APNSEndpoint, cfg.APNSCaFile = env.apns.URL, caFile
	cfg.FCMCredentialsFile, cfg.FCMEndpoint = saFile, env.fcm.Endpoint()
	cfg.HTTPAddr = addr
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.LogLevel = "debug"
	// Quiet unless -v, but the last warnings are kept for an error message.
	log := slog.New(slog.NewTextHandler(env.warnings, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if f.verbose {
		log = cfg.NewLogger(stderr)
	}
	serveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	env.cancel = cancel
	go func() { env.done <- setup.Serve(serveCtx, cfg, log) }()
	env.api = client.New("http://"+addr, client.WithHTTPClient(&http.Client{Timeout: 5 * time.Second}))
	if err := env.waitReady(ctx, 15*time.Second); err != nil {
		return nil, err
	}
	ok = true
	return env, nil
}

// waitReady polls /readyz until it answers 200, Serve returns or the time
// is up.
func (env *demoEnv) waitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if env.api.Ready(ctx) == nil {
			return nil
		}
		select {
		case err := <-env.done:
			env.stopped = true
			return fmt.Errorf("the worker stopped while starting: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("the worker was not ready within %s: %w", limit, ctx.Err())
		case <-tick.C:
		}
	}
}

// stop shuts the worker down (once) and the fakes, and removes the
// credentials; it returns Serve's error.
func (env *demoEnv) stop() error {
	var err error
	if env.cancel != nil && !env.stopped {
		env.stopped = true
		env.cancel()
		select {
		case err = <-env.done:
		case <-time.After(20 * time.Second):
			err = errors.New("the worker did not stop within 20s")
		}
	}
	if env.apns != nil {
		env.apns.Close()
		env.apns = nil
	}
	if env.fcm != nil {
		env.fcm.Close()
		env.fcm = nil
	}
	if env.dir != "" {
		_ = os.RemoveAll(env.dir)
		env.dir = ""
	}
	if err != nil {
		return fmt.Errorf("demo: stopping the worker: %w", err)
	}
	return nil
}

// freeLoopbackAddr returns a 127.0.0.1 address with a port that was free a
// moment ago.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	return addr, nil
}

// logTail keeps the last max log records written to it.
type logTail struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (l *logTail) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("EMBEDDED IN-MEMORY Redis")) {
		return len(p), nil // the demo means it
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimRight(string(p), "\n"))
	if len(l.lines) > l.max {
		l.lines = l.lines[len(l.lines)-l.max:]
	}
	return len(p), nil
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// plural is "1 user", "4 users", "5 pushes".
func plural(n int, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "sh"):
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
