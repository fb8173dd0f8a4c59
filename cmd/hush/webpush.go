package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/webpush"
)

// webpushCommands are hush webpush's subcommands.
func webpushCommands() []command {
	return []command{
		{"keys", "generate a VAPID key pair and print it with the applicationServerKey a web app subscribes with", runWebPushKeys, flagsOf(webpushKeysFlagSet), nil},
	}
}

// webpushHelp is the help of hush webpush and of webpush keys.
func webpushHelp() string {
	return `Usage:
  hush webpush keys [--json]

Subcommands:
` + commandTable(webpushCommands()) + `
keys makes a new P-256 key pair for VAPID (RFC 8292). Give the private key
to hush (HUSH_WEBPUSH_PRIVATE_KEY, or an app's webpush.private_key in the
apps file) and keep it secret; give the public key to your web app, which
passes it to pushManager.subscribe as applicationServerKey. A subscription
is bound to the key it was made with: a new key needs new subscriptions.

Without --json, stdout holds only the two KEY=value lines (for export or an
env file) and the applicationServerKey goes to stderr.

Examples:
  export $(hush webpush keys)
  hush webpush keys >> hush.env
  hush webpush keys --json > vapid.json
`
}

type webpushKeysFlags struct{ json bool }

func webpushKeysFlagSet(f *webpushKeysFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("webpush keys", flag.ContinueOnError)
	fs.BoolVar(&f.json, "json", false, `print {"public_key":..,"private_key":..} as JSON`)
	return fs
}

func runWebPush(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "webpush", webpushHelp(), nil, webpushCommands(), "keys", args, stdout, stderr)
}

func runWebPushKeys(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var f webpushKeysFlags
	pos, err := parseFlags(webpushKeysFlagSet(&f), args, stdout, webpushHelp())
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("webpush keys: takes no arguments, got %q", pos[0])
	}
	k, err := webpush.GenerateVAPIDKey()
	if err != nil {
		return fmt.Errorf("webpush keys: %w", err)
	}
	if f.json {
		b, _ := json.MarshalIndent(map[string]string{"public_key": k.PublicKey(), "private_key": k.PrivateKey()}, "", "  ")
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	// Only the KEY=value lines go to stdout, so that
	// `export $(hush webpush keys)` and `hush webpush keys >> .env` work.
	if _, err := fmt.Fprintf(stdout, "HUSH_WEBPUSH_PRIVATE_KEY=%s\nHUSH_WEBPUSH_PUBLIC_KEY=%s\n", k.PrivateKey(), k.PublicKey()); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stderr, "applicationServerKey (for pushManager.subscribe in your web app):\n%s\n", k.PublicKey())
	return err
}

// webpushDevices reads the PushSubscription JSON files of --webpush into
// devices.
func webpushDevices(files []string) ([]payload.Device, error) {
	var out []payload.Device
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, usageErrorf("send: --webpush: %v", err)
		}
		tok, err := payload.WebPushToken(b)
		if err != nil {
			return nil, usageErrorf("send: --webpush %s: %v", name, err)
		}
		out = append(out, payload.Device{Platform: payload.WebPush, Token: tok})
	}
	return out, nil
}
