package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/payload"
)

// sendFlags are the flags of hush send.
type sendFlags struct {
	file        string
	server      string
	id          string
	user        string
	apns, fcm   multiFlag
	webpush     multiFlag
	title, body string
	sound       string
	badge       *int
	image       string
	priority    string
	ttl         time.Duration
	collapseKey string
	data        multiFlag
	silent      bool
	category    string
	app         string
	timezone    string
	// sendAt is --send-at, parsed; sendIn is --send-in, made a time when
	// the job is built.
	sendAt *time.Time
	sendIn time.Duration
}

// sendFlagSet is hush send's flag set, parsing into f.
func sendFlagSet(f *sendFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.StringVar(&f.file, "f", "", "read the job JSON from `file` (\"-\": standard input) and submit it as is")
	fs.StringVar(&f.server, "server", "", "hush API base `URL` (default from HUSH_HTTP_ADDR, else "+defaultServer+")")
	fs.StringVar(&f.id, "id", "", "idempotency `key` of the job; a second send with the same id changes nothing (default: generated)")
	fs.StringVar(&f.user, "user", "", "the recipient's user `id` (the limiter's key)")
	fs.Var(&f.apns, "apns", "APNs device `token` (hex); repeat for several devices")
	fs.Var(&f.fcm, "fcm", "FCM registration `token`; repeat for several devices")
	fs.Var(&f.webpush, "webpush", "`file` holding a browser's PushSubscription JSON; repeat for several devices")
	fs.StringVar(&f.title, "title", "", "alert title")
	fs.StringVar(&f.body, "body", "", "alert body")
	fs.StringVar(&f.sound, "sound", "", "alert sound (e.g. default)")
	fs.Func("badge", "app icon badge `number`", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not a number: %q", v)
		}
		f.badge = &n
		return nil
	})
	fs.StringVar(&f.image, "image", "", "image `URL` shown with the alert")
	fs.StringVar(&f.priority, "priority", "", "normal, high or critical (critical bypasses the limiter by default)")
	fs.DurationVar(&f.ttl, "ttl", 0, "drop the notification if it cannot be sent within this `duration` (e.g. 2h)")
	fs.StringVar(&f.collapseKey, "collapse-key", "", "a newer notification with the same `key` replaces an older one on the device")
	fs.Var(&f.data, "data", "custom data `key=value` delivered to the app; repeatable")
	fs.BoolVar(&f.silent, "silent", false, "a silent (background, data-only) push")
	fs.StringVar(&f.app, "app", "", "the `app` the job is for, one of the server's (required when it serves several: HUSH_APPS_FILE)")
	fs.StringVar(&f.category, "category", "", "the job's category `name`, one of the server's HUSH_THROTTLE_CATEGORIES: its own caps and quiet hours apply")
	fs.Func("send-at", "send no earlier than this RFC 3339 `time` (e.g. 2026-11-22T08:00:00+01:00); --ttl counts from it", func(v string) error {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return fmt.Errorf("not an RFC 3339 time such as 2026-11-22T08:00:00+01:00: %q", v)
		}
		f.sendAt = &t
		return nil
	})
	fs.DurationVar(&f.sendIn, "send-in", 0, "send no earlier than this `duration` from now (e.g. 10m): --send-at, computed on this machine's clock")
	fs.StringVar(&f.timezone, "timezone", "", "the user's IANA time `zone` (e.g. Europe/Berlin), for their quiet hours (default: the server's HUSH_DEFAULT_TIMEZONE)")
	return fs
}

// sendHelp is the help of hush send; its flags follow it.
const sendHelp = `Usage:
  hush send -f job.json
  hush send --user USER (--apns TOKEN | --fcm TOKEN | --webpush FILE)... [--title T] [--body B] [--category NAME] [--send-at TIME | --send-in D] [--timezone ZONE] [flags]

Submits one notification job to a running hush (POST /v1/notifications) and
prints the job's id. The server validates the job; when it refuses it, every
problem is printed with the field it concerns. A job with an id the server
has already accepted is acknowledged as a duplicate and changes nothing.

--category names one of the categories the server is configured with
(HUSH_THROTTLE_CATEGORIES): the push then keeps that category's caps and
quiet hours as well as the global rules, unless the category says
global=off; an unknown category is refused. --send-at (or --send-in, from
now) holds the job until then; every rule and the quiet hours still apply
from there. --timezone is the user's time zone: their quiet hours are read
in it (default: the server's HUSH_DEFAULT_TIMEZONE). A push that falls in
quiet hours is held until they end, not dropped, unless it expires first.

The flag form builds a job for one user; use -f for several recipients, a
custom expires_at and the other fields of the job format:

  {"id": "order-4711-shipped",
   "recipients": [{"user_id": "u-42", "devices": [
    {"platform": "apns", "token": "<64 hex chars>"},
    {"platform": "fcm", "token": "<registration token>"}]}],
   "alert": {"title": "Shipped",
             "body": "Order 4711 is on its way"},
   "data": {"order": "4711"}, "ttl": "2h"}

Examples:
  hush send -f job.json
  hush send --user u-42 --fcm "$FCM_TOKEN" --title Shipped --body "Order 4711 is on its way" --data order=4711
  hush send --id order-4711 --user u-42 --apns "$APNS_TOKEN" --silent --data sync=1 --priority high
  hush send --user u-42 --fcm "$FCM_TOKEN" --category marketing --timezone Europe/Berlin --title "20% off today"
  hush send --user u-42 --fcm "$FCM_TOKEN" --send-in 10m --ttl 1h --title "Your table is ready soon"

The API token, when the server requires one, is read from HUSH_API_TOKEN.
`

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f sendFlags
	fs := sendFlagSet(&f)
	pos, err := parseFlags(fs, args, stdout, sendHelp)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("send: unexpected argument %q (run 'hush send --help')", pos[0])
	}
	// With -f the file goes as it is, so the server's strict decoding sees
	// what was written; else the flags build the job.
	c := newClient(f.server)
	var acc client.Accepted
	if f.file != "" {
		var body []byte
		if body, err = f.fileBody(fs); err != nil {
			return err
		}
		acc, err = c.SubmitJSON(ctx, body)
	} else {
		var job payload.Job
		if job, err = f.job(time.Now()); err != nil {
			return err
		}
		acc, err = c.Submit(ctx, job)
	}
	if err != nil {
		return fmt.Errorf("send: %w", readable(err))
	}
	// The id is the server's: it reaches the terminal escaped.
	fmt.Fprintln(printable{stdout}, acc.ID)
	if acc.Duplicate {
		fmt.Fprintf(printable{stderr}, "duplicate: job %s was already accepted; nothing changed\n", acc.ID)
	}
	return nil
}

// fileBody reads the job file of -f ("-": standard input).
func (f *sendFlags) fileBody(fs *flag.FlagSet) ([]byte, error) {
	var others []string
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name != "f" && fl.Name != "server" {
			others = append(others, "--"+fl.Name)
		}
	})
	if len(others) > 0 {
		return nil, usageErrorf("send: -f cannot be combined with %s: put those fields in the file", strings.Join(others, ", "))
	}
	if f.file == "-" {
		return io.ReadAll(os.Stdin)
	}
	b, err := os.ReadFile(f.file)
	if err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	return b, nil
}

// job builds the job the flags describe; now is what --send-in counts
// from.
func (f *sendFlags) job(now time.Time) (payload.Job, error) {
	if f.user == "" {
		return payload.Job{}, usageErrorf("send: give -f job.json, or --user with at least one --apns, --fcm or --webpush device (run 'hush send --help')")
	}
	if len(f.apns)+len(f.fcm)+len(f.webpush) == 0 {
		return payload.Job{}, usageErrorf("send: --user %s needs at least one device: --apns TOKEN, --fcm TOKEN or --webpush FILE", f.user)
	}
	r := payload.Recipient{UserID: f.user, Timezone: f.timezone}
	for _, t := range f.apns {
		r.Devices = append(r.Devices, payload.Device{Platform: payload.APNs, Token: t})
	}
	for _, t := range f.fcm {
		r.Devices = append(r.Devices, payload.Device{Platform: payload.FCM, Token: t})
	}
	web, err := webpushDevices(f.webpush)
	if err != nil {
		return payload.Job{}, err
	}
	r.Devices = append(r.Devices, web...)
	sendAt, err := f.when(now)
	if err != nil {
		return payload.Job{}, err
	}
	job := payload.Job{
		ID:         f.id,
		Recipients: []payload.Recipient{r},
		Content: payload.Content{
			App:         f.app,
			Priority:    payload.Priority(f.priority),
			Category:    f.category,
			CollapseKey: f.collapseKey,
			SendAt:      sendAt,
			TTL:         payload.Duration(f.ttl),
			Silent:      f.silent,
		},
	}
	alert := payload.Alert{Title: f.title, Body: f.body, Sound: f.sound, Badge: f.badge, Image: f.image}
	if alert != (payload.Alert{}) {
		job.Alert = &alert
	}
	for _, kv := range f.data {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return payload.Job{}, usageErrorf("send: --data %q: want key=value", kv)
		}
		if job.Data == nil {
			job.Data = map[string]string{}
		}
		job.Data[k] = v
	}
	return job, nil
}

// when is the job's send_at: --send-at, or now plus --send-in (nil when
// neither is given).
func (f *sendFlags) when(now time.Time) (*time.Time, error) {
	switch {
	case f.sendAt != nil && f.sendIn != 0:
		return nil, usageErrorf("send: give --send-at or --send-in, not both")
	case f.sendIn < 0:
		return nil, usageErrorf("send: --send-in %s: must not be negative", f.sendIn)
	case f.sendIn > 0:
		// Up to a whole second, so send_at reads as the user meant it and
		// is not before now plus --send-in.
		t := now.Add(f.sendIn)
		if s := t.Truncate(time.Second); s.Before(t) {
			t = s.Add(time.Second)
		}
		return &t, nil
	}
	return f.sendAt, nil
}
