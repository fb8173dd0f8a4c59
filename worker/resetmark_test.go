package worker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// resetUser resets user's limiter state as DELETE
// /v1/users/{id}/throttle (and so `hush throttle reset`) does, and checks
// that it holds no entry after.
func resetUser(t *testing.T, e *env, user string) {
	t.Helper()
	app, err := e.w.App("")
	if err != nil {
		t.Fatal(err)
	}
	admin, ok := app.Limiter.(ThrottleAdmin)
	if !ok {
		t.Fatalf("the limiter %T cannot reset", app.Limiter)
	}
	if err := e.w.ResetThrottle(t.Context(), admin, user); err != nil {
		t.Fatalf("reset of %s: %v", user, err)
	}
	if st, err := e.lim.Status(t.Context(), user, time.UTC); err != nil || len(st.Entries) != 0 {
		t.Fatalf("after the reset %s has entries %v (%v), want none", user, st.Entries, err)
	}
}

// checkCounted checks that the limiter holds exactly one entry for user,
// the push sent after the reset, and so holds the user's next push a gap
// after it.
func checkCounted(t *testing.T, e *env, user string, gap time.Duration) {
	t.Helper()
	st, err := e.lim.Status(t.Context(), user, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Entries) != 1 {
		t.Fatalf("%s has %d limiter entries after its held push went out, want 1: the push sent after the reset is not counted", user, len(st.Entries))
	}
	r, err := e.lim.Reserve(t.Context(), user, "after-the-reset")
	if err != nil {
		t.Fatal(err)
	}
	if d := r.At.Sub(st.Entries[0].At); d < gap {
		t.Errorf("%s's next push booked %s after the held one, want at least the gap %s", user, d, gap)
	}
}

// TestResetCountsHeldPushes: a reset deletes the bookings of the user's
// pushes held in held tasks. Their first runs, which take their slots from
// their payloads when nothing changed, read the reset mark, look their
// bookings up, book the reset user's push again and send it counted; the
// other users' pushes are found at their slots and go out there.
func TestResetCountsHeldPushes(t *testing.T) {
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
	for _, c := range held {
		// The payload's booking instant is the limiter's, at the booking.
		if b := time.UnixMilli(c.Booked); time.Since(b) > 2*gap || time.Until(b) > time.Second {
			t.Errorf("held task %s carries booking instant %d (%s), want its chunk's booking's", c.Name(), c.Booked, b)
		}
	}
	i := held[0].Indices[0]
	user := fmt.Sprint("u-", i)
	resetUser(t, e, user)
	if handed := runHeldLookingUp(t, e, held); handed[fmt.Sprintf("held/%d", i)] {
		t.Fatalf("the reset user's recipient %d was handed to its delivery task, want it sent by its held task", i)
	}
	checkCounted(t, e, user, gap)
}

// runHeldLookingUp runs held tasks of job "held" side by side at their
// second of waking, as Asynq does, and checks that each recipient was
// looked up (its chunk's booking, then its held task's lookup) and sent
// once at its slot, or handed over late. It returns those handed over.
func runHeldLookingUp(t *testing.T, e *env, held []task.Chunk) map[string]bool {
	t.Helper()
	wake := slices.MinFunc(held, func(a, b task.Chunk) int { return cmp.Compare(a.Wake, b.Wake) }).Wake
	// Real time: the slots are on the limiter's clock (Redis TIME),
	// which no injected clock moves.
	time.Sleep(time.Until(time.Unix(wake, 0)))
	e.runHeldTogether(held)
	reqs := e.apns.Requests()
	handed := e.lateHandoffs()
	for _, c := range held {
		for _, i := range c.Indices {
			m := fmt.Sprintf("held/%d", i)
			if asks := e.lim.asked(m); !handed[m] && asks != 2 {
				t.Errorf("recipient %d: in %d limiter requests, want its chunk's booking and its held task's lookup", i, asks)
			}
			slot, _ := e.lim.slot(m)
			checkHeldSent(e, reqs, handed, i, slot)
		}
	}
	return handed
}

// TestResetCountsHeldJobs: the same for single-recipient jobs held in
// hush:waiting-jobs groups.
func TestResetCountsHeldJobs(t *testing.T) {
	const n, gap = 4, 3 * time.Second
	e, batchT, jobs := waitingJobsEnv(t, n, gap)
	if err := e.w.handleBatch(t.Context(), batchT); err != nil {
		t.Fatal(err)
	}
	for _, h := range e.waitingJobsTasks() {
		for _, c := range h.Jobs {
			if len(c.Slots) != 1 || c.Booked == 0 {
				t.Errorf("job %s held with slots %v and booking instant %d, want both", c.Job, c.Slots, c.Booked)
			}
		}
	}
	resetUser(t, e, "u-0")
	e.runHeldSeconds(1)
	if handed := checkHeldJobsSent(t, e, jobs, 2); handed[task.Member(jobs[0].ID, 0, 0)] {
		t.Fatalf("the reset user's job was handed to its delivery task, want it sent by its group")
	}
	checkCounted(t, e, "u-0", gap)
}

// TestResetMarkOnlyRises: a later reset never lowers the mark, in any of
// its shards, and a held task reads a shard of it; on a Redis Cluster too,
// where the shards spread over every master.
func TestResetMarkOnlyRises(t *testing.T) {
	srv := redistest.Start(t)
	checkResetMark(t, srv.Client(t))
	c := redistest.StartCluster(t, 3)
	cc := c.Client(t)
	checkResetMark(t, cc)
	masters := map[string]bool{}
	for k := range resetMarkShards {
		addr, err := redistest.MasterOf(t.Context(), cc, store.ResetMarkKeyOf(k))
		if err != nil {
			t.Fatal(err)
		}
		masters[addr] = true
	}
	if len(masters) != 3 {
		t.Errorf("the reset mark's %d shards are on %d of 3 masters, want all", resetMarkShards, len(masters))
	}
}

func checkResetMark(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	s := newStore(rdb, time.Hour)
	at := time.UnixMilli(1_800_000_000_000)
	for _, raise := range []time.Time{at, at.Add(-time.Hour), at.Add(-time.Millisecond)} {
		if err := s.raiseResetMark(t.Context(), raise); err != nil {
			t.Fatal(err)
		}
	}
	shards := map[string]bool{}
	for k := range resetMarkShards {
		key := store.ResetMarkKeyOf(k)
		if v := store.ResetMarkOf(rdb.Get(t.Context(), key)); v != at.UnixMilli() {
			t.Errorf("%s = %d, want the highest raise %d", key, v, at.UnixMilli())
		}
		shards[key] = true
	}
	if err := s.raiseResetMark(t.Context(), at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if v := store.ResetMarkOf(rdb.Get(t.Context(), store.ResetMarkKeyOf(3))); v != at.Add(time.Second).UnixMilli() {
		t.Errorf("mark %d after a later raise, want %d", v, at.Add(time.Second).UnixMilli())
	}
	read := map[string]bool{}
	for k := range 200 {
		key := store.ResetMarkKey(task.HeldID("j", k, 1, true))
		if !shards[key] {
			t.Fatalf("a held task reads %s, not a shard of the mark", key)
		}
		read[key] = true
	}
	if len(read) < resetMarkShards/2 {
		t.Errorf("200 held tasks read %d of the mark's %d shards, want them spread", len(read), resetMarkShards)
	}
}

// TestResetMarkOverwritesASpoiledKey: a mark key holding another type or
// a string that is no number does not fail the raise (a reset would answer
// 503 until someone deleted it): the raise writes the mark over it.
func TestResetMarkOverwritesASpoiledKey(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	s := newStore(rdb, time.Hour)
	at := time.UnixMilli(1_800_000_000_000)
	for k := range resetMarkShards {
		key := store.ResetMarkKeyOf(k)
		var err error
		switch k % 3 {
		case 0:
			err = rdb.HSet(t.Context(), key, "a", "b").Err()
		case 1:
			err = rdb.Set(t.Context(), key, "not a number", 0).Err()
		default:
			err = rdb.RPush(t.Context(), key, "x").Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.raiseResetMark(t.Context(), at); err != nil {
		t.Fatalf("raise over spoiled marks: %v", err)
	}
	for k := range resetMarkShards {
		if v := store.ResetMarkOf(rdb.Get(t.Context(), store.ResetMarkKeyOf(k))); v != at.UnixMilli() {
			t.Errorf("shard %d = %d after the raise, want %d", k, v, at.UnixMilli())
		}
	}
}

// TestResetMidFloodKeepsTheGap: a flood for one user through a running
// worker. The first push goes out and the next waits for its slot in a
// hush:waiting-jobs group. Then the operator resets the user, and a new
// push, free to go at once, goes; the held one, booked again as its group
// wakes, keeps the gap from it. Taken from its payload's slot, it went out
// about 4 s after the new push, with a gap of 6 s.
func TestResetMidFloodKeepsTheGap(t *testing.T) {
	testkit.Slow(t, "waits out a 6 s gap twice through a running worker")
	const gap = 6 * time.Second
	e := newEnv(t, envOptions{gap: gap.String()})
	token := apnsToken("flood")
	sent := func() []time.Time {
		var at []time.Time
		for _, r := range requestsFor(e.apns.Requests(), token) {
			at = append(at, r.At)
		}
		slices.SortFunc(at, time.Time.Compare)
		return at
	}
	first := e.submit(alertJob("flood-0", "f", apnsRecipient("u-flood", token)))
	e.waitDone(first, 10*time.Second)
	held := e.submit(alertJob("flood-1", "f", apnsRecipient("u-flood", token)))
	// The job counts its deferral before its batch run ends and adds its
	// group to the second's hash: wait for both.
	waitFor(t, 10*time.Second, "the flood's second push held in a hush:waiting-jobs group", func() bool {
		st, err := e.client.Status(t.Context(), held)
		return err == nil && st.Deferrals > 0 && len(e.waitingJobsTasks()) == 1
	})
	// Two seconds into the gap, well before the group wakes (a second or
	// two before the slot). Real time: the gap is on the limiter's clock
	// (Redis TIME).
	time.Sleep(time.Until(sent()[0].Add(2 * time.Second)))
	resetUser(t, e, "u-flood")
	after := e.submit(alertJob("after-reset", "f", apnsRecipient("u-flood", token)))
	e.waitDone(after, 10*time.Second)
	e.waitDone(held, 20*time.Second)
	at := sent()
	if len(at) != 3 {
		t.Fatalf("%d pushes, want 3", len(at))
	}
	// Arrivals, not sends: the earlier one may have taken up to 250 ms to
	// arrive (TLS and HTTP/2 under the race detector).
	if d := at[2].Sub(at[1]); d < gap-250*time.Millisecond {
		t.Errorf("after the reset, two pushes %s apart, want at least the gap %s", d, gap)
	}
}

// TestUnreadableResetMarkLooksUp: a reset mark that cannot be read (here
// a key holding another value or type) fails no held task: each looks its
// bookings up, as after a reset, and sends once.
func TestUnreadableResetMarkLooksUp(t *testing.T) {
	spoil := func(t *testing.T, e *env, hash bool) {
		for k := range resetMarkShards {
			key := store.ResetMarkKeyOf(k)
			var err error
			if hash {
				err = e.rdb.HSet(t.Context(), key, "a", "b").Err()
			} else {
				err = e.rdb.Set(t.Context(), key, "not a number", 0).Err()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("held groups", func(t *testing.T) {
		e, batchT, jobs := waitingJobsEnv(t, 3, 3*time.Second)
		if err := e.w.handleBatch(t.Context(), batchT); err != nil {
			t.Fatal(err)
		}
		spoil(t, e, false)
		e.runHeldSeconds(1)
		checkHeldJobsSent(t, e, jobs, 2)
	})
	t.Run("held tasks", func(t *testing.T) {
		e, _, chunkTask := heldEnv(t, 3*time.Second)
		if err := e.w.handleChunk(t.Context(), chunkTask); err != nil {
			t.Fatal(err)
		}
		spoil(t, e, true)
		runHeldLookingUp(t, e, heldOf(t, e.scheduled(TypeHeld)))
	})
}
