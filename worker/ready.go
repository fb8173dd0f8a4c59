package worker

import (
	"context"
	"time"

	"github.com/hushpush/hush/providers"
)

// credentialWindow is how long a provider's credential failure keeps the
// worker not ready.
const credentialWindow = time.Minute

// NotReady says what keeps the worker from working, for GET /readyz: its
// task server not running, Redis not answering, a Redis that may evict
// keys (unless Options.Eviction allows it), an app whose credentials a
// provider rejected in the last minute; none when it is ready. The
// problems name no address or server text (the readiness probe answers
// without authentication): the causes go to the log.
func (w *Worker) NotReady(ctx context.Context) []string {
	var problems []string
	if !w.running.Load() {
		problems = append(problems, "task server not running")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := w.rdb.Ping(ctx).Err(); err != nil {
		w.log.Warn("readiness: redis does not answer", "err", err)
		problems = append(problems, "redis unavailable")
	}
	if problem, _ := w.eviction.verdict(ctx, w.now()); problem != "" {
		problems = append(problems, problem)
	}
	for _, app := range w.creds.since(w.now().Add(-credentialWindow)) {
		problems = append(problems, "a provider rejected app "+app+"'s credentials in the last minute")
	}
	return problems
}

// refusesApp is the one home of what a provider's answer says of its
// app's credentials, for readiness: only app-wide evidence counts, an
// answer refusing what the app as a whole presents (APNs's provider token
// or certificate, FCM's service account, a VAPID key that cannot sign:
// Result.Credential). An answer about one device never counts, however
// many push services give it: a Web Push 401 or 403 (KeyRefusedBy) comes
// from a push service the subscriber picked, for a subscription made with
// some key, so readiness would depend on what clients control
// (docs/delivery.md, "Provider outcomes per device").
func refusesApp(r providers.Result) bool {
	return r.Credential && r.KeyRefusedBy == ""
}
