package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/setup"
)

// serveHelp is the help of hush serve: what it does, and every HUSH_*
// key it reads (setup.PrintUsage).
func serveHelp() string {
	var keys strings.Builder
	if err := setup.PrintUsage(&keys); err != nil {
		keys.WriteString("(cannot print the configuration table: " + err.Error() + ")\n")
	}
	return `Usage: hush serve

Runs one hush worker process: it takes notification jobs and deliveries from
Redis (Asynq queues), asks the shared limiter for each user, sends through
APNs, FCM and Web Push, and serves the HTTP API with /healthz, /readyz and /metrics on
HUSH_HTTP_ADDR. Run as many processes as you like against the same Redis:
the per-user limits hold across all of them.

With HUSH_REDIS_URL unset it starts an embedded in-memory Redis (development
only: everything is lost on exit); with no provider credentials it runs in
dry-run and logs what it would send. SIGINT or SIGTERM stop it gracefully:
in-flight deliveries finish or go back to the queue (a second signal stops
it at once). SIGHUP reloads the apps file and the credential files at once
rather than at the next look.

Examples:
  hush serve
  HUSH_REDIS_URL=redis://127.0.0.1:6379/0 HUSH_THROTTLE_LIMITS=10/1m,100/24h \
    HUSH_THROTTLE_MIN_GAP=3s HUSH_DRY_RUN=true hush serve
  HUSH_REDIS_URL=redis://redis:6379/0 HUSH_APPS_FILE=/etc/hush/apps.yaml \
    hush serve

Apps (HUSH_APPS_FILE):

` + setup.AppsFileHelp() + `
Configuration (environment variables only; invalid values stop the start
with the key and the reason):

` + keys.String()
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	pos, err := parseFlags(noFlags("serve")(), args, stdout, serveHelp())
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("serve takes no arguments (it is configured by HUSH_* environment variables; see 'hush serve --help'), got %q", pos)
	}
	cfg, err := setup.LoadConfig()
	if err != nil {
		return fmt.Errorf("serve: invalid configuration (see 'hush serve --help'):\n%w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, restore the default handling: a second one
	// stops the process at once instead of waiting for the graceful drain.
	context.AfterFunc(ctx, stop)
	log := cfg.NewLogger(stderr)
	setup.WarnUnknownKeys(log, os.Environ())
	// go-redis's own messages in hush's format (the binary owns the
	// process-wide logger; the packages never set it).
	redis.SetLogger(setup.RedisLogger(log))
	return setup.Serve(ctx, cfg, log)
}
