package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// userCommands are the subcommands of the hush user group.
func userCommands() []command {
	return []command{
		{"delete", "delete every key hush keeps for one user of an app (a data-deletion request)", runUserDelete, flagsOf(userFlagSet), nil},
	}
}

// userHelp is the help of hush user and of user delete.
func userHelp() string {
	return `Usage:
  hush user delete USER [--app APP] [--server URL]

Subcommands:
` + commandTable(userCommands()) + `
delete removes every key hush keeps for the user in the app, for a
data-deletion request: their own preferences, their limiter state
(recorded sends, gap and bookings: a held push is booked again, and
counted, when it wakes) and their collapse records. It does not remove the
events of the user's pushes in hush:events (the stream's cap trims them)
or jobs not yet finished, which carry the user's id and devices: cancel
those first (hush cancel). Deleting again is safe.

Examples:
  hush user delete u-42
  hush user delete u-42 --app shop

The API token, when the server requires one, is read from HUSH_API_TOKEN.
`
}

func runUser(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := userFlagSet(new(userFlags))
	return runGroup(ctx, "user", userHelp(), fs, userCommands(), "delete", args, stdout, stderr)
}

// userFlags are the flags of hush user delete.
type userFlags struct {
	server string
	app    string
}

// userFlagSet is the flag set of hush user delete, parsing into f.
func userFlagSet(f *userFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("user", flag.ContinueOnError)
	fs.StringVar(&f.server, "server", "", "hush API base `URL` (default from HUSH_HTTP_ADDR, else "+defaultServer+")")
	fs.StringVar(&f.app, "app", "", "the `app` whose user to delete: hush keeps a user's data per app, or per group sharing one limiter (default: the only app, else default)")
	return fs
}

func runUserDelete(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var f userFlags
	pos, err := parseFlags(userFlagSet(&f), args, stdout, userHelp())
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return usageErrorf("user delete: want exactly one USER, got %d arguments", len(pos))
	}
	d, err := newClient(f.server).DeleteUser(ctx, f.app, pos[0])
	if err != nil {
		return fmt.Errorf("user delete: %w", readable(err))
	}
	fmt.Fprintf(printable{stdout}, "deleted: every key hush kept for %s in app %s is gone\n", d.UserID, d.App)
	return nil
}
