package worker

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// appRecheckMax bounds how long a delivery waiting for its app waits
// between two looks: an app that a reload brings is found within it (plus
// Asynq's DelayedTaskCheckInterval).
const appRecheckMax = 30 * time.Second

// appRecheckAfter is when a delivery waiting for its app looks again, its
// job's deliveries having waited waited, with left of HUSH_APP_WAIT to go:
// appRecheck at first, then a quarter of the time waited so far, at most
// appRecheckMax, never past the end of the wait. So 10,000 waiting
// deliveries run about 30 times each over a 10-minute wait, not 120.
func appRecheckAfter(waited, left time.Duration) time.Duration {
	return min(max(appRecheck, waited/4), appRecheckMax, left)
}

// appWaitLogEvery is how often the log says, per app, that deliveries
// wait for it.
const appWaitLogEvery = time.Minute

// appWaitGrace is how long after its next look is due a waiting delivery
// still counts as waiting here: Asynq moves a retry to pending up to
// DelayedTaskCheckInterval late, after rounding its time up to a second.
const appWaitGrace = delayedCheck + 2*time.Second

// appWaits are the deliveries this process handed back because their app
// (or its sender) was missing, by app, each until its next look is due
// (plus appWaitGrace), or until it stops waiting here: the gauge
// hush_app_waiting_deliveries, and the one log line per app per
// appWaitLogEvery.
type appWaits struct {
	n atomic.Int64 // entries in byApp, so a delivery that never waited takes no lock

	mu     sync.Mutex
	byApp  map[string]map[string]time.Time // app -> delivery member -> counted until
	logged map[string]time.Time            // app -> when its line was last logged
	pruned time.Time                       // when wait last pruned byApp
}

// wait counts delivery member of app as waiting until until, and reports
// whether the app's line is due, with the deliveries waiting for it.
func (a *appWaits) wait(app, member string, now, until time.Time) (logNow bool, waiting int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byApp == nil {
		a.byApp, a.logged = map[string]map[string]time.Time{}, map[string]time.Time{}
	}
	ms := a.byApp[app]
	if ms == nil {
		ms = map[string]time.Time{}
		a.byApp[app] = ms
	}
	if _, ok := ms[member]; !ok {
		a.n.Add(1)
	}
	ms[member] = until
	if now.Sub(a.pruned) >= time.Second {
		a.pruned = now
		a.pruneLocked(now)
	}
	if last, ok := a.logged[app]; !ok || now.Sub(last) >= appWaitLogEvery {
		a.logged[app] = now
		return true, len(a.byApp[app])
	}
	return false, len(a.byApp[app])
}

// done ends member's wait here (it found its app, or failed).
func (a *appWaits) done(app, member string) {
	if a.n.Load() == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.byApp[app][member]; ok {
		delete(a.byApp[app], member)
		a.n.Add(-1)
	}
}

// counts are the deliveries waiting per app at now.
func (a *appWaits) counts(now time.Time) map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pruneLocked(now)
	out := make(map[string]int, len(a.byApp))
	for app, ms := range a.byApp {
		out[app] = len(ms)
	}
	return out
}

// pruneLocked forgets the deliveries whose next look is past due (they run
// elsewhere, or their task ended), and the apps without any.
func (a *appWaits) pruneLocked(now time.Time) {
	for app, ms := range a.byApp {
		for m, until := range ms {
			if now.After(until) {
				delete(ms, m)
				a.n.Add(-1)
			}
		}
		if len(ms) == 0 {
			delete(a.byApp, app)
			if now.Sub(a.logged[app]) >= appWaitLogEvery {
				delete(a.logged, app)
			}
		}
	}
}

// logWait says, once per app per appWaitLogEvery, that deliveries wait
// for app and what they lack.
func logWait(log *slog.Logger, app string, waiting int, missing error, next time.Duration) {
	log.Info("deliveries wait for their app", "app", app, "waiting", waiting, "missing", missing, "next_look", next.Round(time.Second))
}

// appWaitCollector reports hush_app_waiting_deliveries at scrape time.
type appWaitCollector struct {
	waits *appWaits
	now   func() time.Time
	desc  *prometheus.Desc
}

func newAppWaitCollector(waits *appWaits, now func() time.Time) *appWaitCollector {
	return &appWaitCollector{waits: waits, now: now, desc: prometheus.NewDesc("hush_app_waiting_deliveries",
		"Deliveries this process handed back to wait for their app, or its sender for their platform, which it lacks (HUSH_APP_WAIT), by app; each counts until its next look is due.",
		[]string{"app"}, nil)}
}

func (c *appWaitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *appWaitCollector) Collect(ch chan<- prometheus.Metric) {
	for app, n := range c.waits.counts(c.now()) {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), app)
	}
}
