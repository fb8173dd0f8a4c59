package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hushpush/hush/client"
)

// preferencesCommands are the subcommands of the hush preferences group.
func preferencesCommands() []command {
	return []command{
		{"get", "show one user's own preferences in an app", runPreferencesGet, flagsOf(preferencesFlagSet), nil},
		{"put", "replace one user's own preferences: opt-outs, quiet hours, time zone", runPreferencesPut, flagsOf(preferencesFlagSet), nil},
		{"delete", "delete one user's own preferences", runPreferencesDelete, flagsOf(preferencesFlagSet), nil},
	}
}

// preferencesHelp is the help of hush preferences and of its
// subcommands.
func preferencesHelp() string {
	return `Usage:
  hush preferences get USER [--app APP] [--json] [--server URL]
  hush preferences put USER [--opt-out CATEGORIES] [--quiet-hours HH:MM-HH:MM] [--timezone ZONE] [--app APP] [--json] [--server URL]
  hush preferences delete USER [--app APP] [--server URL]

Subcommands:
` + commandTable(preferencesCommands()) + `
A user's own preferences are kept per app (apps sharing one limiter share
them), beside the user's limiter state: the categories they opted out of, their own quiet hours and their
time zone. put replaces them whole: what it is not given is none, so put
with no flags deletes them as delete does. get of a user with none shows
that they have none.

A critical push, and a category the operator marks required, are never
opted out of. What applies the preferences when a push is booked, and what
does not yet (the user's quiet hours and zone), is in docs/limiter.md.

Examples:
  hush preferences put u-42 --opt-out marketing,social --quiet-hours 22:00-07:00 --timezone Europe/Paris
  hush preferences get u-42 --app shop
  hush preferences delete u-42

The API token, when the server requires one, is read from HUSH_API_TOKEN.
Every subcommand takes the flags below, before or after USER.
`
}

func runPreferences(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := preferencesFlagSet(new(preferencesFlags))
	return runGroup(ctx, "preferences", preferencesHelp(), fs, preferencesCommands(), "get, put or delete", args, stdout, stderr)
}

// preferencesFlags are the flags of hush preferences get, put and delete.
type preferencesFlags struct {
	server     string
	app        string
	asJSON     bool
	optOut     multiFlag
	quietHours string
	timezone   string
}

// preferencesFlagSet is the flag set of hush preferences' subcommands,
// parsing into f.
func preferencesFlagSet(f *preferencesFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("preferences", flag.ContinueOnError)
	fs.StringVar(&f.server, "server", "", "hush API base `URL` (default from HUSH_HTTP_ADDR, else "+defaultServer+")")
	fs.StringVar(&f.app, "app", "", "the `app` whose user this is: preferences are per app, or per group sharing one limiter (default: the only app, else default)")
	fs.BoolVar(&f.asJSON, "json", false, "get, put: print the API's JSON answer, indented")
	fs.Var(&f.optOut, "opt-out", "put: `categories` the user opts out of, comma-separated or the flag repeated (default: none)")
	fs.StringVar(&f.quietHours, "quiet-hours", "", "put: the user's own quiet `hours`, HH:MM-HH:MM such as 22:00-07:00 (default: none)")
	fs.StringVar(&f.timezone, "timezone", "", "put: the user's IANA time `zone`, such as Europe/Paris (default: none)")
	return fs
}

// preferencesUser parses "preferences <sub> USER [flags]" into f and
// returns the user.
func preferencesUser(sub string, args []string, stdout io.Writer, f *preferencesFlags) (string, error) {
	pos, err := parseFlags(preferencesFlagSet(f), args, stdout, preferencesHelp())
	if err != nil {
		return "", err
	}
	if len(pos) != 1 || pos[0] == "" {
		return "", usageErrorf("preferences %s: want exactly one USER, got %d arguments", sub, len(pos))
	}
	if sub != "put" && (len(f.optOut) > 0 || f.quietHours != "" || f.timezone != "") {
		return "", usageErrorf("preferences %s: --opt-out, --quiet-hours and --timezone are put's", sub)
	}
	return pos[0], nil
}

func runPreferencesGet(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var f preferencesFlags
	user, err := preferencesUser("get", args, stdout, &f)
	if err != nil {
		return err
	}
	p, err := newClient(f.server).GetPreferences(ctx, f.app, user)
	if err != nil {
		return fmt.Errorf("preferences get: %w", readable(err))
	}
	return writePreferences(stdout, "preferences get", f.asJSON, p)
}

func runPreferencesPut(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var f preferencesFlags
	user, err := preferencesUser("put", args, stdout, &f)
	if err != nil {
		return err
	}
	in := client.Preferences{QuietHours: f.quietHours, Timezone: f.timezone}
	for _, v := range f.optOut {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" {
				in.OptOut = append(in.OptOut, c)
			}
		}
	}
	p, err := newClient(f.server).PutPreferences(ctx, f.app, user, in)
	if err != nil {
		return fmt.Errorf("preferences put: %w", readable(err))
	}
	return writePreferences(stdout, "preferences put", f.asJSON, p)
}

func runPreferencesDelete(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var f preferencesFlags
	user, err := preferencesUser("delete", args, stdout, &f)
	if err != nil {
		return err
	}
	p, err := newClient(f.server).DeletePreferences(ctx, f.app, user)
	if err != nil {
		return fmt.Errorf("preferences delete: %w", readable(err))
	}
	fmt.Fprintf(stdout, "deleted: %s has no preferences in app %s\n", p.UserID, p.App)
	return nil
}

// writePreferences prints p: as the API's JSON, indented, or for a
// person, one line per field.
func writePreferences(w io.Writer, what string, asJSON bool, p client.UserPreferences) error {
	if asJSON {
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	pw := printable{w}
	fmt.Fprintf(pw, "user %s  (app %s)\n", p.UserID, p.App)
	if len(p.OptOut) == 0 && p.QuietHours == "" && p.Timezone == "" {
		fmt.Fprintln(pw, "no preferences")
		return nil
	}
	optOut := "none"
	if len(p.OptOut) > 0 {
		optOut = strings.Join(p.OptOut, ", ")
	}
	fmt.Fprintln(pw, "opted out of: "+optOut)
	fmt.Fprintln(pw, "quiet hours:  "+orNone(p.QuietHours))
	fmt.Fprintln(pw, "time zone:    "+orNone(p.Timezone))
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
