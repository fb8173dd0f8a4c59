package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/hushpush/hush/webhook"
)

// webhookCommands are hush webhook's subcommands.
func webhookCommands() []command {
	return []command{
		{"secret", "make a whsec_ secret that signs the webhook's POSTs (HUSH_WEBHOOK_SECRET)", runWebhookSecret, noFlags("webhook secret"), nil},
	}
}

// webhookHelp is the help of hush webhook and of webhook secret.
func webhookHelp() string {
	return `Usage:
  hush webhook secret

Subcommands:
` + commandTable(webhookCommands()) + `
hush signs every POST to HUSH_WEBHOOK_URL by the Standard Webhooks
specification: the headers webhook-id, webhook-timestamp and
webhook-signature, "v1,<base64 HMAC-SHA256 of id.timestamp.body>". secret
prints a new random secret as the HUSH_WEBHOOK_SECRET=whsec_... line; give
the same whsec_ value to the receiver, which verifies with any Standard
Webhooks library (in Go: github.com/hushpush/hush/webhook's Verify).

To rotate: set HUSH_WEBHOOK_SECRET to the old and the new secret, comma
separated (each POST then carries both signatures), move the receiver to
the new one, then drop the old from HUSH_WEBHOOK_SECRET.

Examples:
  export $(hush webhook secret)
  hush webhook secret >> hush.env
`
}

func runWebhook(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printHelp(stderr, webhookHelp(), nil)
		return usageErrorf("webhook: want a subcommand: secret")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		printHelp(stdout, webhookHelp(), nil)
		return flag.ErrHelp
	}
	sub, ok := findCommand(webhookCommands(), args[0])
	if !ok {
		return usageErrorf("webhook: unknown subcommand %q (want secret)", args[0])
	}
	return sub.run(ctx, args[1:], stdout, stderr)
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
