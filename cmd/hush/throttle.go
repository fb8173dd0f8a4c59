package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/hushpush/hush/client"
)

// throttleCommands are the subcommands of the hush throttle group.
func throttleCommands() []command {
	return []command{
		{"status", "show what the shared limiter knows about one user", runThrottleStatus, flagsOf(throttleFlagSet), nil},
		{"reset", "forget one user's recorded sends and bookings", runThrottleReset, flagsOf(throttleFlagSet), nil},
	}
}

// throttleHelp is the help of hush throttle and of its subcommands: what
// they do, and the flags both take.
func throttleHelp() string {
	return `Usage:
  hush throttle status USER [--json] [--server URL]
  hush throttle reset USER [--server URL]

Subcommands:
` + commandTable(throttleCommands()) + `
status shows the sends the limiter recorded for the user inside the longest
window (and slots booked for deferred deliveries, which lie in the future),
how many more sends each rule allows right now, and when the next send would
be allowed.

reset forgets the user's recorded sends and bookings, so their next
notification goes out at once. Deliveries already deferred keep their
wake-up time but are no longer held back when they wake.

Examples:
  hush throttle status u-42
  hush throttle status u-42 --json | jq .remaining
  hush throttle reset u-42

The API token, when the server requires one, is read from HUSH_API_TOKEN.
Both subcommands take the flags below, before or after USER.
`
}

func runThrottle(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := throttleFlagSet(new(throttleFlags))
	if len(args) == 0 {
		printHelp(stderr, throttleHelp(), fs)
		return usageErrorf("throttle: want a subcommand: status or reset")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		printHelp(stdout, throttleHelp(), fs)
		return flag.ErrHelp
	}
	sub, ok := findCommand(throttleCommands(), args[0])
	if !ok {
		return usageErrorf("throttle: unknown subcommand %q (want status or reset)", args[0])
	}
	return sub.run(ctx, args[1:], stdout, stderr)
}

// throttleFlags are the flags of hush throttle status and reset.
type throttleFlags struct {
	server string
	asJSON bool
}

// throttleFlagSet is the flag set of hush throttle status and reset,
// parsing into f.
func throttleFlagSet(f *throttleFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("throttle", flag.ContinueOnError)
	fs.StringVar(&f.server, "server", "", "hush API base `URL` (default from HUSH_HTTP_ADDR, else "+defaultServer+")")
	fs.BoolVar(&f.asJSON, "json", false, "status: print the API's JSON answer, indented")
	return fs
}

// throttleUser parses "throttle <sub> USER [flags]" into f and returns the
// user.
func throttleUser(sub string, args []string, stdout io.Writer, f *throttleFlags) (string, error) {
	pos, err := parseFlags(throttleFlagSet(f), args, stdout, throttleHelp())
	if err != nil {
		return "", err
	}
	if len(pos) != 1 || pos[0] == "" {
		return "", usageErrorf("throttle %s: want exactly one USER, got %d arguments", sub, len(pos))
	}
	return pos[0], nil
}

func runThrottleStatus(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var f throttleFlags
	user, err := throttleUser("status", args, stdout, &f)
	if err != nil {
		return err
	}
	st, err := newClient(f.server).UserThrottle(ctx, user)
	if err != nil {
		return fmt.Errorf("throttle status: %w", readable(err))
	}
	if f.asJSON {
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return fmt.Errorf("throttle status: %w", err)
		}
		_, err = stdout.Write(append(b, '\n'))
		return err
	}
	renderThrottle(stdout, st)
	return nil
}

func runThrottleReset(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var f throttleFlags
	user, err := throttleUser("reset", args, stdout, &f)
	if err != nil {
		return err
	}
	if err := newClient(f.server).ResetUserThrottle(ctx, user); err != nil {
		return fmt.Errorf("throttle reset: %w", readable(err))
	}
	fmt.Fprintf(stdout, "reset: %s's recorded sends and bookings are cleared; their next push goes out at once\n", user)
	return nil
}

// render writes the status for a human: times in UTC with the distance from
// the limiter's clock, which is the one that counts.
func renderThrottle(w io.Writer, s client.ThrottleStatus) {
	now := s.Now
	if now.IsZero() {
		now = time.Now()
	}
	fmt.Fprintf(w, "user %s  (limiter clock %s)\n", s.UserID, now.UTC().Format("2006-01-02 15:04:05.000 MST"))
	if !s.NextAllowed.After(now) {
		fmt.Fprintln(w, "next allowed: now")
	} else {
		fmt.Fprintf(w, "next allowed: in %s (at %s)\n", roundDur(s.NextAllowed.Sub(now)), s.NextAllowed.UTC().Format("15:04:05.000"))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(s.Remaining) > 0 {
		fmt.Fprintln(tw, "remaining:")
		for _, r := range s.Remaining {
			fmt.Fprintf(tw, "  %s\t%d more\n", r.Rule, r.Remaining)
		}
	}
	if s.MinGap != "" {
		fmt.Fprintf(tw, "  min gap\t%s\n", s.MinGap)
	}
	_ = tw.Flush()
	if len(s.Entries) == 0 {
		fmt.Fprintln(w, "recent sends: none inside the longest window")
		return
	}
	fmt.Fprintf(w, "recent sends and bookings (%d, oldest first):\n", len(s.Entries))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range s.Entries {
		when := roundDur(now.Sub(e.At)).String() + " ago"
		if e.At.After(now) {
			when = "in " + roundDur(e.At.Sub(now)).String() + " (booked)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.At.UTC().Format("15:04:05.000"), when, e.Member)
	}
	_ = tw.Flush()
}

// roundDur rounds d for display: tenths of a second under a minute, whole
// seconds above.
func roundDur(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
