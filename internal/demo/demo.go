package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/internal/cmdkit"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/setup"
	"github.com/hushpush/hush/throttle"
)

// CategoriesDefault are the demo's categories: marketing with a cap of its
// own, and transactional, which keeps no quiet hours by its name and no
// global rules by global=off.
const CategoriesDefault = "marketing=1/10s; transactional=none global=off"

// Options are what hush demo's flags ask for.
type Options struct {
	// Limits and MinGap are the worker's global rules (N/W comma list, as
	// HUSH_THROTTLE_LIMITS writes them), Categories its categories (as
	// HUSH_THROTTLE_CATEGORIES writes them).
	Limits     string
	MinGap     time.Duration
	Categories string
	// QuietIn is when the quiet hours begin after the burst, QuietFor how
	// long they last (0: none); both whole seconds, under a day.
	QuietIn, QuietFor time.Duration
	// Users in the burst, and Pushes per user, submitted at once (1 to 50
	// each).
	Users, Pushes int
	// Timeout gives up when the pushes have not all settled by then.
	Timeout time.Duration
	// Verbose shows the worker's logs on stderr.
	Verbose bool
}

// Run starts an embedded Redis, a worker and fake APNs, FCM and Web Push
// servers, submits the burst o asks for, writes a live timeline and a
// summary per user to stdout, checks each rule on the times the fakes saw,
// and stops everything it started.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	policy, err := throttle.ParsePolicy(o.Limits, o.MinGap.String())
	if err != nil {
		return fmt.Errorf("demo: limits %q, min gap %s: %w", o.Limits, o.MinGap, err)
	}
	if policy.Categories, err = throttle.ParseCategories(o.Categories); err != nil {
		return fmt.Errorf("demo: categories %q: %w", o.Categories, err)
	}

	// The burst starts on a whole second, at least startup from now:
	// HUSH_QUIET_HOURS is written to the second, so the quiet hours then
	// begin exactly QuietIn into the burst.
	t0 := time.Now().Add(startup + time.Second - 1).Truncate(time.Second)
	var quiet quietHours
	if o.QuietFor > 0 {
		quiet = quietHours{from: t0.Add(o.QuietIn), to: t0.Add(o.QuietIn + o.QuietFor)}
		if policy.Quiet, err = throttle.ParseQuiet(quiet.env()); err != nil {
			return fmt.Errorf("demo: quiet hours %s: %w", quiet.env(), err)
		}
	}
	env, err := startWorld(ctx, o, quiet, stderr)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer env.stop()

	plan := planBurst(o.Users, o.Pushes, policy.Categories, quiet.transactionalAt(t0))
	addWebPushDevice(plan, env.webpushToken)
	fmt.Fprintf(stdout, "hush demo: rules %s; %s x %s submitted at once", policy, cmdkit.Plural(o.Users, "user"), cmdkit.Plural(o.Pushes, "push"))
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

	runCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	w := newWatch(env, plan, policy, quiet, t0, stdout)
	if err := w.run(runCtx); err != nil {
		if tail := env.warnings.String(); tail != "" {
			return fmt.Errorf("demo: %w\nthe worker's last warnings (run with -v for all its logs):\n%s", err, tail)
		}
		return fmt.Errorf("demo: %w", err)
	}
	w.summary()
	return env.stop()
}

// startup is about what the demo needs to start its worker; the burst
// starts no sooner.
const startup = 500 * time.Millisecond

// quietHours are the demo's quiet hours, as instants (zero: none).
type quietHours struct{ from, to time.Time }

func (q quietHours) off() bool { return q.from.IsZero() }

// env is the quiet hours as HUSH_QUIET_HOURS writes them, in UTC ("" when
// none).
func (q quietHours) env() string {
	if q.off() {
		return ""
	}
	return q.from.UTC().Format("15:04:05") + "-" + q.to.UTC().Format("15:04:05")
}

// transactionalAt is when, since t0, the transactional push is submitted:
// a second into the quiet hours (halfway through shorter ones); 0 when
// there are none.
func (q quietHours) transactionalAt(t0 time.Time) time.Duration {
	if q.off() {
		return 0
	}
	return q.from.Sub(t0) + min(time.Second, q.to.Sub(q.from)/2)
}

// world is everything the demo starts: the fakes and a serving worker.
type world struct {
	apns *fake.APNs
	fcm  *fake.FCM
	// webpush is the fake push service; webpushToken the subscription
	// webPushUser has there.
	webpush      *fake.WebPush
	webpushToken string
	api          *client.Client
	dir          string

	// warnings keeps the worker's last warnings and errors.
	warnings *cmdkit.LogTail

	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// startWorld starts the fakes, writes their credentials to a temporary
// directory and runs setup.Serve against them with an embedded Redis, then
// waits until the worker is ready.
func startWorld(ctx context.Context, o Options, quiet quietHours, stderr io.Writer) (*world, error) {
	// The worker's warning that its Redis is embedded is left out: the demo
	// means it.
	env := &world{done: make(chan error, 1), warnings: &cmdkit.LogTail{Max: 12, Skip: "EMBEDDED IN-MEMORY Redis"}}
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
	env.apns.Script(badAPNsToken, fake.Unregistered())
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
	addr, err := cmdkit.FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	// The defaults hush serve runs with, but the demo's rules, fake
	// providers and listener; RedisURL stays empty: an embedded Redis.
	cfg := setup.DefaultConfig()
	cfg.ThrottleLimits, cfg.ThrottleMinGap = o.Limits, o.MinGap
	cfg.ThrottleCategories, cfg.QuietHours = o.Categories, quiet.env()
	// The demo's jobs name no timezone: the quiet hours are read in this
	// one, which env writes them in.
	cfg.DefaultTimezone = "UTC"
	cfg.APNSKeyFile, cfg.APNSKeyID, cfg.APNSTeamID = keyFile, keyID, teamID
	cfg.APNSTopic = "com.example.hush.demo"
	cfg.APNSEndpoint, cfg.APNSCaFile = env.apns.URL, caFile
	cfg.FCMCredentialsFile, cfg.FCMEndpoint = saFile, env.fcm.Endpoint()
	if err := env.startWebPush(&cfg); err != nil {
		return nil, err
	}
	cfg.HTTPAddr = addr
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.LogLevel = "debug"
	// Quiet unless -v, but the last warnings are kept for an error message.
	log := slog.New(slog.NewTextHandler(env.warnings, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if o.Verbose {
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
func (env *world) waitReady(ctx context.Context, limit time.Duration) error {
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
func (env *world) stop() error {
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
