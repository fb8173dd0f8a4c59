package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
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
	limits     string
	minGap     time.Duration
	categories string
	quietIn    time.Duration
	quietFor   time.Duration
	users      int
	pushes     int
	timeout    time.Duration
	verbose    bool
}

// demoCategoriesDefault are the demo's categories: marketing with a cap of
// its own, and transactional, which keeps no quiet hours by its name and
// no global rules by global=off.
const demoCategoriesDefault = "marketing=1/10s; transactional=none global=off"

// demoFlagSet is hush demo's flag set, parsing into f.
func demoFlagSet(f *demoFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&f.limits, "limits", "3/10s", "per-user rolling-window caps, `N/W` comma list")
	fs.DurationVar(&f.minGap, "min-gap", 2*time.Second, "minimum gap between two pushes to one user")
	fs.StringVar(&f.categories, "categories", demoCategoriesDefault, "the worker's categories, `NAME=RULES;...` as HUSH_THROTTLE_CATEGORIES writes them; when they define them, u-1's first two pushes are marketing and one push inside the quiet hours is transactional")
	fs.DurationVar(&f.quietIn, "quiet-in", 3*time.Second, "the quiet hours begin this long after the burst (whole seconds)")
	fs.DurationVar(&f.quietFor, "quiet-for", 3*time.Second, "the quiet hours last this long (whole seconds; 0: no quiet hours)")
	fs.IntVar(&f.users, "users", 4, "users in the burst")
	fs.IntVar(&f.pushes, "pushes", 5, "notifications per user, all submitted at once")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "give up when the pushes have not all settled by then")
	fs.BoolVar(&f.verbose, "v", false, "show the worker's logs on standard error")
	return fs
}

// demoHelp is the help of hush demo; its flags follow it.
const demoHelp = `Usage:
  hush demo [--limits N/W,...] [--min-gap D] [--categories CATS] [--quiet-in D] [--quiet-for D] [--users N] [--pushes N] [--timeout D] [-v]

Shows the per-user throttle at work, with nothing to set up and no network:
it starts an embedded Redis, a hush worker with its HTTP API on a free
127.0.0.1 port, and local fake APNs, FCM and Web Push servers that the real
APNs, FCM and Web Push clients talk to. It then submits a burst (every user gets --pushes
notifications at the same instant), prints a live timeline of what happens
to each push, a summary per user, and exits.

In the burst:
  u-1  has an iPhone (APNs), an Android phone (FCM) and a browser (Web
       Push), all on one budget; its first two
       pushes are of category marketing, which allows 1 per 10s on top of
       the global rules, and its others go in once those are booked
  u-2  also has both, but its APNs token is no longer valid: the fake
       answers 410 Unregistered and hush reports "token invalid"
  u-3  its last push carries a 500ms ttl and is submitted once the others
       are booked: its slot comes too late, so it is dropped as expired
  u-4  its last push is priority critical, which bypasses the limiter
Further users alternate between these device setups.

The quiet hours begin --quiet-in after the burst and last --quiet-for. The
demo writes them as the worker reads them, HUSH_QUIET_HOURS=HH:MM:SS-HH:MM:SS
in the users' zone (UTC, HUSH_DEFAULT_TIMEZONE). A push whose slot falls
inside them is held until they end, not dropped. A second into them u-1 gets
one more push, of category transactional: a category of that name keeps no
quiet hours (unless it says quiet=), and global=off frees it from the global
rules, so it goes out at once.

Timeline lines (times are since the burst was submitted):
  +00.012s  u-1   #1   sent (apns, fcm)  [marketing]
  +00.015s  u-1   #2   deferred until +10.012s  (marketing 1/10s)  [marketing]
  +00.102s  u-1   #4   deferred until +06.000s  (quiet hours)
  +00.868s  u-3   #5   dropped: expired (ttl 500ms)
  +03.000s  quiet hours begin: pushes that keep them are held until +06.000s
  +04.051s  u-1   #6   sent (apns, fcm)  [transactional: keeps no quiet hours]
  +06.003s  u-1   #4   sent (apns, fcm)  (was deferred)

"sent" is when the fake provider received the request; "deferred until" is
the slot the shared limiter booked, with the rule that set it; an expired
push never gets a slot (the limiter books none past a push's expiry). The
summary lists each user's send times and the spacing between them, and
checks each rule, each category's caps and the quiet hours on the times the
fake providers saw.

Examples:
  hush demo
  hush demo --limits 2/5s --min-gap 1s --users 2 --pushes 4
  hush demo --categories "marketing=1/10s quiet=off"
  hush demo --quiet-for 0 --categories ""
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
	if policy.Categories, err = throttle.ParseCategories(f.categories); err != nil {
		return usageErrorf("demo: --categories %q: %v", f.categories, err)
	}
	switch {
	case f.users < 1 || f.users > 50:
		return usageErrorf("demo: --users must be between 1 and 50, got %d", f.users)
	case f.pushes < 1 || f.pushes > 50:
		return usageErrorf("demo: --pushes must be between 1 and 50, got %d", f.pushes)
	case f.timeout <= 0:
		return usageErrorf("demo: --timeout must be positive")
	case f.quietIn < 0 || f.quietIn >= 24*time.Hour || f.quietIn%time.Second != 0:
		return usageErrorf("demo: --quiet-in must be whole seconds from 0s to under 24h (HUSH_QUIET_HOURS counts in seconds), got %s", f.quietIn)
	case f.quietFor < 0 || f.quietFor >= 24*time.Hour || f.quietFor%time.Second != 0:
		return usageErrorf("demo: --quiet-for must be whole seconds from 0s (none) to under 24h, got %s", f.quietFor)
	}

	// The burst starts on a whole second, at least demoStartup from now:
	// HUSH_QUIET_HOURS is written to the second, so the quiet hours then
	// begin exactly --quiet-in into the burst.
	t0 := time.Now().Add(demoStartup + time.Second - 1).Truncate(time.Second)
	var quiet demoQuiet
	if f.quietFor > 0 {
		quiet = demoQuiet{from: t0.Add(f.quietIn), to: t0.Add(f.quietIn + f.quietFor)}
		if policy.Quiet, err = throttle.ParseQuiet(quiet.env()); err != nil {
			return fmt.Errorf("demo: quiet hours %s: %w", quiet.env(), err)
		}
	}
	env, err := startDemoEnv(ctx, f, quiet, stderr)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer env.stop()

	plan := planBurst(f.users, f.pushes, policy.Categories, quiet.transactionalAt(t0))
	addWebPushDevice(plan, env.webpushToken)
	fmt.Fprintf(stdout, "hush demo: rules %s; %s x %s submitted at once", policy, plural(f.users, "user"), plural(f.pushes, "push"))
	fmt.Fprintf(stdout, "; worker on %s, fake APNs, FCM and Web Push on 127.0.0.1\n", env.api.BaseURL())
	if len(policy.Categories) > 0 {
		var cats []string
		for _, name := range slices.Sorted(maps.Keys(policy.Categories)) {
			cats = append(cats, name+"="+policy.Categories[name].String())
		}
		fmt.Fprintf(stdout, "categories: %s\n", strings.Join(cats, "; "))
	}
	if !quiet.off() {
		fmt.Fprintf(stdout, "quiet hours: +%06.3fs to +%06.3fs (HUSH_QUIET_HOURS=%s in UTC, HUSH_DEFAULT_TIMEZONE)", quiet.from.Sub(t0).Seconds(), quiet.to.Sub(t0).Seconds(), quiet.env())
		for _, p := range plan {
			if p.at > 0 {
				fmt.Fprintf(stdout, "; %s #%d, %s, is submitted at +%06.3fs", p.user, p.n, p.category, p.at.Seconds())
			}
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintln(stdout)

	runCtx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	w := newDemoWatch(env, plan, policy, quiet, t0, stdout)
	if err := w.run(runCtx); err != nil {
		if tail := env.warnings.String(); tail != "" {
			return fmt.Errorf("demo: %w\nthe worker's last warnings (run with -v for all its logs):\n%s", err, tail)
		}
		return fmt.Errorf("demo: %w", err)
	}
	w.summary()
	return env.stop()
}

// demoStartup is about what the demo needs to start its worker; the burst
// starts no sooner.
const demoStartup = 500 * time.Millisecond

// demoQuiet are the demo's quiet hours, as instants (zero: none).
type demoQuiet struct{ from, to time.Time }

func (q demoQuiet) off() bool { return q.from.IsZero() }

// env is the quiet hours as HUSH_QUIET_HOURS writes them, in UTC ("" when
// none).
func (q demoQuiet) env() string {
	if q.off() {
		return ""
	}
	return q.from.UTC().Format("15:04:05") + "-" + q.to.UTC().Format("15:04:05")
}

// transactionalAt is when, since t0, the transactional push is submitted:
// a second into the quiet hours (halfway through shorter ones); 0 when
// there are none.
func (q demoQuiet) transactionalAt(t0 time.Time) time.Duration {
	if q.off() {
		return 0
	}
	return q.from.Sub(t0) + min(time.Second, q.to.Sub(q.from)/2)
}

// demoEnv is everything the demo starts: the fakes and a serving worker.
type demoEnv struct {
	apns *fake.APNs
	fcm  *fake.FCM
	// webpush is the fake push service; webpushToken the subscription
	// demoWebPushUser has there.
	webpush      *fake.WebPush
	webpushToken string
	api          *client.Client
	dir          string

	// warnings keeps the worker's last warnings and errors.
	warnings *logTail

	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// startDemoEnv starts the fakes, writes their credentials to a temporary
// directory and runs setup.Serve against them with an embedded Redis, then
// waits until the worker is ready.
func startDemoEnv(ctx context.Context, f demoFlags, quiet demoQuiet, stderr io.Writer) (*demoEnv, error) {
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
	cfg.ThrottleCategories, cfg.QuietHours = f.categories, quiet.env()
	// The demo's jobs name no timezone: the quiet hours are read in this
	// one, which env writes them in.
	cfg.DefaultTimezone = "UTC"
	cfg.APNSKeyFile, cfg.APNSKeyID, cfg.APNSTeamID = keyFile, keyID, teamID
	cfg.APNSTopic = "com.example.hush.demo"
	cfg.APNSEndpoint, cfg.APNSCaFile = env.apns.URL, caFile
	cfg.FCMCredentialsFile, cfg.FCMEndpoint = saFile, env.fcm.Endpoint()
	if err := env.startDemoWebPush(&cfg); err != nil {
		return nil, err
	}
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
	if env.webpush != nil {
		env.webpush.Close()
		env.webpush = nil
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
