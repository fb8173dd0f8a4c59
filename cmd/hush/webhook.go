package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/webhook"
)

// webhookCommands are hush webhook's subcommands.
func webhookCommands() []command {
	return []command{
		{"secret", "make a whsec_ secret that signs the webhook's POSTs (HUSH_WEBHOOK_SECRET)", runWebhookSecret, noFlags("webhook secret"), nil},
		{"status", "say whether the webhook endpoint is disabled, and how many events wait for a retry", runWebhookStatus, flagsOf(webhookFlagSet), nil},
		{"enable", "enable a disabled webhook endpoint: its waiting events are posted", runWebhookEnable, flagsOf(webhookFlagSet), nil},
	}
}

// webhookHelp is the help of hush webhook and of webhook secret.
func webhookHelp() string {
	return `Usage:
  hush webhook secret
  hush webhook status [--server URL]
  hush webhook enable [--server URL]

Subcommands:
` + commandTable(webhookCommands()) + `
hush signs every POST to HUSH_WEBHOOK_URL by the Standard Webhooks
specification: the headers webhook-id, webhook-timestamp and
webhook-signature, "v1,<base64 HMAC-SHA256 of id.timestamp.body>". secret
prints a new random secret as the HUSH_WEBHOOK_SECRET=whsec_... line; give
the same whsec_ value to the receiver, which verifies with any Standard
Webhooks library (in Go: github.com/hushpush/hush/webhook's Verify).

A POST that fails is tried again, with the same webhook-id, after 5 s, 5 min,
30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h; then the event is given up. An
endpoint that answers 410 Gone, or whose every POST failed for longer than
that schedule, is disabled: status says so and why, and enable (after the
receiver is fixed) posts the events that waited. Both call the API and need
a token for every app (HUSH_API_TOKEN).

To rotate: set HUSH_WEBHOOK_SECRET to the old and the new secret, comma
separated (each POST then carries both signatures), move the receiver to
the new one, then drop the old from HUSH_WEBHOOK_SECRET.

Examples:
  export $(hush webhook secret)
  hush webhook secret >> hush.env
  hush webhook status
  hush webhook enable
`
}

func runWebhook(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "webhook", webhookHelp(), nil, webhookCommands(), "secret, status or enable", args, stdout, stderr)
}

func runWebhookSecret(_ context.Context, args []string, stdout, _ io.Writer) error {
	pos, err := parseFlags(flag.NewFlagSet("webhook secret", flag.ContinueOnError), args, stdout, webhookHelp())
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("webhook secret: takes no arguments, got %q", pos[0])
	}
	s, err := webhook.NewSecret()
	if err != nil {
		return fmt.Errorf("webhook secret: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "HUSH_WEBHOOK_SECRET=%s\n", s)
	return err
}

type webhookFlags struct{ server string }

func webhookFlagSet(f *webhookFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	fs.StringVar(&f.server, "server", "", "hush API base `URL` (default from HUSH_HTTP_ADDR, else "+defaultServer+")")
	return fs
}

func runWebhookStatus(ctx context.Context, args []string, stdout, _ io.Writer) error {
	return webhookCall(ctx, "status", args, stdout, func(c *client.Client) (client.WebhookStatus, error) { return c.WebhookStatus(ctx) })
}

func runWebhookEnable(ctx context.Context, args []string, stdout, _ io.Writer) error {
	return webhookCall(ctx, "enable", args, stdout, func(c *client.Client) (client.WebhookStatus, error) { return c.EnableWebhook(ctx) })
}

// webhookCall runs status or enable: one call, then the state it answers.
func webhookCall(_ context.Context, name string, args []string, stdout io.Writer, call func(*client.Client) (client.WebhookStatus, error)) error {
	var f webhookFlags
	pos, err := parseFlags(webhookFlagSet(&f), args, stdout, webhookHelp())
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("webhook %s: takes no arguments, got %q", name, pos[0])
	}
	st, err := call(newClient(f.server))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", name, readable(err))
	}
	out := printable{stdout}
	if st.Disabled != nil {
		_, err = fmt.Fprintf(out, "disabled since %s: %s\n%d events wait for a retry; hush webhook enable posts them once the receiver is fixed\n",
			st.Disabled.At.UTC().Format(time.RFC3339), st.Disabled.Reason, st.Retrying)
		return err
	}
	_, err = fmt.Fprintf(out, "enabled; %d events wait for a retry\n", st.Retrying)
	return err
}
