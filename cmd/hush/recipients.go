package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hushpush/hush/client"
)

// recipientsFlags are the flags of hush recipients.
type recipientsFlags struct {
	server, state, cursor string
	limit                 int
	asJSON                bool
}

// recipientsFlagSet is hush recipients' flag set, parsing into f.
func recipientsFlagSet(f *recipientsFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("recipients", flag.ContinueOnError)
	fs.StringVar(&f.server, "server", "", "hush API base `URL` (default from HUSH_HTTP_ADDR, else "+defaultServer+")")
	fs.StringVar(&f.state, "state", "", "only recipients in this `STATE`: delivered, expired, token_invalid, failed,\nthrottle_full, collapsed, cancelled, opted_out, held or pending")
	fs.StringVar(&f.cursor, "cursor", "", "start at this `CURSOR` (the one a previous run printed after \"more:\")")
	fs.IntVar(&f.limit, "limit", 100, "the most recipients to print, 1 to 1000")
	fs.BoolVar(&f.asJSON, "json", false, "print each page as the API's JSON, one a line")
	return fs
}

// recipientsHelp is the help of hush recipients; its flags follow it.
const recipientsHelp = `Usage:
  hush recipients ID [--state STATE] [--limit N] [--cursor CURSOR] [--json] [--server URL]

What happened to this push? Prints the recipients of the job ID (the id
hush send printed) by index, their place in the job's recipients from 0,
one a line: the index, the state, the devices with a recorded state (their
place in the recipient's devices, and delivered or token_invalid) and, for
a held recipient, the slot the limiter booked and the rule that holds it
there (as 'hush throttle status' names it: held by 1/1h, marketing 2/1d,
quiet 22:00-08:00, send_at), then the task that will send it and when that
task wakes. The server looks the slot up for the first 20 held recipients
of each page it reads (--state held --limit 20 has each one's). It reads
them through the API (GET /v1/notifications/{id}/recipients).

States: a final state (delivered, expired, token_invalid, failed,
throttle_full, collapsed, cancelled, opted_out), held (waiting for the slot the
limiter booked) or pending (not sent yet, or being retried).

A failed recipient's line ends with its reason (what the provider or hush
said). What hush can tell, and when: while the job is live, every
recipient. Once every recipient has a final state, the job's
per-recipient records are deleted; its counts and the recipients that
ended other than delivered are kept (for HUSH_JOB_RETENTION, 24 h by
default): hush recipients then prints the counts, then each recipient's
final state, without devices. hush keeps no user id or device token with
a job's states: match an index with the job you sent.

hush recipients asks the server page by page until it has printed --limit
recipients in --state or reached the last one, then prints "more:" and the
command that goes on, if there are more.

Exit status: 0 when the recipients were read (none in the state is not an
error); 1 when the server knows no job ID or cannot be reached; 2 for a
usage error.

Examples:
  hush recipients order-4711
  hush recipients promo-7 --state failed
  hush recipients promo-7 --state held --limit 1000
  hush recipients promo-7 --json | jq -c '.items[] | select(.state=="token_invalid")'

The API token, when the server requires one, is read from HUSH_API_TOKEN.
`

// maxRecipientPages bounds the pages one run asks for: a filter that
// matches little reads at most this many pages of 1000 recipients.
const maxRecipientPages = 100

func runRecipients(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var f recipientsFlags
	pos, err := parseFlags(recipientsFlagSet(&f), args, stdout, recipientsHelp)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1 || pos[0] == "":
		return usageErrorf("recipients: want exactly one job ID, got %d arguments (run 'hush recipients --help')", len(pos))
	case f.limit < 1 || f.limit > 1000:
		return usageErrorf("recipients: --limit: want 1 to 1000, got %d", f.limit)
	}
	id := pos[0]
	c := newClient(f.server)
	out := printable{stdout}
	q := client.RecipientsQuery{State: f.state, Cursor: f.cursor}
	printed := 0
	tw := tabwriter.NewWriter(&trimmedLines{w: out}, 0, 0, 2, ' ', 0)
	for range maxRecipientPages {
		// Unfiltered, a page holds what it reads: read no more than is
		// printed. Filtered, read the most a page may.
		q.Limit = f.limit - printed
		if f.state != "" {
			q.Limit = 1000
		}
		p, err := c.Recipients(ctx, id, q)
		if apiErr, ok := errors.AsType[*client.Error](err); ok && apiErr.Status == http.StatusNotFound {
			return fmt.Errorf("recipients: the server knows no job %q (404: %s); the id is the one hush send printed, kept for HUSH_JOB_RETENTION after the job finished", id, apiErr.Message)
		}
		if err != nil {
			return fmt.Errorf("recipients: %w", readable(err))
		}
		if p.Retired && len(p.Items) == 0 && p.Next == "" && printed == 0 && f.state == "" {
			// Finished by a hush that kept no recipient's state.
			return printRetired(out, p)
		}
		if p.Retired && q.Cursor == f.cursor && !f.asJSON {
			fmt.Fprintf(out, "job %s finished (%s): %s; each recipient's final state:\n", p.ID, p.State, countsLine(p.Counts))
		}
		items := p.Items[:min(len(p.Items), f.limit-printed)]
		if f.asJSON {
			p.Items = items
			b, err := json.Marshal(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%s\n", b)
		} else {
			for _, r := range items {
				fmt.Fprintln(tw, recipientLine(r))
			}
		}
		printed += len(items)
		next := p.Next
		if len(items) < len(p.Items) {
			next = strconv.Itoa(items[len(items)-1].Index + 1)
		}
		if next == "" || printed >= f.limit {
			if err := tw.Flush(); err != nil {
				return err
			}
			if f.asJSON {
				return nil
			}
			if printed == 0 {
				fmt.Fprintf(out, "no recipient of job %s (%d recipients, %s) is %s\n", id, p.Recipients, p.State, orAny(f.state))
			}
			if next != "" {
				fmt.Fprintf(out, "more: hush recipients %s%s --cursor %s\n", id, stateFlag(f.state), next)
			}
			return nil
		}
		q.Cursor = next
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "stopped after %d pages; more: hush recipients %s%s --cursor %s\n", maxRecipientPages, id, stateFlag(f.state), q.Cursor)
	return nil
}

// recipientLine is one recipient as hush recipients prints it, its
// columns split by tabs.
func recipientLine(r client.RecipientState) string {
	cols := []string{"#" + strconv.Itoa(r.Index), r.State}
	var devs []string
	for _, d := range r.Devices {
		devs = append(devs, "device "+strconv.Itoa(d.Device)+" "+d.State)
	}
	cols = append(cols, strings.Join(devs, ", "))
	var more []string
	if r.Attempts > 0 {
		more = append(more, strconv.Itoa(r.Attempts)+" attempts before")
	}
	if r.Reason != "" {
		more = append(more, r.Reason)
	}
	if h := r.Held; h != nil {
		s := ""
		if !h.Slot.IsZero() {
			s = "slot " + h.Slot.UTC().Format("2006-01-02T15:04:05.000Z") + " (in " + roundDur(time.Until(h.Slot)).String() + ")"
			if h.HeldBy != "" {
				s += " held by " + h.HeldBy
			}
			s += "; "
		}
		s += "task " + h.Task + " in " + h.Queue
		if !h.WakesAt.IsZero() {
			s += ", wakes " + h.WakesAt.UTC().Format(time.RFC3339)
		}
		more = append(more, s)
	}
	cols = append(cols, strings.Join(more, "; "))
	return strings.Join(cols, "\t")
}

// trimmedLines writes to w, line by line, without the spaces a tabwriter
// pads a line's empty last columns with.
type trimmedLines struct {
	w    io.Writer
	part []byte
}

func (t *trimmedLines) Write(p []byte) (int, error) {
	t.part = append(t.part, p...)
	for {
		i := strings.IndexByte(string(t.part), '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := fmt.Fprintln(t.w, strings.TrimRight(string(t.part[:i]), " ")); err != nil {
			return 0, err
		}
		t.part = t.part[i+1:]
	}
}

// printRetired says what is left of a job finished by a hush that kept
// no recipient's state: its counts.
func printRetired(w io.Writer, p client.RecipientsPage) error {
	_, err := fmt.Fprintf(w, "job %s finished (%s): its %d recipients' own states are gone, only its counts are kept: %s\n",
		p.ID, p.State, p.Recipients, countsLine(p.Counts))
	return err
}

// countsLine is a finished job's counts, the states with none left out.
func countsLine(c map[string]int) string {
	var counts []string
	for _, s := range []string{"delivered", "expired", "token_invalid", "failed", "throttle_full", "collapsed", "cancelled", "opted_out"} {
		if n := c[s]; n > 0 {
			counts = append(counts, s+" "+strconv.Itoa(n))
		}
	}
	return strings.Join(counts, ", ")
}

func stateFlag(s string) string {
	if s == "" {
		return ""
	}
	return " --state " + s
}

func orAny(s string) string {
	if s == "" {
		return "listed"
	}
	return s
}
