package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
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
  hush throttle status USER [--app APP] [--timezone ZONE] [--json] [--server URL]
  hush throttle reset USER [--app APP] [--server URL]

Subcommands:
` + commandTable(throttleCommands()) + `
status shows the sends the limiter recorded for the user inside the longest
window (and slots booked for deferred deliveries, which lie in the future),
per rule the sends in the window ending now, the bookings after now and how
many more sends a push now would find with those bookings kept, and when the
next send would be allowed, quiet hours included. It names the time zone the
quiet hours are read in and why: --timezone (give the one the user's jobs
carry), else the server's HUSH_DEFAULT_TIMEZONE, since the server does not
know a user's zone; and says whether the user is in them now. Held pushes
are listed with the slot each waits for. Then, for each category the server
has (HUSH_THROTTLE_CATEGORIES): its rules, what each of its caps has left,
when its next push would be allowed, its quiet hours and its held pushes.

reset forgets the user's recorded sends and bookings, in every category, so
their next notification goes out at once. Deliveries already deferred keep
their wake-up time but are no longer held back when they wake: each is
booked again then, and counted.

Examples:
  hush throttle status u-42
  hush throttle status u-42 --timezone Europe/Berlin
  hush throttle status u-42 --json | jq '.categories[].held'
  hush throttle reset u-42

The API token, when the server requires one, is read from HUSH_API_TOKEN.
Both subcommands take the flags below, before or after USER.
`
}

func runThrottle(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := throttleFlagSet(new(throttleFlags))
	return runGroup(ctx, "throttle", throttleHelp(), fs, throttleCommands(), "status or reset", args, stdout, stderr)
}

// throttleFlags are the flags of hush throttle status and reset.
type throttleFlags struct {
	server   string
	asJSON   bool
	timezone string
	app      string
}

// throttleFlagSet is the flag set of hush throttle status and reset,
// parsing into f.
func throttleFlagSet(f *throttleFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("throttle", flag.ContinueOnError)
	fs.StringVar(&f.server, "server", "", "hush API base `URL` (default from HUSH_HTTP_ADDR, else "+defaultServer+")")
	fs.BoolVar(&f.asJSON, "json", false, "status: print the API's JSON answer, indented")
	fs.StringVar(&f.app, "app", "", "the `app` whose limiter to read or reset: a user's budget is per app (default: the only app, else default)")
	fs.StringVar(&f.timezone, "timezone", "", "status: read the quiet hours in this IANA time `zone`, the user's (e.g. Europe/Berlin; default: the server's HUSH_DEFAULT_TIMEZONE)")
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
	st, err := newClient(f.server).UserThrottleOf(ctx, f.app, user, f.timezone)
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
	renderThrottle(printable{stdout}, st)
	return nil
}

func runThrottleReset(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var f throttleFlags
	user, err := throttleUser("reset", args, stdout, &f)
	if err != nil {
		return err
	}
	if err := newClient(f.server).ResetUserThrottleOf(ctx, f.app, user); err != nil {
		return fmt.Errorf("throttle reset: %w", readable(err))
	}
	fmt.Fprintf(stdout, "reset: %s's recorded sends and bookings are cleared; their next push goes out at once\n", user)
	return nil
}

// renderThrottle writes the status for a human: times in UTC with the
// distance from the limiter's clock, which is the one that counts; the
// user's own wall-clock time beside them when the quiet hours are read in
// another zone.
func renderThrottle(w io.Writer, s client.ThrottleStatus) {
	now := s.Now
	if now.IsZero() {
		now = time.Now()
	}
	fmt.Fprintf(w, "user %s  (limiter clock %s)\n", s.UserID, now.UTC().Format("2006-01-02 15:04:05.000 MST"))
	// An older server names no zone and has no quiet hours to report.
	var loc *time.Location
	if s.Timezone != "" {
		zone := "time zone " + s.Timezone
		if l, err := time.LoadLocation(s.Timezone); err == nil && l.String() != "UTC" {
			loc = l
			zone += " (" + now.In(loc).Format("15:04:05") + " there)"
		}
		switch s.TimezoneFrom {
		case client.TimezoneFromRequest:
			zone += ", as asked with --timezone"
		case client.TimezoneFromServerDefault:
			zone += ", the server's HUSH_DEFAULT_TIMEZONE: it does not know the user's zone; give it with --timezone"
		}
		fmt.Fprintln(w, zone)
		fmt.Fprintln(w, quietText(s.QuietHours, s.Quiet))
	}
	renderRules(w, "", now, loc, s.NextAllowed, s.Remaining, s.MinGap, s.Held, s.Entries)
	for _, c := range s.Categories {
		fmt.Fprintf(w, "category %s (rules %s)\n", c.Name, c.Rules)
		if s.Timezone != "" {
			fmt.Fprintln(w, "  "+quietText(c.QuietHours, c.Quiet))
		}
		if len(c.Remaining) > 0 || len(c.Entries) > 0 || len(c.Held) > 0 {
			renderRules(w, "  ", now, loc, c.NextAllowed, c.Remaining, "", c.Held, c.Entries)
			continue
		}
		switch {
		case !strings.Contains(c.Rules, "global=off"):
			fmt.Fprintln(w, "  no rules of its own: its pushes keep the global rules, among the sends above")
		case c.QuietHours != "":
			fmt.Fprintln(w, "  no rules: only its quiet hours hold its pushes back")
		default:
			fmt.Fprintln(w, "  no rules and no quiet hours: its pushes go out at once")
		}
		writeNextAllowed(w, "  ", now, c.NextAllowed)
	}
}

// quietText says what the quiet hours are and whether they hold now.
func quietText(hours string, quiet bool) string {
	switch {
	case hours == "":
		return "quiet hours: none"
	case quiet:
		return "quiet hours " + hours + ": quiet now"
	}
	return "quiet hours " + hours + ": not quiet now"
}

// renderRules writes one rule set's part of a status (the global rules', or
// a category's under indent): when the next push would be allowed, what
// each rule has left, the held pushes with their slots, and the recorded
// sends and bookings.
func renderRules(w io.Writer, indent string, now time.Time, loc *time.Location, next time.Time,
	remaining []client.RuleRemaining, minGap string, held, entries []client.ThrottleEntry) {
	writeNextAllowed(w, indent, now, next)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(remaining) > 0 {
		withBookings := remaining[0].AfterBookings != nil // an older server has no counts
		if withBookings {
			fmt.Fprintln(tw, indent+"remaining, the bookings kept:")
		} else {
			fmt.Fprintln(tw, indent+"remaining:")
		}
		for _, r := range remaining {
			if withBookings && r.Sent != nil && r.Booked != nil && r.AfterBookings != nil {
				fmt.Fprintf(tw, "%s  %s\t%d sent\t%d booked\t%d more\n", indent, r.Rule, *r.Sent, *r.Booked, *r.AfterBookings)
				continue
			}
			fmt.Fprintf(tw, "%s  %s\t%d more\n", indent, r.Rule, r.Remaining)
		}
	}
	if minGap != "" {
		fmt.Fprintf(tw, "%s  min gap\t%s\n", indent, minGap)
	}
	_ = tw.Flush()
	if len(held) > 0 {
		fmt.Fprintf(w, "%sheld (%d, each until its slot):\n", indent, len(held))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, e := range held {
			local := ""
			if loc != nil {
				local = "\t" + e.At.In(loc).Format("15:04:05") + " " + loc.String()
			}
			rule := ""
			if e.HeldBy != "" {
				rule = "\theld by " + e.HeldBy
			}
			fmt.Fprintf(tw, "%s  %s\tin %s%s\t%s%s\n", indent, e.At.UTC().Format("15:04:05.000"), roundDur(e.At.Sub(now)), local, e.Member, rule)
		}
		_ = tw.Flush()
	}
	if len(entries) == 0 {
		fmt.Fprintln(w, indent+"recent sends: none inside the longest window")
		return
	}
	fmt.Fprintf(w, "%srecent sends and bookings (%d, oldest first):\n", indent, len(entries))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range entries {
		when := roundDur(now.Sub(e.At)).String() + " ago"
		if e.At.After(now) {
			when = "in " + roundDur(e.At.Sub(now)).String() + " (booked)"
		}
		fmt.Fprintf(tw, "%s  %s\t%s\t%s\n", indent, e.At.UTC().Format("15:04:05.000"), when, e.Member)
	}
	_ = tw.Flush()
}

func writeNextAllowed(w io.Writer, indent string, now, next time.Time) {
	if !next.After(now) {
		fmt.Fprintln(w, indent+"next allowed: now")
		return
	}
	fmt.Fprintf(w, "%snext allowed: in %s (at %s)\n", indent, roundDur(next.Sub(now)), next.UTC().Format("15:04:05.000"))
}

// roundDur rounds d for display: tenths of a second under a minute, whole
// seconds above.
func roundDur(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
