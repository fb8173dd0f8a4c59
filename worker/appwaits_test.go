package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/task"
)

func TestAppRecheckAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		waited, left time.Duration
		want         time.Duration
	}{
		{"just began", 0, 10 * time.Minute, 5 * time.Second},
		{"a quarter of the wait so far", 40 * time.Second, 9 * time.Minute, 10 * time.Second},
		{"at most appRecheckMax", 5 * time.Minute, 5 * time.Minute, 30 * time.Second},
		{"never past the wait's end", 9*time.Minute + 58*time.Second, 2 * time.Second, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := appRecheckAfter(tt.waited, tt.left); got != tt.want {
				t.Errorf("appRecheckAfter(%s, %s) = %s, want %s", tt.waited, tt.left, got, tt.want)
			}
		})
	}
}

// TestManyDeliveriesWaitingForAnApp: deliveries of a job whose app this
// process lacks, each run again when its DeferError says, on a clock moved
// from one run to the next, over the whole of a 10-minute HUSH_APP_WAIT:
// each runs about 30 times (backing off to 30 s between looks), not every
// 5 s (120 runs), the log says so once per app per minute, not once per
// run, and hush_app_waiting_deliveries counts them by app. Counted, not
// timed: the clock is the test's.
func TestManyDeliveriesWaitingForAnApp(t *testing.T) {
	t.Parallel()
	const (
		deliveries = 20
		wait       = 10 * time.Minute
	)
	rdb := redistest.Client(t)
	lim, err := throttle.NewRedis(rdb, throttle.Policy{MinGap: time.Second}, throttle.Options{Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_800_000_000, 0)
	clock := newTestClock(start)
	var logs testkit.Buffer
	w, err := New(rdb, Options{Limiter: lim, Clock: clock, AppWait: wait, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	job := redistest.Prefix(t) + "waits"
	due := make([]time.Time, deliveries) // each delivery's next run
	ds := make([]*task.Delivery, deliveries)
	for i := range ds {
		ds[i] = &task.Delivery{Job: job, Index: i, UserID: fmt.Sprint("u", i), Priority: payload.PriorityNormal, AcceptedAt: start,
			Content: payload.Content{App: "gone"}, Devices: []payload.Device{{Platform: payload.APNs, Token: apnsToken(fmt.Sprint("w", i))}}}
		due[i] = start
	}
	ctx := context.Background()
	runs := 0
	for {
		next := 0
		for i := range due {
			if due[i].Before(due[next]) {
				next = i
			}
		}
		if !due[next].Before(start.Add(wait)) {
			break
		}
		clock.Add(due[next].Sub(clock.Now()))
		d := ds[next]
		_, appErr := w.appOf(d)
		err := w.waitForApp(ctx, d, recipientState{}, appMissing(nil, appErr, d.Devices, nil))
		var de *DeferError
		if !errors.As(err, &de) {
			t.Fatalf("run %d of %s: %v, want a DeferError", runs, d.Member(), err)
		}
		runs++
		due[next] = clock.Now().Add(de.Delay)
		if runs == deliveries {
			if got := waitingGauge(t, w, "gone"); got != deliveries {
				t.Errorf("hush_app_waiting_deliveries{app=gone} = %v after each waited once, want %d", got, deliveries)
			}
		}
	}
	lines := 0
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "wait") {
			lines++
		}
	}
	t.Logf("%d deliveries over %s: %d runs, %d log lines", deliveries, wait, runs, lines)
	if perDelivery := runs / deliveries; perDelivery > 32 {
		t.Errorf("each delivery ran %d times in %s, want at most 32", perDelivery, wait)
	}
	if lines > 11 {
		t.Errorf("%d log lines about waiting deliveries in %s, want at most one a minute:\n%s", lines, wait, logs.String())
	}
}

// waitingGauge is hush_app_waiting_deliveries{app} as w's registry reports
// it (-1 when absent).
func waitingGauge(t *testing.T, w *Worker, app string) float64 {
	t.Helper()
	mfs, err := w.m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "hush_app_waiting_deliveries" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "app" && l.GetValue() == app {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}
