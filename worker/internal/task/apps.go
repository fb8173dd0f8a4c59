package task

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/throttle"
)

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
const MaxSendDuration = providers.CallTimeout

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

// Resolve returns the app a job or delivery names: name, or, when empty,
// the only app or else DefaultApp. It wraps ErrUnknownApp when there is
// none, ErrAppRequired when none is named and several are configured.
func (a *Apps) Resolve(name string) (*App, error) {
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

// All are the apps, in the order of their names.
func (a *Apps) All() []*App {
	set := a.cur.Load()
	out := make([]*App, len(set.names))
	for i, n := range set.names {
		out[i] = set.byName[n]
	}
	return out
}

// Reloads counts the reloads Swap and Refuse saw, by result, for the
// worker's metrics.
func (a *Apps) Reloads() prometheus.Collector { return a.reloads }
