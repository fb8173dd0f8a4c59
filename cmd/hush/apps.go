package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hushpush/hush/setup"
)

// appsCommands are the subcommands of the hush apps group.
func appsCommands() []command {
	return []command{
		{"check", "check an apps file offline (fields, credential files) and list its apps", runAppsCheck, noFlags("apps check"), nil},
	}
}

// appsHelp is the help of hush apps and of apps check: what check does,
// and the apps file's schema with an example.
func appsHelp() string {
	return `Usage:
  hush apps check FILE

Subcommands:
` + commandTable(appsCommands()) + `
check reads an apps file (HUSH_APPS_FILE, YAML or JSON) as hush serve
would, offline: no Redis, no network, nothing sent. It checks every field
and that each credential file can be read and parses (a .p8 key signs, a
.p12 opens with its password, a service-account JSON parses), then lists
the apps with their platforms, topics and projects, send rates, limiter
rules and throttle groups. A bad file gets every problem, each with its
line, app and field, and exit status 1. Throttle fields an app leaves out
are taken from this environment's HUSH_THROTTLE_* keys, as serve would.

Examples:
  hush apps check /etc/hush/apps.yaml
  hush apps check apps.json

` + setup.AppsFileHelp()
}

func runApps(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "apps", appsHelp(), nil, appsCommands(), "check", args, stdout, stderr)
}

func runAppsCheck(ctx context.Context, args []string, stdout, _ io.Writer) error {
	pos, err := parseFlags(noFlags("apps check")(), args, stdout, appsHelp())
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return usageErrorf("apps check: want exactly one FILE, got %d arguments", len(pos))
	}
	cfg, err := setup.LoadConfig()
	if err != nil {
		return fmt.Errorf("apps check: the HUSH_* keys, which give the throttle fields an app leaves out, are invalid:\n%w", err)
	}
	apps, err := setup.CheckAppsFile(ctx, cfg, pos[0])
	if err != nil {
		return fmt.Errorf("apps check: %w", err)
	}
	renderApps(stdout, pos[0], apps)
	return nil
}

// renderApps lists the apps of a good file, one block each.
func renderApps(w io.Writer, file string, apps []setup.AppInfo) {
	noun := "apps"
	if len(apps) == 1 {
		noun = "app"
	}
	fmt.Fprintf(w, "%s: %d %s, no problem found (credentials load; nothing was sent)\n", file, len(apps), noun)
	groups := map[string][]string{}
	for _, a := range apps {
		if a.Group != "" {
			groups[a.Group] = append(groups[a.Group], a.Name)
		}
	}
	for _, a := range apps {
		fmt.Fprintf(w, "\n%s\n", a.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
		if c := a.APNs; c != nil {
			host := "sandbox"
			if c.Production {
				host = "production"
			}
			fmt.Fprintf(tw, "  apns\t%s\n", strings.Join(nonEmpty(c.Topic, host, c.Auth, endpoint(c.Endpoint), maxRate(c.MaxRate, c.PerSecond)), ", "))
		}
		if c := a.FCM; c != nil {
			fmt.Fprintf(tw, "  fcm\t%s\n", strings.Join(nonEmpty("project "+c.Project, endpoint(c.Endpoint), maxRate(c.MaxRate, c.PerSecond)), ", "))
		}
		if c := a.WebPush; c != nil {
			fmt.Fprintf(tw, "  webpush\t%s\n", strings.Join(nonEmpty("vapid key "+c.PublicKey, c.Subject, maxRate(c.MaxRate, c.PerSecond)), ", "))
		}
		fmt.Fprintf(tw, "  throttle\t%s\n", a.Rules)
		limiter := a.LimiterKey
		if a.Group != "" {
			limiter += ", throttle_group " + a.Group + ": one budget per user for " + strings.Join(groups[a.Group], ", ")
		}
		fmt.Fprintf(tw, "  limiter\t%s\n", limiter)
		_ = tw.Flush()
	}
}

func endpoint(url string) string {
	if url == "" {
		return ""
	}
	return "endpoint " + url
}

// maxRate is "max 500/s", or "max 30000/1m (500/s)" when written
// otherwise ("" for none).
func maxRate(written string, perSecond float64) string {
	if written == "" {
		return ""
	}
	perS := fmt.Sprintf("%g/s", perSecond)
	if written == perS {
		return "max " + written
	}
	return "max " + written + " (" + perS + ")"
}

func nonEmpty(parts ...string) []string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
