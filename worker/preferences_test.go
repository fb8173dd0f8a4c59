package worker

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/task"
)

// TestDeleteUserCountsHeldPushes: deleting a user deletes the bookings of
// their held pushes as a reset does, between the same raises of the
// reset mark: the held task's first run looks its booking up, books the
// push again and sends it counted. The user's preferences are gone too.
func TestDeleteUserCountsHeldPushes(t *testing.T) {
	const gap = 4 * time.Second
	e, _, chunkTask := heldEnv(t, gap)
	if err := e.w.handleChunk(t.Context(), chunkTask); err != nil {
		t.Fatal(err)
	}
	held := heldOf(t, e.scheduled(TypeHeld))
	if len(held) == 0 {
		t.Fatal("no held tasks")
	}
	slices.SortFunc(held, func(a, b task.Chunk) int {
		return cmp.Or(cmp.Compare(a.Wake, b.Wake), strings.Compare(a.Name(), b.Name()))
	})
	i := held[0].Indices[0]
	user := fmt.Sprint("u-", i)
	c := e.w.Client()
	if err := c.PutPreferences(t.Context(), "", user, throttle.Preferences{OptOut: []string{"marketing"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteUser(t.Context(), "", user); err != nil {
		t.Fatal(err)
	}
	if st, err := e.lim.Status(t.Context(), user, time.UTC); err != nil || len(st.Entries) != 0 {
		t.Fatalf("after the deletion %s has entries %v (%v), want none", user, st.Entries, err)
	}
	if p, err := c.GetPreferences(t.Context(), "", user); err != nil || p.OptOut != nil {
		t.Errorf("after the deletion %s has preferences %+v (%v), want none", user, p, err)
	}
	if handed := runHeldLookingUp(t, e, held); handed[fmt.Sprintf("held/%d", i)] {
		t.Fatalf("the deleted user's recipient %d was handed to its delivery task, want it sent by its held task", i)
	}
	checkCounted(t, e, user, gap)
}

// TestPreferencesApp: the Client finds the app as a job's, and says what
// is missing: an app it does not have, a limiter without preferences, or
// apps at all.
func TestPreferencesApp(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.w.Client()
	_, err := c.GetPreferences(t.Context(), "nope", "u-1")
	if !errors.Is(err, ErrUnknownApp) || !strings.Contains(err.Error(), `"nope" (configured: default)`) {
		t.Errorf("unknown app: %v, want ErrUnknownApp naming it and the configured apps", err)
	}
	w, err := New(e.rdb, Options{Limiter: limiterOnly{e.lim}})
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"put":    func() error { return w.Client().PutPreferences(t.Context(), "", "u-1", throttle.Preferences{}) },
		"get":    func() error { _, err := w.Client().GetPreferences(t.Context(), "", "u-1"); return err },
		"delete": func() error { return w.Client().DeleteUser(t.Context(), "", "u-1") },
	} {
		if err := call(); !errors.Is(err, ErrNoPreferences) || !strings.Contains(err.Error(), `app "default"`) {
			t.Errorf("%s through a limiter without preferences: %v, want ErrNoPreferences naming the app", name, err)
		}
	}
	if _, err := NewClient(e.rdb).GetPreferences(t.Context(), "", "u-1"); !errors.Is(err, errNoApps) {
		t.Errorf("a standalone Client: %v, want errNoApps", err)
	}
}

// limiterOnly hides every method but Limiter's.
type limiterOnly struct{ Limiter }

// TestOptOutAnswersAfterTheGrace: a write with an opt-out answers only
// once every call an earlier booking allowed has started (cancelGrace
// after the write, as a cancellation), so nothing of the category leaves
// after the answer; its retry (the answer lost) waits again, though the
// opt-out is stored already.
func TestOptOutAnswersAfterTheGrace(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.w.Client()
	start := time.Now()
	if err := c.PutPreferences(t.Context(), "", "u-g", throttle.Preferences{OptOut: []string{"marketing"}}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < cancelGrace {
		t.Errorf("an opt-out answered after %s, want at least the grace %s", took, cancelGrace)
	}
	if p, err := c.GetPreferences(t.Context(), "", "u-g"); err != nil || !slices.Equal(p.OptOut, []string{"marketing"}) {
		t.Errorf("after the write: %+v (%v)", p, err)
	}
	start = time.Now()
	if err := c.PutPreferences(t.Context(), "", "u-g", throttle.Preferences{OptOut: []string{"marketing"}}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < cancelGrace {
		t.Errorf("the write again answered after %s, want at least the grace %s", took, cancelGrace)
	}
}
