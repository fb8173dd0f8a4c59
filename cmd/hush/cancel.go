package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"text/tabwriter"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/internal/cmdkit"
)

// cancelFlags are the flags of hush cancel.
type cancelFlags struct {
	server string
	asJSON bool
}

// cancelFlagSet is hush cancel's flag set, parsing into f.
func cancelFlagSet(f *cancelFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.StringVar(&f.server, "server", "", "hush API base `URL` (default from HUSH_HTTP_ADDR, else "+defaultServer+")")
	fs.BoolVar(&f.asJSON, "json", false, "print the API's JSON answer, indented")
	return fs
}

// cancelHelp is the help of hush cancel; its flags follow it.
const cancelHelp = `Usage:
  hush cancel ID [--server URL] [--json]

Cancels the job ID, the id hush send printed (DELETE /v1/notifications/{id}).
Every push of the job not yet sent is dropped: deliveries held for their
slot (by the rules or the quiet hours), a job waiting for its send_at, and
deliveries waiting to retry. Each gives its slot back to the user's limiter
and ends cancelled. Pushes already sent stay delivered: a cancellation
cannot recall them.

hush cancel waits until no push of the job can leave any more (about 3.5 s;
at once when every recipient already had a final state), then prints how
many recipients were delivered and how many cancelled. Cancelling again is
safe: it changes nothing and says when the job was cancelled. A job that
had already finished (every recipient delivered or dropped) is left as it
is, and hush cancel says so.

Exit status: 0 when the job is cancelled, by this call or an earlier one; 1
when the server knows no job ID or cannot be reached; 2 for a usage error.

Examples:
  hush cancel order-4711
  hush cancel order-4711 --json | jq .counts

The API token, when the server requires one, is read from HUSH_API_TOKEN.
`

func runCancel(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var f cancelFlags
	pos, err := parseFlags(cancelFlagSet(&f), args, stdout, cancelHelp)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return usageErrorf("cancel: want exactly one job ID, got %d arguments (run 'hush cancel --help')", len(pos))
	}
	id := pos[0]
	res, err := newClient(f.server).Cancel(ctx, id)
	if apiErr, ok := errors.AsType[*client.Error](err); ok && apiErr.Status == http.StatusNotFound {
		return fmt.Errorf("cancel: the server knows no job %q (404: %s); the id is the one hush send printed", id, apiErr.Message)
	}
	if err != nil {
		return fmt.Errorf("cancel: %w", readable(err))
	}
	if f.asJSON {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return fmt.Errorf("cancel: %w", err)
		}
		_, err = stdout.Write(append(b, '\n'))
		return err
	}
	renderCancel(printable{stdout}, res)
	return nil
}

// cancelStates are the delivery states a cancellation's answer counts, in
// the order they are shown, with what each means there.
var cancelStates = []struct{ state, meaning string }{
	{"delivered", "sent before the cancellation"},
	{"cancelled", "dropped unsent"},
	{"expired", "dropped before, expired"},
	{"token_invalid", "every token invalid"},
	{"failed", "failed before"},
	{"throttle_full", "dropped before, the user held too many pushes"},
	{"collapsed", "dropped before, replaced by a newer push"},
	{"pending", "being dropped now: they end cancelled (or delivered, if a device already had the push)"},
}

// renderCancel writes a cancellation's answer for a human: whether this
// call cancelled the job, and what became of its recipients.
func renderCancel(w io.Writer, r client.CancelResult) {
	job := fmt.Sprintf("job %s (%s)", r.ID, cmdkit.Plural(r.Recipients, "recipient"))
	switch {
	case !r.Cancelled && r.State == client.StateDone:
		fmt.Fprintf(w, "%s had already finished: every recipient has a final state; nothing was cancelled\n", job)
	case !r.Cancelled:
		when := ""
		if !r.CancelledAt.IsZero() {
			when = " at " + r.CancelledAt.UTC().Format("2006-01-02 15:04:05.000 MST")
		}
		fmt.Fprintf(w, "%s was already cancelled%s; nothing changed\n", job, when)
	case r.Counts["cancelled"]+r.Counts["pending"] == 0:
		fmt.Fprintf(w, "%s cancelled, but nothing was left to drop: every recipient already had a final state\n", job)
	default:
		fmt.Fprintf(w, "%s cancelled: none of its pushes will be sent from now on\n", job)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	known := map[string]bool{}
	for _, s := range cancelStates {
		known[s.state] = true
		if n := r.Counts[s.state]; n > 0 || s.state == "delivered" || s.state == "cancelled" {
			fmt.Fprintf(tw, "  %s\t%d\t%s\n", s.state, n, s.meaning)
		}
	}
	// A state a newer server counts that this one does not know yet.
	for _, state := range slices.Sorted(maps.Keys(r.Counts)) {
		if n := r.Counts[state]; !known[state] && n > 0 {
			fmt.Fprintf(tw, "  %s\t%d\n", state, n)
		}
	}
	_ = tw.Flush()
}
