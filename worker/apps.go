package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hushpush/hush/internal/mutant"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/task"
)

// DefaultApp is the name of the app of the single-app configuration
// (task.DefaultApp).
const DefaultApp = task.DefaultApp

// App is one application hush delivers for (task.App); Apps is a
// Worker's apps, replaced whole while it runs (task.Apps).
type (
	App  = task.App
	Apps = task.Apps
)

// NewApps returns the apps, checked: at least one, each with a valid,
// unique name and a limiter.
func NewApps(apps ...App) (*Apps, error) { return task.NewApps(apps...) }

// MaxSendDuration is the longest a provider call may take: senders
// replaced by Apps.Swap may be closed once it has passed.
const MaxSendDuration = task.MaxSendDuration

// The errors of resolving an app by name (task.ErrUnknownApp,
// task.ErrAppRequired).
var (
	ErrUnknownApp  = task.ErrUnknownApp
	ErrAppRequired = task.ErrAppRequired
)

// App returns the app named name, or, for "", the only app or else
// DefaultApp; an error naming the configured apps when there is none.
func (w *Worker) App(name string) (*App, error) { return w.apps.Resolve(name) }

// appOf is the app of delivery d's job.
func (w *Worker) appOf(d *task.Delivery) (*App, error) { return w.apps.Resolve(d.Content.App) }

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
	if !st.attempts.Carries(st.devices) {
		// Nothing reached the user under its booking, if it has one (a
		// chunk booked it): the slot goes back while it waits.
		if err := w.release(ctx, "app-waiting", failureReturned, st.attempts.N, d); err != nil {
			return err
		}
	}
	since, err := w.store.appWaitSince(ctx, d.Job, w.now(), d.TTL())
	if err != nil {
		return err
	}
	now := w.now()
	left := appWaitLeft(since, now, w.appWait)
	if mutant.On("appWaitNone") {
		left = 0
	}
	if left <= 0 {
		w.appWaits.done(d.AppName(), d.Member())
		return w.fail(ctx, d, decide.FailedOr(slices.Contains(st.devices, task.Delivered)),
			fmt.Sprintf("%s, waited %s since %s", missing, w.appWait, since.UTC().Format(time.RFC3339)))
	}
	next := appRecheckAfter(now.Sub(since), left)
	if logNow, waiting := w.appWaits.wait(d.AppName(), d.Member(), now, now.Add(next+appWaitGrace)); logNow {
		logWait(w.log, d.AppName(), waiting, missing, next)
	}
	return &DeferError{Delay: next}
}

// pipeOf is a's limiter as a task.PipeLimiter when it books on the worker's own
// Redis client (so bookings share round trips with the job store), else
// nil.
func (w *Worker) pipeOf(a *App) task.PipeLimiter {
	if p, ok := a.Limiter.(task.PipeLimiter); ok && p.Uses(w.rdb) {
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
