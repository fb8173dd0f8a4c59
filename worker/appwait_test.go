package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// A job this process cannot deliver yet, accepted by a process that can
// (an apps file rolled out pod by pod), waits for what it lacks and is
// delivered once an apps reload brings it: an app it does not have, or a
// sender for the job's platform.
func TestDeliveryWaitsForItsApp(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		app   string
		first func(senders map[payload.Platform]Sender) map[string]map[payload.Platform]Sender
	}{
		"unknown app": {app: "shop", first: func(s map[payload.Platform]Sender) map[string]map[payload.Platform]Sender {
			return map[string]map[payload.Platform]Sender{DefaultApp: s}
		}},
		"no sender for its platform": {app: DefaultApp, first: func(s map[payload.Platform]Sender) map[string]map[payload.Platform]Sender {
			return map[string]map[payload.Platform]Sender{DefaultApp: {payload.FCM: s[payload.FCM]}}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var lim Limiter
			var senders map[payload.Platform]Sender
			e := newEnv(t, envOptions{apps: func(_ *redis.Client, l Limiter, s map[payload.Platform]Sender) []App {
				lim, senders = l, s
				var apps []App
				for n, ss := range tc.first(s) {
					apps = append(apps, App{Name: n, Senders: ss, Limiter: l})
				}
				return apps
			}})
			// Accepted by a process with the new apps file.
			other := NewClient(e.rdb)
			job := alertJob("new-app", "hi", apnsRecipient("u", apnsToken("new-app/u")))
			job.App = tc.app
			if _, err := other.Enqueue(context.Background(), job); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "the delivery waiting for its app", func() bool {
				n, err := e.rdb.HExists(context.Background(), store.JobKey("new-app"), store.FieldAppWait).Result()
				return err == nil && n
			})
			if err := e.w.apps.Swap(App{Name: DefaultApp, Senders: senders, Limiter: lim}, App{Name: "shop", Senders: senders, Limiter: lim}); err != nil {
				t.Fatal(err)
			}
			st := e.waitDone2("new-app", 20*time.Second)
			if st.Counts[task.Delivered] != 1 || len(requestsFor(e.apns.Requests(), apnsToken("new-app/u"))) != 1 {
				t.Errorf("counts %v, want the push delivered once", st.Counts)
			}
		})
	}
}

// A delivery whose app never appears waits for it appWait, then fails
// with the reason.
func TestDeliveryForAnAppThatNeverComesFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noRun: true})
	e.w.appWait = 2 * time.Second
	e.start()
	t.Cleanup(e.shutdown)
	job := alertJob("no-app", "hi", apnsRecipient("u", apnsToken("no-app/u")))
	job.App = "gone"
	start := time.Now()
	if _, err := NewClient(e.rdb).Enqueue(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	st := e.waitDone2("no-app", 30*time.Second)
	if st.Counts[task.Failed] != 1 {
		t.Errorf("counts %v, want failed", st.Counts)
	}
	if waited := time.Since(start); waited < e.w.appWait {
		t.Errorf("failed after %s, want no sooner than %s", waited, e.w.appWait)
	}
	var reasons []string
	qs, err := e.insp.Queues()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		ts, _ := e.insp.ListArchivedTasks(q)
		for _, ti := range ts {
			reasons = append(reasons, ti.LastErr)
		}
	}
	if len(reasons) != 1 || !strings.Contains(reasons[0], `unknown app "gone"`) {
		t.Errorf("archived with %q, want one naming the unknown app", reasons)
	}
}
func TestAppMissing(t *testing.T) {
	t.Parallel()
	apns := payload.Device{Platform: payload.APNs, Token: "a"}
	fcm := payload.Device{Platform: payload.FCM, Token: "f"}
	app := &App{Name: "shop", Senders: map[payload.Platform]Sender{payload.APNs: panicSender{}}}
	for name, tc := range map[string]struct {
		app     *App
		appErr  error
		devices []payload.Device
		states  []string
		want    error // nil: nothing missing
	}{
		"has everything":            {app: app, devices: []payload.Device{apns}, states: []string{""}},
		"unknown app":               {appErr: ErrUnknownApp, devices: []payload.Device{apns}, states: []string{""}, want: ErrUnknownApp},
		"no sender for a device":    {app: app, devices: []payload.Device{apns, fcm}, states: []string{"", ""}, want: errNoSender},
		"that device settled":       {app: app, devices: []payload.Device{apns, fcm}, states: []string{"", task.Delivered}},
		"states not read (retired)": {app: app, devices: []payload.Device{apns}},
	} {
		t.Run(name, func(t *testing.T) {
			got := appMissing(tc.app, tc.appErr, tc.devices, tc.states)
			if (tc.want == nil) != (got == nil) || (tc.want != nil && !errors.Is(got, tc.want)) {
				t.Errorf("appMissing = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAppWaitLeft(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		now  time.Time
		want time.Duration
	}{
		"just began":   {now: since, want: 10 * time.Minute},
		"halfway":      {now: since.Add(5 * time.Minute), want: 5 * time.Minute},
		"over":         {now: since.Add(10 * time.Minute), want: 0},
		"long over":    {now: since.Add(time.Hour), want: 0},
		"clock behind": {now: since.Add(-time.Second), want: 10*time.Minute + time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			if got := appWaitLeft(since, tc.now, 10*time.Minute); got != tc.want {
				t.Errorf("appWaitLeft = %s, want %s", got, tc.want)
			}
		})
	}
}
