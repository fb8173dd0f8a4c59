package main

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
	"github.com/hushpush/hush/worker/httpapi"
)

// tokenAnswers answers the token dead token_invalid, bad a permanent
// failure, and every other push delivered.
type tokenAnswers struct{ dead, bad string }

func (s tokenAnswers) Send(_ context.Context, p providers.Push) providers.Result {
	switch p.Token {
	case s.dead:
		return providers.Result{Outcome: providers.TokenInvalid, Reason: "Unregistered"}
	case s.bad:
		return providers.Result{Outcome: providers.Permanent, Reason: "BadTopic"}
	}
	return providers.Result{Outcome: providers.Delivered}
}

// TestRecipients: hush recipients prints a live job's recipients through
// the real API and a running worker (delivered, token_invalid, failed,
// held), filters by state, pages with "more:", and once the job has
// finished prints its counts.
func TestRecipients(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	policy, err := throttle.ParsePolicy("1/1h", "0s")
	if err != nil {
		t.Fatal(err)
	}
	lim, err := throttle.NewRedis(rdb, policy, throttle.Options{CollapseMargin: worker.CollapseMargin})
	if err != nil {
		t.Fatal(err)
	}
	dead, bad := testkit.APNsToken("dead"), testkit.APNsToken("bad")
	w, err := worker.New(rdb, worker.Options{Limiter: lim, Policy: policy, Concurrency: 4, ShutdownTimeout: 3 * time.Second,
		Senders: map[payload.Platform]worker.Sender{payload.APNs: tokenAnswers{dead, bad}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	srv := httptest.NewServer(httpapi.New(w, w.Client(), httpapi.Options{Token: "tok"}))
	t.Cleanup(srv.Close)
	t.Setenv("HUSH_API_TOKEN", "tok")
	c := w.Client()
	enqueue := func(j payload.Job) {
		if _, err := c.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(testkit.AlertJob("first", "first", testkit.APNsRecipient("u-busy", testkit.APNsToken("busy-0"))))
	testkit.WaitFor(t, 10*time.Second, "first done", func() bool {
		st, err := c.Status(ctx, "first")
		return err == nil && st.State == "done"
	})
	enqueue(testkit.AlertJob("promo-7", "hello",
		testkit.APNsRecipient("u-ok", testkit.APNsToken("ok-0"), testkit.APNsToken("ok-1")),
		testkit.APNsRecipient("u-dead", dead),
		testkit.APNsRecipient("u-fail", bad),
		testkit.APNsRecipient("u-busy", testkit.APNsToken("busy-1"))))
	testkit.WaitFor(t, 10*time.Second, "promo-7: three final, one held", func() bool {
		st, err := c.Status(ctx, "promo-7")
		return err == nil && st.Counts["pending"] == 1 && st.Counts["delivered"] == 1 && st.Counts["failed"] == 1 && st.Counts["token_invalid"] == 1
	})

	stdout, stderr, code := runCmd(t, "recipients", "promo-7", "--server", srv.URL)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != 0 || len(lines) != 4 {
		t.Fatalf("hush recipients promo-7: exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	for i, want := range []string{
		`^#0  delivered      device 0 delivered, device 1 delivered$`,
		`^#1  token_invalid  device 0 token_invalid$`,
		`^#2  failed         \s+permanent provider failure \(BadTopic\): provider answer$`,
		`^#3  held           \s+slot \S+ \(in (59m|1h)\S*\) held by 1/1h; task \S+ in \S+(, wakes \S+)?$`,
	} {
		if !regexp.MustCompile(want).MatchString(lines[i]) {
			t.Errorf("line %d: %q, want it to match %s", i, lines[i], want)
		}
	}
	if strings.Contains(stdout, dead) || strings.Contains(stdout, bad) {
		t.Errorf("hush recipients printed a token:\n%s", stdout)
	}

	stdout, _, code = runCmd(t, "recipients", "promo-7", "--server", srv.URL, "--state", "failed")
	if code != 0 || stdout != "#2  failed    permanent provider failure (BadTopic): provider answer\n" {
		t.Errorf("--state failed: exit %d, stdout %q, want only #2", code, stdout)
	}
	stdout, _, code = runCmd(t, "recipients", "promo-7", "--server", srv.URL, "--limit", "2")
	if want := "more: hush recipients promo-7 --cursor 2\n"; code != 0 || !strings.HasSuffix(stdout, want) || strings.Count(stdout, "\n") != 3 {
		t.Errorf("--limit 2: exit %d, stdout:\n%s\nwant two recipients, then %q", code, stdout, want)
	}
	stdout, _, code = runCmd(t, "recipients", "promo-7", "--server", srv.URL, "--cursor", "2", "--state", "delivered")
	if want := "no recipient of job promo-7 (4 recipients, fanned_out) is delivered\n"; code != 0 || stdout != want {
		t.Errorf("--cursor 2 --state delivered: exit %d, stdout %q, want %q", code, stdout, want)
	}
	_, stderr, code = runCmd(t, "recipients", "promo-7", "--server", srv.URL, "--state", "lost")
	if code != 1 || !strings.Contains(stderr, "state: want one of") {
		t.Errorf("--state lost: exit %d, stderr %q, want 1 naming state", code, stderr)
	}
	_, stderr, code = runCmd(t, "recipients", "none", "--server", srv.URL)
	if code != 1 || !strings.Contains(stderr, `the server knows no job "none"`) {
		t.Errorf("unknown job: exit %d, stderr %q", code, stderr)
	}
	if _, _, code = runCmd(t, "recipients", "--server", srv.URL); code != 2 {
		t.Errorf("no job id: exit %d, want 2", code)
	}

	if _, err := c.Cancel(ctx, "promo-7"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "promo-7 retired", func() bool {
		p, err := c.Recipients(ctx, "promo-7", worker.RecipientsQuery{})
		return err == nil && p.Retired
	})
	stdout, _, code = runCmd(t, "recipients", "promo-7", "--server", srv.URL)
	want := "job promo-7 finished (cancelled): delivered 1, token_invalid 1, failed 1, cancelled 1; each recipient's final state:\n" +
		"#0  delivered\n" +
		"#1  token_invalid\n" +
		"#2  failed           permanent provider failure (BadTopic): provider answer\n" +
		"#3  cancelled\n"
	if code != 0 || stdout != want {
		t.Errorf("after the job finished: exit %d, stdout %q, want %q", code, stdout, want)
	}
}
