package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/task"
)

// DefaultApp is the name of the app of the single-app configuration
// (task.DefaultApp).
const DefaultApp = task.DefaultApp

// App is one application hush delivers for: its providers' credentials
// (as senders), its users' limiter and its send rates.
type App struct {
	Name string
	// Senders per platform. A platform without one (when the app has any):
	// a job of this app whose devices use it is refused at submission; a
	// delivery already accepted fails its devices permanently ("no sender
	// configured").
	Senders map[payload.Platform]Sender
	// Limiter books this app's users' slots. Apps that share one budget
	// per user share one limiter (its keys' scope).
	Limiter Limiter
	// Policy is the limiter's policy: it names rules in the API and lists
	// the categories the app's jobs may name.
	Policy throttle.Policy
	// MaxRate caps the sends per second to a platform of this app, across
	// every process (absent or 0: no cap). It needs Options.Pacer.
	MaxRate map[payload.Platform]float64
}

// Apps is a Worker's apps: the whole set is replaced at once (Swap) while
// the worker runs, when credentials rotate or the apps file changes. A
// delivery takes the app it needs when it starts an attempt and keeps that
// App until the attempt ends, so in-flight sends finish with the senders
// they began with; whoever swaps closes the old senders once no call can
// still use them (MaxSendDuration after the swap).
type Apps struct {
	cur     atomic.Pointer[appSet]
	reloads *prometheus.CounterVec

	mu      sync.Mutex
	refused error // the last refused reload, nil after a good one
}

// appSet is one generation of apps.
type appSet struct {
	byName map[string]*App
	names  []string // sorted
}

// MaxSendDuration is the longest a provider call may take: senders
// replaced by Apps.Swap may be closed once it has passed.
const MaxSendDuration = sendTimeout

// NewApps returns the apps, checked: at least one, each with a valid,
// unique name and a limiter.
func NewApps(apps ...App) (*Apps, error) {
	a := &Apps{reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hush_apps_reloads_total",
		Help: "Reloads of the apps file and the credential files it names: ok (the new apps serve from then on) or refused (the file or a credential was bad; the old apps go on).",
	}, []string{"result"})}
	set, err := newAppSet(apps)
	if err != nil {
		return nil, err
	}
	a.cur.Store(set)
	return a, nil
}

func newAppSet(apps []App) (*appSet, error) {
	if len(apps) == 0 {
		return nil, errors.New("worker: no app")
	}
	set := &appSet{byName: map[string]*App{}}
	for i := range apps {
		p := &apps[i]
		switch {
		case !payload.ValidApp(p.Name):
			return nil, fmt.Errorf("worker: app %q: want a name of 1 to %d of a-z, 0-9, _ and -", p.Name, payload.MaxAppBytes)
		case set.byName[p.Name] != nil:
			return nil, fmt.Errorf("worker: app %q given twice", p.Name)
		case p.Limiter == nil:
			return nil, fmt.Errorf("worker: app %q: no limiter", p.Name)
		}
		set.byName[p.Name] = p
		set.names = append(set.names, p.Name)
	}
	slices.Sort(set.names)
	return set, nil
}

// Swap replaces the apps with apps, whole, and counts an ok reload. An
// invalid set changes nothing and is returned as the error.
func (a *Apps) Swap(apps ...App) error {
	set, err := newAppSet(apps)
	if err != nil {
		a.Refuse(err)
		return err
	}
	a.cur.Store(set)
	a.reloads.WithLabelValues("ok").Inc()
	a.mu.Lock()
	a.refused = nil
	a.mu.Unlock()
	return nil
}

// Refuse counts a reload that was refused because of err (a bad apps file
// or credential): the apps in use go on. /readyz does not fail for it (the
// old credentials still work); the error is kept for the operator's logs.
func (a *Apps) Refuse(err error) {
	a.reloads.WithLabelValues("refused").Inc()
	a.mu.Lock()
	a.refused = err
	a.mu.Unlock()
}

// Names are the apps' names, sorted.
func (a *Apps) Names() []string { return slices.Clone(a.cur.Load().names) }

// Get returns the app named name.
func (a *Apps) Get(name string) (*App, bool) {
	p, ok := a.cur.Load().byName[name]
	return p, ok
}

// resolve returns the app a job or delivery names: name, or, when empty,
// the only app or else DefaultApp. It wraps ErrUnknownApp when there is
// none, ErrAppRequired when none is named and several are configured.
func (a *Apps) resolve(name string) (*App, error) {
	set := a.cur.Load()
	if name == "" {
		if len(set.names) == 1 {
			return set.byName[set.names[0]], nil
		}
		if p, ok := set.byName[DefaultApp]; ok {
			return p, nil
		}
		return nil, fmt.Errorf("%w (configured: %s)", ErrAppRequired, strings.Join(set.names, ", "))
	}
	if p, ok := set.byName[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w %q (configured: %s)", ErrUnknownApp, name, strings.Join(set.names, ", "))
}

// The errors of resolving an app by name (Worker.App, and the Client's
// calls that name an app): ErrUnknownApp for a name no configured app
// has, ErrAppRequired for none named where several are configured. Both
// name the configured apps.
var (
	ErrUnknownApp  = errors.New("unknown app")
	ErrAppRequired = errors.New("required: none named, and this deployment serves several apps")
)

// App returns the app named name, or, for "", the only app or else
// DefaultApp; an error naming the configured apps when there is none.
func (w *Worker) App(name string) (*App, error) { return w.apps.resolve(name) }

// appOf is the app of delivery d's job.
func (w *Worker) appOf(d *task.Delivery) (*App, error) { return w.apps.resolve(d.Content.App) }

// DefaultAppWait is how long a delivery waits for an app, or an app's
// sender for a platform, that the process running it does not have: an
// apps file rolled out process by process, or an app renamed, leaves such
// a gap for a few minutes.
const DefaultAppWait = 10 * time.Minute

// appRecheck is how soon a delivery that has just begun to wait for its
// app looks again (appRecheckAfter).
const appRecheck = 5 * time.Second

// appMissing says what a delivery lacks to be sent by this process: its
// app (appErr, from resolving it), or the app's sender for the platform of
// one of its devices not yet settled (states, "" for those); nil when it
// lacks nothing. Every path asks it before sending (deliverChunk hands
// such a recipient to its delivery task, which waits: waitForApp).
func appMissing(app *App, appErr error, devices []payload.Device, states []string) error {
	if appErr != nil {
		return appErr
	}
	for j, dev := range devices {
		if j < len(states) && states[j] != "" {
			continue
		}
		if app.Senders[dev.Platform] == nil {
			return fmt.Errorf("%w: app %q has no %s sender", errNoSender, app.Name, dev.Platform)
		}
	}
	return nil
}

// appWaitLeft is how much longer a delivery waits for what it lacks, its
// job's deliveries having begun to wait at since: wait in all (0: the
// wait is over).
func appWaitLeft(since, now time.Time, wait time.Duration) time.Duration {
	return max(since.Add(wait).Sub(now), 0)
}

// waitForApp handles delivery d, whose recorded state is st, lacking what
// missing names: it comes back (a DeferError) until w.appWait has passed
// since its job's deliveries began to wait, then fails with the reason.
func (w *Worker) waitForApp(ctx context.Context, d *task.Delivery, st recipientState, missing error) error {
	if !st.attempts.carries(st.devices) {
		// Nothing reached the user under its booking, if it has one (a
		// chunk booked it): the slot goes back while it waits.
		if err := w.release(ctx, "app-waiting", failureReturned, st.attempts.n, d); err != nil {
			return err
		}
	}
	since, err := w.store.appWaitSince(ctx, d.Job, w.now(), d.TTL())
	if err != nil {
		return err
	}
	now := w.now()
	left := appWaitLeft(since, now, w.appWait)
	if mutant("appWaitNone") {
		left = 0
	}
	if left <= 0 {
		w.appWaits.done(d.AppName(), d.Member())
		return w.fail(ctx, d, failedOr(slices.Contains(st.devices, task.Delivered)),
			fmt.Sprintf("%s, waited %s since %s", missing, w.appWait, since.UTC().Format(time.RFC3339)))
	}
	next := appRecheckAfter(now.Sub(since), left)
	if logNow, waiting := w.appWaits.wait(d.AppName(), d.Member(), now, now.Add(next+appWaitGrace)); logNow {
		logWait(w.log, d.AppName(), waiting, missing, next)
	}
	return &DeferError{Delay: next}
}

// pipeOf is a's limiter as a pipeLimiter when it books on the worker's own
// Redis client (so bookings share round trips with the job store), else
// nil.
func (w *Worker) pipeOf(a *App) pipeLimiter {
	if p, ok := a.Limiter.(pipeLimiter); ok && p.Uses(w.rdb) {
		return p
	}
	return nil
}

// credentials remembers, per app, when a provider last refused its
// credentials (for /readyz).
type credentials struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (c *credentials) failed(app string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]time.Time{}
	}
	c.last[app] = at
}

// since lists the apps whose credentials were refused since t, sorted.
func (c *credentials) since(t time.Time) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for app, at := range c.last {
		if at.After(t) {
			out = append(out, app)
		}
	}
	slices.Sort(out)
	return out
}
