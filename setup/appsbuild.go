package setup

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// generation is one built set of apps: what worker.Apps serves, and what
// to close once it is replaced.
type generation struct {
	apps  []worker.App
	specs []appSpec
	// digests are the files the apps were read from and name, as they
	// were before they were read.
	digests map[string]string
	// tokens are the API tokens that act for some apps only, each with
	// its apps (tokenGrants).
	tokens  map[string][]string
	closers []func()
	closed  sync.Once
}

// close closes the generation's senders, once.
func (g *generation) close() {
	g.closed.Do(func() {
		for i := len(g.closers) - 1; i >= 0; i-- {
			g.closers[i]()
		}
	})
}

// buildApps reads and builds the apps cfg defines (with withEnv, the
// HUSH_* keys' app default when they define it): their senders, warmed up
// when warm, and their limiters on rdb (when rdb is nil, in-memory ones,
// only to check the rules). The apps file's problems, every one of them,
// are an *AppsFileError inside a *KeyError naming HUSH_APPS_FILE; a bad
// credential of the HUSH_* keys' app is an error naming its key.
//
// The generation is never nil: on error it holds only the digests of the
// files read, so that a reload is tried again only when one changes.
func buildApps(ctx context.Context, cfg Config, rdb redis.UniversalClient, withEnv, warm bool, log *slog.Logger) (*generation, error) {
	ac, err := readApps(cfg, withEnv)
	if err != nil {
		return &generation{digests: ac.digests}, &KeyError{Key: appsFileKey, Err: err}
	}
	g := &generation{specs: ac.specs, digests: ac.digests}
	dryRun := cfg.DryRun || !anyConfigured(ac.specs)
	limiters := map[string]worker.Limiter{} // by scope: a group's apps share one
	for _, a := range ac.specs {
		if a.broken {
			continue
		}
		senders, closeSenders, err := newSenders(ctx, a, dryRun, warm, log, ac.ps)
		if err != nil {
			g.close()
			return &generation{digests: ac.digests}, err
		}
		g.closers = append(g.closers, closeSenders)
		lim, ok := limiters[a.scope]
		if !ok {
			if lim, err = newLimiter(rdb, a); err != nil {
				ac.ps.addf(a.label+".throttle", ac.ps.lines[a.label+".throttle"], "%w", err)
				continue
			}
			limiters[a.scope] = lim
		}
		g.apps = append(g.apps, worker.App{Name: a.name, Senders: senders, Limiter: lim, Policy: a.policy, MaxRate: a.maxRate})
		if warm {
			logApp(log, a, senders, dryRun)
		}
	}
	if len(ac.ps.list) > 0 {
		g.close()
		return &generation{digests: ac.digests}, &KeyError{Key: appsFileKey, Err: &AppsFileError{File: ac.file, Problems: ac.ps.sorted()}}
	}
	if g.tokens, err = tokenGrants(cfg, ac.specs); err != nil {
		g.close()
		return &generation{digests: ac.digests}, err
	}
	if dryRun && warm {
		// Only for apps that serve: a bad apps file's error is the news,
		// not a dry-run that never starts.
		warnDryRun(cfg, log)
	}
	return g, nil
}

// newLimiter is app a's limiter: on rdb under a's scope, or in memory when
// rdb is nil.
func newLimiter(rdb redis.UniversalClient, a appSpec) (worker.Limiter, error) {
	o := a.limiterOptions()
	if rdb == nil {
		return throttle.NewMemory(a.policy, o)
	}
	l, err := throttle.NewRedis(rdb, a.policy, o)
	if err != nil {
		return nil, fmt.Errorf("limiter: %w", err)
	}
	return l, nil
}

// limiterOptions are app a's limiter's options: its scope, its pending
// cap, and the collapse margin the worker needs.
func (a appSpec) limiterOptions() throttle.Options {
	return throttle.Options{Scope: a.scope, MaxPending: limiterMaxPending(a.maxPending), CollapseMargin: worker.CollapseMargin}
}

// limiterMaxPending is HUSH_THROTTLE_MAX_PENDING (or an app's
// throttle.max_pending) as throttle.Options.MaxPending: the key's 0 is no
// cap, which the limiter spells NoMaxPending (its 0 is its default).
func limiterMaxPending(n int) int {
	if n == 0 {
		return throttle.NoMaxPending
	}
	return n
}

// logApp says what app a serves with.
func logApp(log *slog.Logger, a appSpec, senders map[payload.Platform]worker.Sender, dryRun bool) {
	platforms := slices.Sorted(maps.Keys(senders))
	attrs := []any{"app", a.name, "platforms", platforms, "dry_run", dryRun, "rules", rulesText(a.policy, a.maxPending), "limiter_key", limiterKey(a.scope)}
	if a.group != "" {
		attrs = append(attrs, "throttle_group", a.group)
	}
	for _, p := range slices.Sorted(maps.Keys(a.maxRate)) {
		attrs = append(attrs, "max_rate_"+string(p), rateText(a.maxRate[p]))
	}
	log.Info("app ready", attrs...)
}

// limiterKey is a user's limiter key under scope, as the log and hush apps
// show it: hush:throttle:{courier:<user>}, or without a scope
// hush:throttle:{<user>}, the key of every plain id (an id that a scoped
// key could read the same is written {:<user>}; throttle's keys.go).
func limiterKey(scope string) string {
	if scope == "" {
		return throttle.DefaultPrefix + "{<user>}"
	}
	return throttle.DefaultPrefix + "{" + scope + ":<user>}"
}
