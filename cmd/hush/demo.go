package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/hushpush/hush/internal/demo"
	"github.com/hushpush/hush/throttle"
)

// demoFlagSet is hush demo's flag set, parsing into o.
func demoFlagSet(o *demo.Options) *flag.FlagSet {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&o.Limits, "limits", "3/10s", "per-user rolling-window caps, `N/W` comma list")
	fs.DurationVar(&o.MinGap, "min-gap", 2*time.Second, "minimum gap between two pushes to one user")
	fs.StringVar(&o.Categories, "categories", demo.CategoriesDefault, "the worker's categories, `NAME=RULES;...` as HUSH_THROTTLE_CATEGORIES writes them; when they define them, u-1's first two pushes are marketing and one push inside the quiet hours is transactional")
	fs.DurationVar(&o.QuietIn, "quiet-in", 3*time.Second, "the quiet hours begin this long after the burst (whole seconds)")
	fs.DurationVar(&o.QuietFor, "quiet-for", 3*time.Second, "the quiet hours last this long (whole seconds; 0: no quiet hours)")
	fs.IntVar(&o.Users, "users", 4, "users in the burst")
	fs.IntVar(&o.Pushes, "pushes", 5, "notifications per user, all submitted at once")
	fs.DurationVar(&o.Timeout, "timeout", time.Minute, "give up when the pushes have not all settled by then")
	fs.BoolVar(&o.Verbose, "v", false, "show the worker's logs on standard error")
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

// runDemo parses hush demo's command line, checks it, and hands the run to
// package demo.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o demo.Options
	pos, err := parseFlags(demoFlagSet(&o), args, stdout, demoHelp)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("demo takes no arguments, got %q (run 'hush demo --help')", pos)
	}
	if _, err := throttle.ParsePolicy(o.Limits, o.MinGap.String()); err != nil {
		return usageErrorf("demo: --limits %q --min-gap %s: %v", o.Limits, o.MinGap, err)
	}
	if _, err := throttle.ParseCategories(o.Categories); err != nil {
		return usageErrorf("demo: --categories %q: %v", o.Categories, err)
	}
	switch {
	case o.Users < 1 || o.Users > 50:
		return usageErrorf("demo: --users must be between 1 and 50, got %d", o.Users)
	case o.Pushes < 1 || o.Pushes > 50:
		return usageErrorf("demo: --pushes must be between 1 and 50, got %d", o.Pushes)
	case o.Timeout <= 0:
		return usageErrorf("demo: --timeout must be positive")
	case o.QuietIn < 0 || o.QuietIn >= 24*time.Hour || o.QuietIn%time.Second != 0:
		return usageErrorf("demo: --quiet-in must be whole seconds from 0s to under 24h (HUSH_QUIET_HOURS counts in seconds), got %s", o.QuietIn)
	case o.QuietFor < 0 || o.QuietFor >= 24*time.Hour || o.QuietFor%time.Second != 0:
		return usageErrorf("demo: --quiet-for must be whole seconds from 0s (none) to under 24h, got %s", o.QuietFor)
	}

	return demo.Run(ctx, o, stdout, stderr)
}
