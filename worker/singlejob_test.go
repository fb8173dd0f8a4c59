package worker

import (
	"slices"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/payload"
)

// TestSingleJobBooksWithStart: a one-recipient, one-device job task books
// its slot in start.lua's round trip and writes its device's answer in the
// round trip recording its final state (foldedAnswer): two round trips in
// all, one push.
func TestSingleJobBooksWithStart(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	if app, _ := e.w.apps.Get(DefaultApp); e.w.pipeOf(app) == nil {
		t.Fatal("the worker does not book with its own commands: the test would prove nothing")
	}
	tok := apnsToken("single")
	job := alertJob("single", "s", apnsRecipient("u-s", tok))
	if _, err := e.client.Enqueue(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	task := jobTask(t, job)
	// Warm the script cache: a fresh server answers the first EVALSHA of
	// each script NOSCRIPT, which costs one more round trip once.
	warm := alertJob("warm", "w", apnsRecipient("u-w", apnsToken("warm")))
	if err := e.w.handleJob(t.Context(), jobTask(t, warm)); err != nil {
		t.Fatal(err)
	}

	c := &redistest.RoundTrips{}
	e.rdb.AddHook(c)
	if err := e.w.handleJob(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	if got := c.Count(); got != 2 {
		t.Errorf("the job task made %d Redis round trips, want 2 (start.lua with the booking, then the final state with the device's answer)", got)
	}
	if got := len(requestsFor(e.apns.Requests(), tok)); got != 1 {
		t.Errorf("%d pushes, want 1", got)
	}
	if _, ok := e.lim.slot("single/0"); !ok {
		t.Error("no booking recorded for single/0")
	}
}

// TestSingleJobReRunGivesBackItsBooking: a re-run of a delivered job whose
// limiter entry has aged out books speculatively, learns from start.lua
// that the recipient is settled, gives the new booking back and sends
// nothing.
func TestSingleJobReRunGivesBackItsBooking(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true, limits: "1/1s"})
	tok := apnsToken("rerun")
	job := alertJob("rerun", "r", apnsRecipient("u-r", tok))
	task := jobTask(t, job)
	if err := e.w.handleJob(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the delivered push's entry to age out", func() bool {
		st, err := e.lim.Status(t.Context(), "u-r", nil)
		return err == nil && len(st.Entries) == 0
	})
	if err := e.w.handleJob(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	if got := len(requestsFor(e.apns.Requests(), tok)); got != 1 {
		t.Errorf("%d pushes after a re-run, want 1", got)
	}
	e.lim.mu.Lock()
	released := slices.Clone(e.lim.released)
	e.lim.mu.Unlock()
	if !slices.Contains(released, "rerun/0") {
		t.Errorf("released %v, want the re-run's booking rerun/0 given back", released)
	}
	st, err := e.lim.Status(t.Context(), "u-r", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Entries) != 0 {
		t.Errorf("the user's limiter holds %v after the re-run, want nothing", st.Entries)
	}
}

// TestSingleJobOnAnotherQueueSendsNothing: a duplicate submission of the
// same id with another priority loses to the first; its task books
// speculatively but sends nothing, and the owner's run finds the booking.
func TestSingleJobOnAnotherQueueSendsNothing(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	tok := apnsToken("dup")
	job := alertJob("dup", "d", apnsRecipient("u-d", tok))
	if _, err := e.client.Enqueue(t.Context(), job); err != nil { // owner: normal
		t.Fatal(err)
	}
	other := job
	other.Content.Priority = payload.PriorityHigh
	if err := e.w.handleJob(t.Context(), jobTask(t, other)); err != nil {
		t.Fatal(err)
	}
	if got := len(e.apns.Requests()); got != 0 {
		t.Errorf("the losing duplicate sent %d pushes, want 0", got)
	}
	if err := e.w.handleJob(t.Context(), jobTask(t, job)); err != nil {
		t.Fatal(err)
	}
	// The owner found the booking made for it and left it to the
	// recipient's delivery task (beside the job's own task, still pending
	// in this test).
	if got, want := e.pending(), []string{"delivery:dup/0", "job:dup"}; !slices.Equal(got, want) {
		t.Errorf("pending tasks %v, want %v", got, want)
	}
	if got := len(e.apns.Requests()); got != 0 {
		t.Errorf("%d pushes before the delivery task ran, want 0", got)
	}
}
