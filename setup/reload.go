package setup

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/worker"
	"github.com/hushpush/hush/worker/httpapi"
)

// appsPollInterval is how often each process looks at the apps file and
// at every credential file (the file's apps' and the HUSH_* keys' app's)
// for a change: a look reads each one and compares its digest with the
// one the apps in use were built from, so a rotated key takes effect well
// within a minute, on every process, without a restart. SIGHUP reloads at
// once.
const appsPollInterval = 10 * time.Second

// reloader rebuilds the apps when a file they come from changes, or on
// SIGHUP, and swaps them into the worker's Apps: a new set is read,
// checked and built whole (senders warmed up) before it serves; a bad one
// is refused, logged and counted, and the apps in use go on. Replaced
// senders are closed retireAfter later, when no send can still use them.
type reloader struct {
	cfg  Config
	rdb  redis.UniversalClient
	apps *worker.Apps
	// tokens are the API's tokens for some apps, set anew by each reload;
	// nil when the API started without any.
	tokens *httpapi.Tokens
	log    *slog.Logger
	// retireAfter is how long replaced senders stay open
	// (worker.MaxSendDuration: every call under way has ended by then).
	retireAfter time.Duration

	// cur is the generation serving; seen the digests the last reload,
	// good or refused, was tried with. Only run's goroutine uses them.
	cur  *generation
	seen map[string]string

	mu       sync.Mutex
	retiring []*time.Timer // each closes a replaced generation
	old      []*generation
}

func newReloader(cfg Config, rdb redis.UniversalClient, apps *worker.Apps, cur *generation, tokens *httpapi.Tokens, log *slog.Logger) *reloader {
	return &reloader{cfg: cfg, rdb: rdb, apps: apps, tokens: tokens, log: log, retireAfter: worker.MaxSendDuration, cur: cur, seen: cur.digests}
}

// run looks for changes every interval and reloads on every value of
// hup, until ctx ends.
func (r *reloader) run(ctx context.Context, interval time.Duration, hup <-chan os.Signal) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.reload(ctx, "SIGHUP")
		case <-t.C:
			if changed := r.changed(); len(changed) > 0 {
				r.reload(ctx, "changed: "+strings.Join(changed, ", "))
			}
		}
	}
}

// changed lists the files whose content is not what the last reload saw
// (a file that appeared, vanished or became unreadable included).
func (r *reloader) changed() []string {
	var out []string
	for _, f := range slices.Sorted(maps.Keys(r.seen)) {
		if digestFile(f) != r.seen[f] {
			out = append(out, f)
		}
	}
	return out
}

// reload builds the apps anew and swaps them in, or refuses them.
func (r *reloader) reload(ctx context.Context, why string) {
	g, err := buildApps(ctx, r.cfg, r.rdb, true, true, r.log)
	r.seen = g.digests
	if err == nil {
		err = tokensKept(r.tokens != nil, len(g.tokens) > 0)
	}
	if err == nil {
		err = r.apps.Swap(g.apps...) // refuses (and counts) a set it cannot take
	} else {
		r.apps.Refuse(err)
	}
	if err != nil {
		g.close()
		r.log.Error("apps reload refused; the apps in use go on", "why", why, "err", err)
		return
	}
	if r.tokens != nil {
		r.tokens.Set(g.tokens)
	}
	added, removed, changed := appChanges(r.cur, g)
	r.log.Info("apps reloaded", "why", why, "apps", r.apps.Names(), "added", added, "removed", removed, "changed", changed)
	r.retire(r.cur)
	r.cur = g
}

// tokensKept refuses a reload that would give app tokens to an API that
// started without any (had false), or take the last of them from one that
// started with some: whether the API requires a token is decided at start,
// so that a reload never opens the API to any caller, nor closes it to the
// callers of an API that took requests without a token.
func tokensKept(had, has bool) error {
	switch {
	case had && !has:
		return keyErr(appsFileKey, "no api_tokens left (nor HUSH_API_TOKENS): the API started with app tokens and keeps requiring one; restart to serve without them")
	case !had && has:
		return keyErr(appsFileKey, "api_tokens added to an API that started without app tokens: restart for the API to take them")
	}
	return nil
}

// retire closes g once the sends that may still use it have ended.
func (r *reloader) retire(g *generation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.old = append(r.old, g)
	r.retiring = append(r.retiring, time.AfterFunc(r.retireAfter, g.close))
}

// close closes every generation, the one serving and the replaced ones
// not closed yet; run must have returned and the worker stopped.
func (r *reloader) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range r.retiring {
		t.Stop()
		r.old[i].close()
	}
	r.cur.close()
}

// appChanges says how generation b differs from a: the apps added and
// removed, and for each app in both what changed in it ("courier: apns
// credentials, throttle").
func appChanges(a, b *generation) (added, removed, changed []string) {
	before := map[string]appSpec{}
	for _, s := range a.specs {
		before[s.name] = s
	}
	after := map[string]bool{}
	for _, s := range b.specs {
		after[s.name] = true
		old, ok := before[s.name]
		if !ok {
			added = append(added, s.name)
			continue
		}
		if parts := specChanges(old, a.digests, s, b.digests); len(parts) > 0 {
			changed = append(changed, s.name+": "+strings.Join(parts, ", "))
		}
	}
	for _, s := range a.specs {
		if !after[s.name] {
			removed = append(removed, s.name)
		}
	}
	return added, removed, changed
}

// specChanges lists what differs between two versions of one app, x (its
// files' digests dx) and y (dy).
func specChanges(x appSpec, dx map[string]string, y appSpec, dy map[string]string) []string {
	var parts []string
	filesDiffer := func(files ...string) bool {
		for _, f := range files {
			if f != "" && dx[f] != dy[f] {
				return true
			}
		}
		return false
	}
	switch {
	case (x.apns == nil) != (y.apns == nil) || x.apns != nil && *x.apns != *y.apns:
		parts = append(parts, "apns settings")
	case x.apns != nil && filesDiffer(x.apns.KeyFile, x.apns.CertFile, x.apns.CAFile):
		parts = append(parts, "apns credentials")
	}
	switch {
	case (x.fcm == nil) != (y.fcm == nil) || x.fcm != nil && *x.fcm != *y.fcm:
		parts = append(parts, "fcm settings")
	case x.fcm != nil && filesDiffer(x.fcm.CredentialsFile):
		parts = append(parts, "fcm credentials")
	}
	switch {
	case (x.webpush == nil) != (y.webpush == nil) || x.webpush != nil && !reflect.DeepEqual(*x.webpush, *y.webpush):
		// The VAPID key pair lives in the file itself: a new key is a
		// change of settings.
		parts = append(parts, "webpush settings")
	case x.webpush != nil && filesDiffer(x.webpush.CAFile):
		parts = append(parts, "webpush credentials")
	}
	if rulesText(x.policy, x.maxPending) != rulesText(y.policy, y.maxPending) || x.scope != y.scope {
		parts = append(parts, "throttle")
	}
	if !maps.Equal(x.maxRate, y.maxRate) {
		parts = append(parts, "max_rate")
	}
	if !slices.Equal(x.apiTokens, y.apiTokens) {
		parts = append(parts, "api tokens")
	}
	return parts
}
