package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/providers"
)

// eventsFlags are the flags of hush events.
type eventsFlags struct {
	server              string
	app, typ, job, user string
	before, after       string
	limit               int
	follow, asJSON      bool
	poll                time.Duration
}

// eventsFlagSet is hush events' flag set, parsing into f.
func eventsFlagSet(f *eventsFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	fs.StringVar(&f.server, "server", "", "hush API base `URL` (default from HUSH_HTTP_ADDR, else "+defaultServer+")")
	fs.StringVar(&f.app, "app", "", "only this `APP`'s events")
	fs.StringVar(&f.typ, "type", "", "only events of this `TYPE`: delivered, failed, token_invalid or dropped")
	fs.StringVar(&f.job, "job", "", "only this job `ID`'s events")
	fs.StringVar(&f.user, "user", "", "only this `USER`'s events")
	fs.StringVar(&f.before, "before", "", "only events older than this `CURSOR` (a line's last column, or --json's cursor)")
	fs.StringVar(&f.after, "after", "", "only events newer than this `CURSOR`, oldest first")
	fs.IntVar(&f.limit, "limit", 20, "the most events to print, 1 to 1000 (with --follow: of those already there)")
	fs.BoolVar(&f.follow, "follow", false, "print the newest events oldest first, then each new one as it comes, until interrupted")
	fs.DurationVar(&f.poll, "poll", time.Second, "with --follow, how often to ask the server for new events")
	fs.BoolVar(&f.asJSON, "json", false, "print each event as the API's JSON, {\"cursor\",\"event\"}, one a line")
	return fs
}

// eventsHelp is the help of hush events; its flags follow it.
const eventsHelp = `Usage:
  hush events [--job ID] [--user USER] [--type TYPE] [--app APP] [--limit N]
              [--before CURSOR | --after CURSOR] [--follow] [--json] [--server URL]

Prints the events hush emitted (docs/events.md): each recipient's final
state (delivered; failed, with the reason; dropped without a send: expired,
throttle_full, collapsed or cancelled) and each device token a provider
said is dead (token_invalid). It reads them through the
API (GET /v1/events), so it needs no access to hush's Redis and reads the
right one in the quickstart. Newest first, one a line: the time, the type,
the app, the job, the user, the device (its platform and the token's ends)
and the reason, then the event's cursor.

The filters all have to match. Each request to the server reads a bounded
part of the stream, so hush events asks again until it has --limit events
or the stream's start. With --after, events newer than the cursor are
printed oldest first. --follow prints the newest --limit events oldest
first, then each new one as it is written, until interrupted.

Exit status: 0 when the events were read (none is not an error); 1 when the
server cannot be reached or refuses; 2 for a usage error.

Examples:
  hush events --job order-4711-shipped
  hush events --type token_invalid --app shop --limit 100
  hush events --user u-42 --follow
  hush events --json | jq -r 'select(.event.type=="token_invalid") | .event.token'

The API token, when the server requires one, is read from HUSH_API_TOKEN.
`

func runEvents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f eventsFlags
	pos, err := parseFlags(eventsFlagSet(&f), args, stdout, eventsHelp)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 0:
		return usageErrorf("events: takes no arguments, got %q (filters are flags: --job, --user, --type, --app)", pos[0])
	case f.limit < 1 || f.limit > 1000:
		return usageErrorf("events: --limit: want 1 to 1000, got %d", f.limit)
	case f.before != "" && f.after != "":
		return usageErrorf("events: give --before or --after, not both")
	case f.follow && (f.before != "" || f.after != ""):
		return usageErrorf("events: --follow starts from the newest events: leave out --before and --after")
	case f.poll <= 0:
		return usageErrorf("events: --poll: want a positive duration, got %s", f.poll)
	}
	c := newClient(f.server)
	q := client.EventsQuery{App: f.app, Type: f.typ, Job: f.job, User: f.user, Before: f.before, After: f.after}
	out := printable{stdout}
	print := func(en client.EventEntry) error {
		if f.asJSON {
			b, err := json.Marshal(en)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, "%s\n", b)
			return err
		}
		_, err := fmt.Fprintln(out, eventLine(en))
		return err
	}
	got, next, err := readEvents(ctx, c, q, f.limit)
	if err != nil {
		return fmt.Errorf("events: %w", readable(err))
	}
	if f.follow {
		slices.Reverse(got)
		if len(got) > 0 {
			next = got[len(got)-1].Cursor
		} else if next, err = newestCursor(ctx, c); err != nil {
			return fmt.Errorf("events: %w", readable(err))
		}
	}
	for _, en := range got {
		if err := print(en); err != nil {
			return err
		}
	}
	if !f.follow {
		return nil
	}
	// Follow: ask for what came after the last event seen, oldest first.
	q.Before, q.After = "", next
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(f.poll):
		}
		p, err := c.Events(ctx, client.EventsQuery{App: q.App, Type: q.Type, Job: q.Job, User: q.User, After: q.After, Limit: 1000})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			fmt.Fprintf(printable{stderr}, "events: %v (asking again)\n", readable(err))
			continue
		}
		for _, en := range p.Events {
			if err := print(en); err != nil {
				return err
			}
		}
		if p.Next != "" {
			q.After = p.Next
		}
	}
}

// maxEventRequests bounds the requests one read makes: each reads a
// bounded part of the stream, so a filter that matches nothing stops
// after this many instead of reading the whole stream.
const maxEventRequests = 100

// readEvents reads up to limit events of q, asking again while a page
// has a next and fewer events than wanted, and returns the cursor to go on
// from.
func readEvents(ctx context.Context, c *client.Client, q client.EventsQuery, limit int) ([]client.EventEntry, string, error) {
	var got []client.EventEntry
	for range maxEventRequests {
		q.Limit = limit - len(got)
		p, err := c.Events(ctx, q)
		if err != nil {
			return nil, "", err
		}
		got = append(got, p.Events...)
		if len(got) >= limit || p.Next == "" || (q.After != "" && len(p.Events) == 0 && p.Next == q.After) {
			return got, p.Next, nil
		}
		if q.After != "" {
			q.After = p.Next
		} else {
			q.Before = p.Next
		}
	}
	if len(got) > 0 {
		return got, "", nil
	}
	return nil, "", errors.New("the filters matched nothing in the part of the stream read; narrow them or give --before")
}

// newestCursor is the cursor of the stream's newest entry, matching or
// not, or "0-0" for an empty stream: where --follow starts when no event
// matched yet.
func newestCursor(ctx context.Context, c *client.Client) (string, error) {
	p, err := c.Events(ctx, client.EventsQuery{Limit: 1})
	if err != nil {
		return "", err
	}
	if len(p.Events) == 0 {
		return "0-0", nil
	}
	return p.Events[0].Cursor, nil
}

// eventLine is one event as hush events prints it: the device by its
// platform and the token's ends, never the whole token.
func eventLine(en client.EventEntry) string {
	e := en.Event
	parts := []string{e.At.UTC().Format("2006-01-02T15:04:05.000Z"), e.Type, "app=" + e.App, "job=" + e.Job, "user=" + e.UserID}
	if e.Platform != "" {
		parts = append(parts, "device="+e.Platform+":"+providers.TokenEnds(e.Token))
	}
	if e.Reason != "" {
		parts = append(parts, "reason="+quoteIfSpaced(e.Reason))
	}
	parts = append(parts, en.Cursor)
	return strings.Join(parts, " ")
}

// quoteIfSpaced quotes s when it holds a space, so a line splits on spaces.
func quoteIfSpaced(s string) string {
	if strings.ContainsAny(s, " \t") {
		return fmt.Sprintf("%q", s)
	}
	return s
}
