package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hushpush/hush/internal/suggest"
)

// command is one subcommand of hush, or of a command group (hush throttle).
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// flags builds the flag set run parses: the flags its help lists.
	flags func() *flag.FlagSet
	// subcommands are a group's commands (throttle's status and reset),
	// which its help lists; nil for a command that is not a group.
	subcommands func() []command
}

// commands lists the subcommands in the order help shows them.
func commands() []command {
	return []command{
		{"serve", "run the worker, the HTTP API, /healthz, /readyz and /metrics", runServe, noFlags("serve"), nil},
		{"send", "submit a notification job to a running hush", runSend, flagsOf(sendFlagSet), nil},
		{"recipients", "what happened to a job's pushes: each recipient's state, devices and held slot, filtered by state", runRecipients, flagsOf(recipientsFlagSet), nil},
		{"cancel", "cancel a job: drop its pushes not yet sent, say what was delivered", runCancel, flagsOf(cancelFlagSet), nil},
		{"throttle", "show (status) or clear (reset) one user's limiter state", runThrottle, flagsOf(throttleFlagSet), throttleCommands},
		{"preferences", "show (get), replace (put) or delete one user's own preferences: opt-outs, quiet hours, time zone", runPreferences, flagsOf(preferencesFlagSet), preferencesCommands},
		{"user", "delete every key hush keeps for one user (delete), for a data-deletion request", runUser, flagsOf(userFlagSet), userCommands},
		{"events", "print the events hush emitted (dead tokens, dropped pushes), filtered by job, user, type or app", runEvents, flagsOf(eventsFlagSet), nil},
		{"apps", "check an apps file (HUSH_APPS_FILE) offline and list its apps", runApps, noFlags("apps"), appsCommands},
		{"webpush", "generate a VAPID key pair for Web Push (keys)", runWebPush, noFlags("webpush"), webpushCommands},
		{"webhook", "make a secret that signs the webhook's POSTs (secret)", runWebhook, noFlags("webhook"), webhookCommands},
		{"simulate", "replay a \"time,user[,category[,timezone[,opted_out]]]\" trace against the limiter offline and compare rule sets", runSimulate, flagsOf(simulateFlagSet), nil},
		{"demo", "watch the throttle at work: embedded Redis, worker and fake APNs/FCM, a burst and a live timeline", runDemo, flagsOf(demoFlagSet), nil},
		{"bench", "measure deliveries/s and Redis CPU per delivery on a Redis you choose, with fake APNs, to size a deployment", runBench, flagsOf(benchFlagSet), nil},
		{"version", "print the version and the commit it was built from (also: hush --version)", runVersion, noFlags("version"), nil},
	}
}

// runGroup runs the subcommand args[0] of the command group name (hush
// apps, preferences, throttle, user, webhook, webpush), whose help is help
// and its flags fs (nil for none) and whose subcommands are cmds, want
// naming them for a usage error.
func runGroup(ctx context.Context, name, help string, fs *flag.FlagSet, cmds []command, want string, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printHelp(stderr, help, fs)
		return usageErrorf("%s: want a subcommand: %s", name, want)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		printHelp(stdout, help, fs)
		return flag.ErrHelp
	}
	sub, ok := findCommand(cmds, args[0])
	if !ok {
		return usageErrorf("%s: unknown subcommand %q%s; want %s", name, args[0], didYouMean(args[0], cmds), want)
	}
	return sub.run(ctx, args[1:], stdout, stderr)
}

// findCommand returns the command of cmds called name.
func findCommand(cmds []command, name string) (command, bool) {
	for _, c := range cmds {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// didYouMean is ` (did you mean "x"?)` when a command of cmds is near
// name (suggest.Nearest), else "".
func didYouMean(name string, cmds []command) string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	if best := suggest.Nearest(name, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// commandTable lists cmds for a help, one "  name   summary" row each.
func commandTable(cmds []command) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	_ = tw.Flush()
	return b.String()
}

// printUsage writes the top-level help, wrapped to the terminal.
func printUsage(w io.Writer) {
	help := command{name: "help", summary: "show the help of a command: hush help send"}
	printHelp(w, `hush delivers push notifications through Apple APNs, Firebase Cloud
Messaging and Web Push (browsers, UnifiedPush), with per-user throttling shared by every worker process.

Usage:
  hush <command> [flags] [arguments]

Commands:
`+commandTable(append(commands(), help))+`
Examples:
  # Development: an embedded in-memory Redis, and dry-run providers (nothing
  # is sent; each push is logged). The API listens on :8080.
  hush serve

  # Production: real Redis, APNs token auth and FCM service account.
  HUSH_REDIS_URL=redis://redis:6379/0 HUSH_APNS_KEY_FILE=AuthKey.p8 \
    HUSH_APNS_KEY_ID=ABC123 HUSH_APNS_TEAM_ID=TEAM42 \
    HUSH_APNS_TOPIC=com.example.app HUSH_FCM_CREDENTIALS_FILE=sa.json hush serve

  # Submit a job from a file, or build one from flags.
  hush send -f job.json
  hush send --user u-42 --fcm "$TOKEN" --title "Shipped" --body "Order 4711 is on its way"

  # A marketing push keeps its category's caps and the user's quiet hours;
  # call it off while it is held.
  hush send --id promo-7 --user u-42 --fcm "$TOKEN" --category marketing \
    --timezone Europe/Berlin --title "20% off today"
  hush cancel promo-7

  # Watch the throttle at work: no setup, no network, about 15 seconds.
  hush demo

  # What would stricter rules do to a day of real traffic ("time,user" CSV)?
  hush simulate --rules 10/1m,100/24h@3s --rules 5/1m,50/24h@10s --ttl 1h trace.csv

  # Why is u-42 not getting anything? Then start them over.
  hush throttle status u-42 --timezone Europe/Berlin
  hush throttle reset u-42

serve is configured only by HUSH_* environment variables; 'hush serve --help'
lists every one with its default. send, cancel and throttle talk to a running
serve: --server (default from HUSH_HTTP_ADDR, else http://127.0.0.1:8080) and
the bearer token in HUSH_API_TOKEN.

Run 'hush <command> --help' for a command's flags and examples.
`, nil)
}
