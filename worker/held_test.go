package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// heldEnv is a worker that does not run, with job "held" of 150
// recipients whose users were each booked just before under a gap: the
// job task's own chunk (recipients 0-99) and its chunk task (100-149) find
// every slot gap away.
func heldEnv(t *testing.T, gap time.Duration) (e *env, jobT, chunkT *asynq.Task) {
	t.Helper()
	e = newEnv(t, envOptions{noRun: true, gap: gap.String()})
	const n = 150
	for i := range n {
		if _, err := e.lim.Reserve(t.Context(), fmt.Sprintf("u-%d", i), fmt.Sprintf("before/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	job := fanJob("held", n)
	e.submit(job)
	jobT = jobTask(t, job)
	if err := e.w.handleJob(t.Context(), jobT); err != nil {
		t.Fatal(err)
	}
	tasks := e.chunkTasks()
	if len(tasks) != 1 {
		t.Fatalf("the job task made %d chunk tasks, want 1", len(tasks))
	}
	return e, jobT, asynq.NewTask(tasks[0].Type, tasks[0].Payload)
}

// heldNormal is the queue of held tasks of priority normal.
var heldNormal = task.HeldQueueOf("normal")

// scheduled lists the tasks of type typ waiting in queue normal (held
// tasks: in its held queue), by id.
func (e *env) scheduled(typ string) map[string]*asynq.TaskInfo {
	e.t.Helper()
	out := map[string]*asynq.TaskInfo{}
	queue := "normal"
	if typ == TypeHeld {
		queue = heldNormal
	}
	for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){e.insp.ListScheduledTasks, e.insp.ListPendingTasks} {
		tasks, err := list(queue, asynq.PageSize(1000))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			break // nothing was put in it yet
		}
		if err != nil {
			e.t.Fatal(err)
		}
		for _, ti := range tasks {
			if ti.Type == typ {
				out[ti.ID] = ti
			}
		}
	}
	return out
}

// lateSends is the worker's hush_late_sends_total, summed over its
// labels.
func (e *env) lateSends() int {
	e.t.Helper()
	return e.counterSum(e.w.m.lateSends, nil)
}

// rebooked is the worker's hush_limiter_decisions_total{decision="rebooked"},
// summed over apps: bookings found more than decide.LateRebook past their slot
// before any call (decide.Plan), given back and booked again.
func (e *env) rebooked() int {
	e.t.Helper()
	return e.counterSum(e.w.m.limiter, func(l map[string]string) bool { return l["decision"] == "rebooked" })
}

// counterSum sums the values of c's series whose labels match keep (nil:
// all).
func (e *env) counterSum(c prometheus.Collector, keep func(labels map[string]string) bool) int {
	e.t.Helper()
	return counterTotal(e.t, c, keep)
}

// counterTotal sums the values of c's series whose labels match keep
// (nil: all).
func counterTotal(t testing.TB, c prometheus.Collector, keep func(labels map[string]string) bool) int {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	total := 0.0
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range pb.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if keep == nil || keep(labels) {
			total += pb.GetCounter().GetValue()
		}
	}
	return int(total)
}

// lateHandoffs checks that every delivery task waiting in queue normal is
// one lateness made, and returns their members ("<job>/<index>"). A held
// run that the machine's load makes reach a slot more than decide.LateRebook
// after it does not send: it hands the recipient to its delivery task,
// which books again (the product's answer to a late worker,
// TestHeldRunLateForItsSlotsHandsOver), and counts it: in
// hush_late_sends_total when its call was about to leave, as a "rebooked"
// limiter decision when the run found it late before. With
// single-device recipients the tasks are exactly as many as those counts;
// any other hand-over is an error. Tests that run held tasks at their
// slots by hand expect no push yet for these members, and one for every
// other.
func (e *env) lateHandoffs() map[string]bool {
	e.t.Helper()
	out := map[string]bool{}
	for id := range e.scheduled(TypeDelivery) {
		out[strings.TrimPrefix(id, "delivery:")] = true
	}
	sends, rebooked := e.lateSends(), e.rebooked()
	if late := sends + rebooked; len(out) != late {
		e.t.Errorf("%d delivery tasks (%v), but %d late sends and %d late bookings counted: want one task per late recipient, none else", len(out), keysOf(out), sends, rebooked)
	} else if late > 0 {
		e.t.Logf("%d recipients late for their slots (%d at their calls, %d before), handed to their delivery tasks: %v", late, sends, rebooked, keysOf(out))
	}
	return out
}

// heldOf decodes held tasks' payloads.
func heldOf(t *testing.T, tasks map[string]*asynq.TaskInfo) []task.Chunk {
	t.Helper()
	var out []task.Chunk
	for _, ti := range tasks {
		var c task.Chunk
		if err := json.Unmarshal(ti.Payload, &c); err != nil {
			t.Fatal(err)
		}
		if c.Name() != ti.ID {
			t.Errorf("held task %s names itself %s", ti.ID, c.Name())
		}
		out = append(out, c)
	}
	return out
}

// checkHeld checks that held tasks hold recipients want of job "held",
// each marked held by its task, and returns their ids.
func checkHeld(t *testing.T, e *env, held map[string]*asynq.TaskInfo, want []int) []string {
	t.Helper()
	var idx []int
	for _, c := range heldOf(t, held) {
		if c.From != c.Indices[0]/task.ChunkSize*task.ChunkSize || len(c.Indices) != len(c.Recipients) {
			t.Errorf("held task %s: from %d, %d indices for %d recipients", c.Name(), c.From, len(c.Indices), len(c.Recipients))
		}
		for k, i := range c.Indices {
			idx = append(idx, i)
			if c.Recipients[k].UserID != fmt.Sprintf("u-%d", i) {
				t.Errorf("held task %s: recipient %d is %s", c.Name(), i, c.Recipients[k].UserID)
			}
			mark, err := e.rdb.HGet(t.Context(), store.JobKey("held"), store.HeldPrefix+fmt.Sprint(i)).Result()
			if err != nil {
				t.Fatal(err)
			}
			if q, task := task.ParseHeldMark(mark); q != heldNormal || task != c.Name() {
				t.Errorf("recipient %d marked %q, want held by %s on %s", i, mark, c.Name(), heldNormal)
			}
		}
	}
	slices.Sort(idx)
	if !slices.Equal(idx, want) {
		t.Errorf("held recipients %v, want %v", idx, want)
	}
	return keysOf(held)
}

// TestChunkHoldsBackIntoHeldTasks: a job task, then a chunk task, whose
// recipients the limiter holds back make one hush:held task per chunk and
// second of waking, not a delivery task per recipient; the job record
// marks each recipient held by its task. A re-run of the chunk, with the
// held tasks still there or gone, makes the same held tasks and no
// delivery task, and sends nothing.
func TestChunkHoldsBackIntoHeldTasks(t *testing.T) {
	e, jobT, chunkTask := heldEnv(t, 6*time.Second)
	if got := len(e.scheduled(TypeDelivery)); got != 0 {
		t.Errorf("the job task's own chunk made %d delivery tasks, want none", got)
	}
	own := e.scheduled(TypeHeld)
	// One per second their slots spread over: the users were booked one
	// by one just before, well within a second, or a little over one on
	// a slow machine.
	if len(own) == 0 || len(own) > 3 {
		t.Fatalf("%d held tasks for the job task's 100 recipients, want 1 to 3", len(own))
	}
	ownIDs := checkHeld(t, e, own, seq(0, task.ChunkSize))
	// The job task's re-run (its cursor lost, its held tasks gone) reads
	// the markers and makes the same held tasks again.
	if err := e.rdb.HDel(t.Context(), store.JobKey("held"), "cursor").Err(); err != nil {
		t.Fatal(err)
	}
	for id := range own {
		if err := e.insp.DeleteTask(heldNormal, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.w.handleJob(t.Context(), jobT); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(e.scheduled(TypeHeld)); !slices.Equal(got, ownIDs) {
		t.Errorf("the job task's re-run made held tasks %v, want %v", got, ownIDs)
	}
	if got := len(e.scheduled(TypeDelivery)); got != 0 {
		t.Errorf("the job task's re-run made %d delivery tasks, want none", got)
	}
	if err := e.w.handleChunk(t.Context(), chunkTask); err != nil {
		t.Fatal(err)
	}
	held := e.scheduled(TypeHeld)
	for id := range own {
		delete(held, id)
	}
	if len(held) == 0 || len(held) > 3 {
		t.Fatalf("%d held tasks for the chunk's 50 recipients, want 1 to 3", len(held))
	}
	if got := len(e.scheduled(TypeDelivery)); got != 0 {
		t.Errorf("the chunk made %d delivery tasks, want none", got)
	}
	ids := checkHeld(t, e, held, seq(task.ChunkSize, 150))
	// A re-run with the held tasks queued, then with them gone (they ran,
	// and Asynq dropped them, or were lost).
	for _, drop := range []bool{false, true} {
		if drop {
			for id := range held {
				if err := e.insp.DeleteTask(heldNormal, id); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := e.w.handleChunk(t.Context(), chunkTask); err != nil {
			t.Fatal(err)
		}
		again := e.scheduled(TypeHeld)
		for id := range own {
			delete(again, id)
		}
		if diff := slices.Compare(ids, keysOf(again)); diff != 0 {
			t.Errorf("re-run (held tasks dropped: %v) made held tasks %v, want %v", drop, keysOf(again), ids)
		}
		var n int
		for _, c := range heldOf(t, again) {
			n += len(c.Indices)
		}
		if n != 50 {
			t.Errorf("re-run (held tasks dropped: %v): %d recipients held, want 50", drop, n)
		}
		if got := len(e.scheduled(TypeDelivery)); got != 0 {
			t.Errorf("re-run (held tasks dropped: %v) made %d delivery tasks, want none", drop, got)
		}
	}
	if got := len(e.apns.Requests()); got != 0 {
		t.Errorf("%d pushes sent, want none yet", got)
	}
	st, err := e.client.Status(t.Context(), "held")
	if err != nil {
		t.Fatal(err)
	}
	if st.Deferrals != 150 {
		t.Errorf("%d deferrals counted, want 150 (each recipient once, re-runs not again)", st.Deferrals)
	}
}

// TestHeldTaskSendsAtTheSlotsOnce runs a held task by hand: woken before
// its recipients' slots it waits and sends each at its slot (arriving
// within the tests' 250 ms), but for those a loaded machine makes it
// reach late, which it hands over (lateHandoffs); its re-run
// sends nothing; a run cut by shutdown while it waits sends nothing and
// its next run sends.
func TestHeldTaskSendsAtTheSlotsOnce(t *testing.T) {
	e, _, chunkTask := heldEnv(t, 4*time.Second)
	// The chunk task's held tasks only (its 50 recipients), not the job
	// task's: their 150 slots are a few ms apart, and with the env's 10
	// send permits the last sends started about 100 ms after their slots
	// under the race detector here, and were (rightly) booked again.
	jobs := e.scheduled(TypeHeld)
	if err := e.w.handleChunk(t.Context(), chunkTask); err != nil {
		t.Fatal(err)
	}
	own := e.scheduled(TypeHeld)
	for id := range jobs {
		delete(own, id)
	}
	held := heldOf(t, own)
	if len(held) == 0 {
		t.Fatal("no held task")
	}
	// The first to wake is cut below.
	slices.SortFunc(held, func(a, b task.Chunk) int { return int(a.Wake - b.Wake) })
	var latest time.Time
	for _, c := range held {
		for _, i := range c.Indices {
			slot, ok := e.lim.slot(fmt.Sprintf("held/%d", i))
			if !ok {
				t.Fatalf("recipient %d not booked", i)
			}
			latest = later(latest, slot)
		}
	}
	// Woken within a wait in place of the latest slot. Real time: the
	// slots are on the limiter's clock (Redis TIME), which no injected
	// clock moves.
	time.Sleep(time.Until(latest.Add(-2 * time.Second)))
	run := e.runHeld
	// The first task's run is cut by shutdown while it waits (its slots
	// are about 2 s away). The cut comes 1 s in: cut sooner, a loaded
	// machine can still be booking, and a run cut there hands its
	// recipients to their delivery tasks (correct, but not this test).
	// Cancelled, not given a deadline: a handler stops taskMargin before
	// its task's deadline, so a 1 s deadline would cut it at once.
	ctx, cancel := context.WithCancel(t.Context())
	cut := time.AfterFunc(time.Second, cancel)
	err := run(ctx, held[0])
	cut.Stop()
	cancel()
	if err == nil {
		t.Error("a held task cut by shutdown returned no error: Asynq would drop it")
	}
	if got := len(e.apns.Requests()); got != 0 {
		t.Fatalf("%d pushes sent by a run cut before the slots, want none", got)
	}
	// Side by side, as Asynq runs them, each in a held slot of its own:
	// run one after another, a task whose slots are those of the one
	// before (two tasks of one wake second) would start after them.
	for range 2 {
		e.runHeldTogether(held)
	}
	reqs := e.apns.Requests()
	handed := e.lateHandoffs()
	total := 0
	for _, c := range held {
		total += len(c.Indices)
	}
	if len(handed) >= total {
		t.Errorf("all %d held recipients late for their slots: want the held tasks to send at least one at its slot", total)
	}
	for _, c := range held {
		for _, i := range c.Indices {
			slot, _ := e.lim.slot(fmt.Sprintf("held/%d", i))
			checkHeldSent(e, reqs, handed, i, slot)
		}
	}
}

// runHeld runs held task c as Asynq would.
func (e *env) runHeld(ctx context.Context, c task.Chunk) error {
	e.t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.w.handleChunk(ctx, asynq.NewTask(TypeHeld, b))
}

// runHeldTogether runs held tasks side by side, as Asynq runs them, each
// in a held slot of its own; each must end without an error.
func (e *env) runHeldTogether(held []task.Chunk) {
	e.t.Helper()
	var wg sync.WaitGroup
	for _, c := range held {
		wg.Go(func() {
			if err := e.runHeld(e.t.Context(), c); err != nil {
				e.t.Error(err)
			}
		})
	}
	wg.Wait()
}

// checkHeldSent checks that recipient i of job "held" got one push, at
// slot, or none when handed to its delivery task for lateness.
func checkHeldSent(e *env, reqs []fake.Request, handed map[string]bool, i int, slot time.Time) {
	t := e.t
	t.Helper()
	tok := apnsToken(fmt.Sprint("held", i))
	got := requestsFor(reqs, tok)
	if handed[fmt.Sprintf("held/%d", i)] {
		if len(got) != 0 {
			t.Errorf("recipient %d: %d pushes and a delivery task, want none and the task", i, len(got))
		}
		return
	}
	if len(got) != 1 {
		t.Errorf("recipient %d got %d pushes, want 1", i, len(got))
		return
	}
	e.checkSentInTime(fmt.Sprintf("recipient %d", i), got[0].At, slot, tok)
}

// TestHeldTaskLateGivesItsRecipientsUp: a held task that runs after its
// recipients' slots sends nothing, marks each recipient held by its own
// delivery task and makes that task; its re-run sends nothing and makes
// no second task; the delivery tasks send each push once.
func TestHeldTaskLateGivesItsRecipientsUp(t *testing.T) {
	e, _, chunkTask := heldEnv(t, 3*time.Second)
	if err := e.w.handleChunk(t.Context(), chunkTask); err != nil {
		t.Fatal(err)
	}
	held := e.scheduled(TypeHeld)
	if len(held) == 0 {
		t.Fatal("no held task")
	}
	// Past every slot, in real time: the slots are on the limiter's clock
	// (Redis TIME), which no injected clock moves.
	time.Sleep(3*time.Second + 2*decide.LateRebook)
	for range 2 {
		for _, ti := range held {
			if err := e.w.handleChunk(t.Context(), asynq.NewTask(ti.Type, ti.Payload)); err != nil {
				t.Fatal(err)
			}
		}
		if got := len(e.apns.Requests()); got != 0 {
			t.Fatalf("a late held task sent %d pushes, want none", got)
		}
	}
	var mine []*asynq.TaskInfo
	for _, ti := range e.scheduled(TypeDelivery) {
		_, rest, _ := strings.Cut(ti.ID, "/")
		var i int
		if _, err := fmt.Sscan(rest, &i); err == nil && i >= task.ChunkSize {
			mine = append(mine, ti)
		}
	}
	if len(mine) != 50 {
		t.Fatalf("%d delivery tasks for the held recipients, want 50", len(mine))
	}
	for _, ti := range mine {
		_, rest, _ := strings.Cut(ti.ID, "/")
		mark, err := e.rdb.HGet(t.Context(), store.JobKey("held"), store.HeldPrefix+rest).Result()
		if err != nil {
			t.Fatal(err)
		}
		if q, task := task.ParseHeldMark(mark); q != "normal" || task != "" {
			t.Errorf("recipient %s marked %q, want held by its delivery task on normal", rest, mark)
		}
		for range 2 {
			if err := e.w.handleDelivery(t.Context(), asynq.NewTask(ti.Type, ti.Payload)); err != nil && !strings.Contains(err.Error(), "defer") {
				t.Logf("delivery %s: %v", ti.ID, err)
			}
		}
	}
	// A delivery task books again and may wait in place or defer; run
	// whatever is due until all 50 arrived.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, err := e.client.Status(t.Context(), "held")
		if err != nil {
			t.Fatal(err)
		}
		if st.Counts[task.Delivered] == 50 {
			break
		}
		time.Sleep(200 * time.Millisecond) // polling: a rebooked task comes due at its slot
		for _, ti := range e.scheduled(TypeDelivery) {
			_, rest, _ := strings.Cut(ti.ID, "/")
			var i int
			if _, err := fmt.Sscan(rest, &i); err == nil && i >= task.ChunkSize && ti.NextProcessAt.Before(time.Now()) {
				_ = e.w.handleDelivery(t.Context(), asynq.NewTask(ti.Type, ti.Payload))
			}
		}
	}
	reqs := e.apns.Requests()
	for i := task.ChunkSize; i < 150; i++ {
		if got := len(requestsFor(reqs, apnsToken(fmt.Sprint("held", i)))); got != 1 {
			t.Errorf("recipient %d got %d pushes, want 1", i, got)
		}
	}
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestCancelWakesHeldTasks: cancelling a job whose recipients wait in held
// tasks for slots 20 s away wakes those tasks: every recipient ends
// cancelled long before the slots, none is sent, and the bookings are
// given back.
func TestCancelWakesHeldTasks(t *testing.T) {
	const n = 150
	e := newEnv(t, envOptions{limits: "100/1m", gap: "20s"})
	e.waitDone(e.submit(fanJob("one", n)), 20*time.Second)
	two := e.submit(fanJob("two", n))
	waitFor(t, 10*time.Second, "the chunk task's held task", func() bool { return heldFrom(t, e, task.ChunkSize) })
	slot, ok := e.lim.slot("two/120")
	if !ok {
		t.Fatal("two/120 not booked")
	}
	if _, err := e.client.Cancel(t.Context(), two); err != nil {
		t.Fatal(err)
	}
	var st JobStatus
	waitFor(t, 5*time.Second, "every recipient final", func() bool {
		var err error
		st, err = e.client.Status(t.Context(), two)
		return err == nil && st.Counts["pending"] == 0
	})
	// Unwoken, a held task would run shortly before its slots.
	if left := time.Until(slot); left < 5*time.Second {
		t.Errorf("the job ended %s before the held slots, want the held tasks woken at once", left)
	}
	if st.Counts[task.Cancelled] != n {
		t.Errorf("counts %v, want all %d cancelled", st.Counts, n)
	}
	if got := len(requestsFor(e.apns.Requests(), apnsToken("two120"))); got != 0 {
		t.Errorf("a held recipient got %d pushes after the cancel", got)
	}
	for i := range n {
		if _, ok := e.lim.slot(fmt.Sprintf("two/%d", i)); ok {
			t.Errorf("recipient %d's booking kept after the cancel", i)
			break
		}
	}
}

// TestCollapseWakesHeldTask: a newer push with the same collapse key
// takes the place of a push held in a held task: the task is woken, the
// held push ends collapsed at once and is never sent, the newer one goes
// out at its slot, and the task's other recipients still arrive once, at
// their slots.
func TestCollapseWakesHeldTask(t *testing.T) {
	testkit.Slow(t, "waits out a 10 s gap for a held fan-out")
	const n = 150
	// A held booking within CollapseMargin (5 s) of its slot is never
	// collapsed: 10 s leaves a slow machine time to submit the newer push.
	e := newEnv(t, envOptions{limits: "100/1m", gap: "10s"})
	e.waitDone(e.submit(fanJob("first", n)), 20*time.Second)
	old := fanJob("old", n)
	old.CollapseKey = "score"
	e.submit(old)
	waitFor(t, 5*time.Second, "the chunk task's held task", func() bool { return heldFrom(t, e, task.ChunkSize) })
	oldSlot, ok := e.lim.slot("old/120")
	if !ok {
		t.Fatal("old/120 not booked")
	}
	latest := alertJob("latest", "f", apnsRecipient("u-120", apnsToken("latest")))
	latest.CollapseKey = "score"
	start := time.Now()
	e.submit(latest)
	waitFor(t, 3*time.Second, "old/120 collapsed", func() bool {
		st, err := e.client.Status(t.Context(), "old")
		return err == nil && st.Counts[task.Collapsed] == 1
	})
	t.Logf("collapsed %s after the newer push", time.Since(start).Round(time.Millisecond))
	st := e.waitDone("old", 25*time.Second)
	if st.Counts[task.Delivered] != n-1 {
		t.Errorf("old: counts %v, want %d delivered and 1 collapsed", st.Counts, n-1)
	}
	e.waitDone("latest", 10*time.Second)
	reqs := e.apns.Requests()
	if got := len(requestsFor(reqs, apnsToken("old120"))); got != 0 {
		t.Errorf("the collapsed push was sent %d times", got)
	}
	e.checkSentInTime("latest, at the held one's slot,", arrival(t, reqs, apnsToken("latest")), oldSlot, apnsToken("latest"))
	e.checkCollapsedEvent("old", "u-120", "latest")
	for i := range n {
		if i == 120 {
			continue
		}
		if got := len(requestsFor(reqs, apnsToken(fmt.Sprint("old", i)))); got != 1 {
			t.Errorf("old/%d sent %d times, want once", i, got)
		}
	}
}

// TestEarlierChunkTasksDoNotHoldBack: a hush:marked-chunk or hush:chunk
// task (which a process without held tasks may run again, not knowing held
// tasks) hands the recipients the limiter defers to their own delivery
// tasks, as such a process would.
func TestEarlierChunkTasksDoNotHoldBack(t *testing.T) {
	for _, typ := range []string{typeMarkedChunk, typeChunk} {
		t.Run(typ, func(t *testing.T) {
			e, _, task := heldEnv(t, 6*time.Second)
			if err := e.w.handleChunk(t.Context(), asynq.NewTask(typ, task.Payload())); err != nil {
				t.Fatal(err)
			}
			for _, c := range heldOf(t, e.scheduled(TypeHeld)) {
				if c.From != 0 {
					t.Errorf("held task %s from the chunk task, want none", c.Name())
				}
			}
			if got := len(e.scheduled(TypeDelivery)); got != 50 {
				t.Errorf("%d delivery tasks, want the chunk's 50", got)
			}
		})
	}
}

// heldFrom reports whether a held task of the chunk starting at from waits.
func heldFrom(t *testing.T, e *env, from int) bool {
	for _, c := range heldOf(t, e.scheduled(TypeHeld)) {
		if c.From == from {
			return true
		}
	}
	return false
}

// heldTask is the task holding recipient index of job, as its held marker
// names it: its hush:held task, or its own delivery task.
func (e *env) heldTask(job string, index int) (*asynq.TaskInfo, error) {
	mark, err := e.rdb.HGet(context.Background(), store.JobKey(job), store.HeldPrefix+fmt.Sprint(index)).Result()
	if err != nil {
		return nil, err
	}
	q, owner := task.ParseHeldMark(mark)
	if owner == "" {
		owner = task.DeliveryID(job, index)
	}
	return e.insp.GetTaskInfo(q, owner)
}

// TestHeldTasksWaitOutsideDeliverySlots: a held task waits for its slots
// in a slot of the held tasks' own server (HeldConcurrency), not in one of
// Concurrency's, so with one delivery slot, taken by a slow provider
// call, the held task still wakes and waits; everything is delivered,
// once per device, with the gap intact.
func TestHeldTasksWaitOutsideDeliverySlots(t *testing.T) {
	testkit.Slow(t, "holds the one delivery slot with a 10 s provider call")
	const gap = 4 * time.Second
	e := newEnv(t, envOptions{gap: gap.String(), concurrency: 1})
	e.waitDone(e.submit(fanJob("wa", 2)), 10*time.Second)
	second := e.submit(fanJob("wb", 2))
	var held *asynq.TaskInfo
	waitFor(t, 10*time.Second, "the second job's recipients to wait in a held task", func() bool {
		for _, ti := range e.scheduled(TypeHeld) {
			held = ti
		}
		return held != nil
	})
	// The one delivery slot is busy for 10 s from about now, well over the
	// held task's wake (within 3 s of its booking, and Asynq's forwarder
	// and dequeue after it, slower on a loaded machine). Its send then
	// waits for the one send permit, past its slot, and its recipients
	// book again through their delivery tasks.
	slow := apnsToken("slow")
	e.apns.Script(slow, fake.OK().WithLatency(10*time.Second))
	single := e.submit(alertJob("slow", "s", apnsRecipient("x", slow)))
	waitFor(t, 15*time.Second, "the held task to run while the delivery slot is busy", func() bool {
		ti, err := e.insp.GetTaskInfo(heldNormal, held.ID)
		if err != nil || ti.State != asynq.TaskStateActive {
			return false
		}
		active, err := e.insp.ListActiveTasks("normal")
		return err == nil && len(active) == 1
	})
	e.waitDone(single, 20*time.Second)
	if st := e.waitDone(second, 30*time.Second); st.Counts[task.Delivered] != 2 {
		t.Errorf("second job: counts %v, want 2 delivered", st.Counts)
	}
	reqs := e.apns.Requests()
	checkOnePushEachApart(t, reqs, "wa", "wb", 2, gap)
}

// TestReRunKeepsHeldTasksWhereMarked: a re-run creates each held task
// again under the id and in the queue its recipients' markers name, never
// under another id or in another queue (Asynq keeps ids unique per queue
// only, so that would be a second owner): a task a process without held
// queues made ("held:..." in a delivery queue) stays one, and so does a held queue a
// deployment with more shards used. A marker naming another chunk's task
// stops the run before it sends.
func TestReRunKeepsHeldTasksWhereMarked(t *testing.T) {
	e, jobT, _ := heldEnv(t, 6*time.Second)
	own := heldOf(t, e.scheduled(TypeHeld))
	if len(own) == 0 {
		t.Fatal("no held task")
	}
	wake := own[0].Wake
	for _, c := range own {
		if err := e.insp.DeleteTask(heldNormal, c.Name()); err != nil {
			t.Fatal(err)
		}
	}
	oldID := task.HeldID("held", 0, wake, false)
	// An hour later: no fresh recipient of the re-run wakes in that second
	// (one second later, a load that spreads the slots over two seconds
	// put fresh recipients in a task of this id in held-normal, and the
	// run rightly refused a second queue for it).
	movedID := task.HeldID("held", 0, wake+3600, true)
	const moved = "held-normal.2"
	marks := map[string]any{"cursor": nil}
	for i := range task.ChunkSize {
		switch {
		case i < 10:
			marks[fmt.Sprint(store.HeldPrefix, i)] = task.HeldMark("normal", oldID)
		case i < 20:
			marks[fmt.Sprint(store.HeldPrefix, i)] = task.HeldMark(moved, movedID)
		}
	}
	delete(marks, "cursor")
	if err := e.rdb.HSet(t.Context(), store.JobKey("held"), marks).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.HDel(t.Context(), store.JobKey("held"), "cursor").Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.w.handleJob(t.Context(), jobT); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		queue, id string
		want      []int
	}{{"normal", oldID, seq(0, 10)}, {moved, movedID, seq(10, 20)}} {
		ti, err := e.insp.GetTaskInfo(tc.queue, tc.id)
		if err != nil {
			t.Errorf("held task %s in %s: %v", tc.id, tc.queue, err)
			continue
		}
		var c task.Chunk
		if err := json.Unmarshal(ti.Payload, &c); err != nil {
			t.Fatal(err)
		}
		if c.Name() != tc.id || !slices.Equal(c.Indices, tc.want) {
			t.Errorf("held task %s in %s: named %s, holds %v; want %v", tc.id, tc.queue, c.Name(), c.Indices, tc.want)
		}
		for _, i := range tc.want {
			if mark := e.rdb.HGet(t.Context(), store.JobKey("held"), fmt.Sprint(store.HeldPrefix, i)).Val(); mark != task.HeldMark(tc.queue, tc.id) {
				t.Errorf("recipient %d marked %q, want %q", i, mark, task.HeldMark(tc.queue, tc.id))
			}
		}
	}
	var rest []int
	for _, c := range heldOf(t, e.scheduled(TypeHeld)) {
		if c.Name() == oldID || c.Name() == movedID {
			t.Errorf("held task %s also in %s", c.Name(), heldNormal)
		}
		rest = append(rest, c.Indices...)
	}
	slices.Sort(rest)
	if !slices.Equal(rest, seq(20, task.ChunkSize)) {
		t.Errorf("held tasks in %s hold %v, want 20 to 99", heldNormal, rest)
	}
	if got := len(e.scheduled(TypeDelivery)); got != 0 {
		t.Errorf("%d delivery tasks, want none", got)
	}

	// A marker naming another chunk's held task, or a held task in a
	// second queue.
	for i, mark := range map[int]string{
		0:  task.HeldMark("normal", task.HeldID("held", 1, wake, false)),
		20: task.HeldMark("held-normal.3", movedID),
	} {
		before := e.rdb.HGet(t.Context(), store.JobKey("held"), fmt.Sprint(store.HeldPrefix, i)).Val()
		if err := e.rdb.HSet(t.Context(), store.JobKey("held"), fmt.Sprint(store.HeldPrefix, i), mark).Err(); err != nil {
			t.Fatal(err)
		}
		if err := e.rdb.HDel(t.Context(), store.JobKey("held"), "cursor").Err(); err != nil {
			t.Fatal(err)
		}
		if err := e.w.handleJob(t.Context(), jobT); !errors.Is(err, asynq.SkipRetry) {
			t.Errorf("a re-run with recipient %d marked %q: %v, want a SkipRetry error", i, mark, err)
		}
		if err := e.rdb.HSet(t.Context(), store.JobKey("held"), fmt.Sprint(store.HeldPrefix, i), before).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(e.apns.Requests()); got != 0 {
		t.Errorf("%d pushes sent, want none", got)
	}
}

// TestShutdownHandsBackAWaitingHeldTask: SIGTERM while a held task waits
// in the held queues' server for its slots, with a shutdown timeout
// shorter than the wait: the held task sends nothing and goes back to its
// queue (not completed, not archived); the next process sends each push
// once, the gap intact.
func TestShutdownHandsBackAWaitingHeldTask(t *testing.T) {
	testkit.Slow(t, "a restart while a held task waits out a 4 s gap")
	const gap = 4 * time.Second
	var second string
	e, held := shutdownWhileHeldWaits(t, func() (*env, string, []string) {
		e := newEnv(t, envOptions{gap: gap.String(), shutdownTimeout: 100 * time.Millisecond})
		e.waitDone(e.submit(fanJob("sa", 2)), 10*time.Second)
		second = e.submit(fanJob("sb", 2))
		held := e.waitHeldActive("the second job's held task to wait for its slots", func() []string { return keysOf(e.scheduled(TypeHeld)) })
		return e, held, []string{"sb/0", "sb/1"}
	})
	reqs := e.apns.Requests()
	for i := range 2 {
		if got := len(requestsFor(reqs, apnsToken(fmt.Sprint("sb", i)))); got != 0 {
			t.Fatalf("user %d got %d pushes of the second job before the restart, want none (the shutdown timeout is shorter than the wait)", i, got)
		}
	}
	e.checkHandedBack(held)
	e.restart()
	if st := e.waitDone(second, 30*time.Second); st.Counts[task.Delivered] != 2 {
		t.Errorf("second job: counts %v, want 2 delivered", st.Counts)
	}
	reqs = e.apns.Requests()
	checkOnePushEachApart(t, reqs, "sa", "sb", 2, gap)
}

// shutdownWhileHeldWaits runs scenario, which makes an env whose held task
// (its id returned) waits in the handler for the slots of members, then
// shuts the worker down and returns the env and the task's id. Asynq
// wakes a held task between about 2 s and 0.1 s before its slots
// (decide.WakeMargin), and shutdown lets work under way go on for the shutdown
// timeout: a shutdown that begins less than that (and 200 ms for the
// test's own steps) before the first slot rightly sends, and shows
// nothing about a shutdown during the wait. Such a run is made again with
// a new env, up to three times in all; the test fails if none leaves the
// time.
func shutdownWhileHeldWaits(t *testing.T, scenario func() (e *env, held string, members []string)) (*env, string) {
	t.Helper()
	const attempts = 3
	for attempt := 1; ; attempt++ {
		e, held, members := scenario()
		stop := time.Now()
		e.shutdown()
		var first time.Time
		for _, m := range members {
			slot, ok := e.lim.slot(m)
			if !ok {
				t.Fatalf("%s: no booking", m)
			}
			if first.IsZero() || slot.Before(first) {
				first = slot
			}
		}
		need := e.opts.ShutdownTimeout + 200*time.Millisecond
		left := first.Sub(stop)
		if left >= need {
			return e, held
		}
		if attempt == attempts {
			t.Fatalf("in %d runs the shutdown began at most %s before the first slot (%s in the last), want at least %s: the held task woke too close to its slots to test a shutdown during its wait", attempts, need, left, need)
		}
		t.Logf("run %d: the shutdown began %s before the first slot, less than %s: run again", attempt, left, need)
	}
}

// waitHeldActive waits until the earliest task list names (the least id:
// the ids list gives differ only by their second) is active in the held
// queue of priority normal (a held task waiting for its slots), and
// returns its id. The earliest, because pushes held back together may
// straddle a second: a later second's task becomes active only after the
// earlier one sent.
func (e *env) waitHeldActive(what string, list func() []string) string {
	e.t.Helper()
	var held string
	waitFor(e.t, 15*time.Second, what, func() bool {
		for _, id := range list() {
			if held == "" || id < held {
				held = id
			}
		}
		if held == "" {
			return false
		}
		ti, err := e.insp.GetTaskInfo(heldNormal, held)
		return err == nil && ti.State == asynq.TaskStateActive
	})
	return held
}

// checkHandedBack checks that held task id is back in its queue after a
// shutdown: not active, completed or archived.
func (e *env) checkHandedBack(id string) {
	e.t.Helper()
	ti, err := e.insp.GetTaskInfo(heldNormal, id)
	if err != nil {
		e.t.Fatalf("held task %s after the shutdown: %v", id, err)
	}
	if ti.State == asynq.TaskStateArchived || ti.State == asynq.TaskStateCompleted || ti.State == asynq.TaskStateActive {
		e.t.Fatalf("held task %s is %v after the shutdown, want back in its queue", id, ti.State)
	}
}

// checkOnePushEachApart checks that each of the n users of two fan-out
// jobs (fanJob(first, n), then fanJob(second, n)) got one push of each, at
// least gap apart (within the tests' 250 ms tolerance).
func checkOnePushEachApart(t *testing.T, reqs []fake.Request, first, second string, n int, gap time.Duration) {
	t.Helper()
	for i := range n {
		a := requestsFor(reqs, apnsToken(fmt.Sprint(first, i)))
		b := requestsFor(reqs, apnsToken(fmt.Sprint(second, i)))
		if len(a) != 1 || len(b) != 1 {
			t.Errorf("user %d got %d and %d pushes, want 1 and 1", i, len(a), len(b))
		} else if d := b[0].At.Sub(a[0].At); d < gap-250*time.Millisecond {
			t.Errorf("user %d: pushes %s apart, want at least %s", i, d, gap)
		}
	}
}

// TestHeldTaskTakesItsSlotsFromItsPayload: the chunk's run writes each
// held recipient's slot into its held task; the task's first run sends at
// those slots without asking the limiter (moved 600 ms later here, the
// pushes follow the payload, not the limiter), and a re-run asks the
// limiter and sends at the slots it booked.
func TestHeldTaskTakesItsSlotsFromItsPayload(t *testing.T) {
	e, _, chunkTask := heldEnv(t, 4*time.Second)
	byJob := heldOf(t, e.scheduled(TypeHeld))
	if err := e.w.handleChunk(t.Context(), chunkTask); err != nil {
		t.Fatal(err)
	}
	var own, jobs []task.Chunk
	for _, c := range heldOf(t, e.scheduled(TypeHeld)) {
		if c.From == 0 {
			jobs = append(jobs, c)
		} else {
			own = append(own, c)
		}
	}
	if len(own) == 0 || len(jobs) == 0 || len(jobs) != len(byJob) {
		t.Fatalf("%d held tasks of the chunk task, %d of the job task (%d before the chunk ran): want some of each", len(own), len(jobs), len(byJob))
	}
	const moved = 600 // ms
	member := func(i int) string { return fmt.Sprintf("held/%d", i) }
	var earliest time.Time
	for _, c := range append(own, jobs...) {
		if len(c.Slots) != len(c.Indices) {
			t.Fatalf("held task %s carries %d slots for %d recipients", c.Name(), len(c.Slots), len(c.Indices))
		}
		for k, i := range c.Indices {
			booked, ok := e.lim.slot(member(i))
			if !ok {
				t.Fatalf("recipient %d not booked", i)
			}
			// The payload's slot is the booking's answer on the local
			// clock: at or after the limiter's, by at most the round trip.
			if d := time.UnixMilli(c.Slots[k]).Sub(booked); d < -time.Millisecond || d > time.Second {
				t.Errorf("recipient %d: payload slot %s after the limiter's", i, d)
			}
			if earliest.IsZero() || booked.Before(earliest) {
				earliest = booked
			}
			c.Slots[k] += moved
		}
	}
	// Real time: the slots are on the limiter's clock (Redis TIME),
	// which no injected clock moves.
	time.Sleep(time.Until(earliest.Add(-1500 * time.Millisecond)))
	run := e.runHeld
	// The job task's held tasks: a first run cut by shutdown while it
	// waits for the slots, then its re-run.
	ctx, cancel := context.WithCancel(t.Context())
	cut := time.AfterFunc(500*time.Millisecond, cancel)
	var wg sync.WaitGroup
	for _, c := range jobs {
		wg.Go(func() {
			if err := run(ctx, c); err == nil {
				t.Errorf("held task %s cut by shutdown returned no error", c.Name())
			}
		})
	}
	wg.Wait()
	cut.Stop()
	cancel()
	for _, c := range jobs {
		for _, i := range c.Indices {
			if n := e.lim.asked(member(i)); n != 1 {
				t.Errorf("recipient %d: in %d limiter requests after its held task's first run, want only its chunk's booking", i, n)
			}
		}
	}
	if got := len(e.apns.Requests()); got != 0 {
		t.Fatalf("%d pushes sent by runs cut before the slots, want none", got)
	}
	// Side by side: the chunk task's held tasks' first runs, and the job
	// task's held tasks' re-runs.
	e.runHeldTogether(append(own, jobs...))
	reqs := e.apns.Requests()
	handed := e.lateHandoffs()
	check := func(c task.Chunk, rerun bool) {
		for k, i := range c.Indices {
			asks := e.lim.asked(member(i))
			if rerun && asks < 2 {
				t.Errorf("recipient %d: its held task's re-run did not ask the limiter (%d requests)", i, asks)
			}
			if !rerun && asks != 1 {
				t.Errorf("recipient %d: in %d limiter requests after its held task's first run, want only its chunk's booking", i, asks)
			}
			slot, _ := e.lim.slot(member(i))
			if !rerun {
				slot = time.UnixMilli(c.Slots[k]) // moved: the payload's
			}
			checkHeldSent(e, reqs, handed, i, slot)
		}
	}
	for _, c := range own {
		check(c, false)
	}
	for _, c := range jobs {
		check(c, true)
	}
	if len(reqs) == 0 {
		t.Errorf("every held recipient late for its slot: want the held tasks to send at least one at its slot")
	}
}

// TestHeldSlotsOnlyWhenUnchanged: a held task takes its payload's slots
// only on a first run of a job that was not cancelled, without a collapse
// key, a bypass priority or an unknown slot.
func TestHeldSlotsOnlyWhenUnchanged(t *testing.T) {
	w := &Worker{bypass: map[payload.Priority]bool{payload.PriorityCritical: true}}
	// The limiter's clock is 5 s ahead of this process's.
	const ahead = 5 * time.Second
	asked := time.Now()
	w.limiterClockOf("a").learn([]throttle.Reservation{{Now: asked.Add(ahead + time.Millisecond)}}, asked, asked.Add(2*time.Millisecond))
	at := time.Now().Add(ahead + 2*time.Second).UnixMilli()
	base := func() (*task.Chunk, *chunkStates) {
		c := &task.Chunk{Job: "j", Wake: 1, Indices: []int{3, 5}, Slots: []int64{at, at + 7}, Booked: at - 4000,
			Recipients: make([]payload.Recipient, 2), Priority: payload.PriorityNormal, Content: payload.Content{App: "a"}}
		// A reset before the bookings: they are as made.
		return c, &chunkStates{first: true, readAt: time.Now(), resetMark: at - 4000}
	}
	c, st := base()
	app := &App{Name: "a"}
	b := w.heldSlots(t.Context(), app, c, st, []int{1})
	if b == nil || !slices.Equal(b.idx, []int{1}) || len(b.res) != 1 || !b.res[0].Existing || b.res[0].At.UnixMilli() != at+7 || !b.asked.Equal(st.readAt) {
		t.Fatalf("a fresh held task's booking: %+v, want recipient 1 found at its payload's slot, its cancellation read at the states'", b)
	}
	// Planned on the local clock: the slot 5 s earlier, never before the
	// limiter's instant (its reading came 1 ms before the answer).
	pl := decide.Plan(b.res[0], b.mid, b.answered, b.answered, time.Time{}, false)
	want := time.UnixMilli(at + 7).Add(-ahead + time.Millisecond)
	if pl.Step != decide.StepWait || pl.Slot.Before(want) || pl.Slot.After(want.Add(20*time.Millisecond)) {
		t.Errorf("planned %v at %s, want a wait until %s (the payload's slot on the local clock)", pl.Step, pl.Slot, want)
	}
	for name, change := range map[string]func(*task.Chunk, *chunkStates){
		"no reading of the limiter's clock": func(c *task.Chunk, _ *chunkStates) { app = &App{Name: "b"} },
		"re-run":                            func(_ *task.Chunk, st *chunkStates) { st.first = false },
		"cancelled":                         func(_ *task.Chunk, st *chunkStates) { st.cancelled = true },
		"collapse key":                      func(c *task.Chunk, _ *chunkStates) { c.Content.CollapseKey = "score" },
		"bypass priority":                   func(c *task.Chunk, _ *chunkStates) { c.Priority = payload.PriorityCritical },
		"slot not known":                    func(c *task.Chunk, _ *chunkStates) { c.Slots[1] = 0 },
		"no slots":                          func(c *task.Chunk, _ *chunkStates) { c.Slots = nil },
		"slots not beside indices":          func(c *task.Chunk, _ *chunkStates) { c.Slots = c.Slots[:1] },
		"not a held task":                   func(c *task.Chunk, _ *chunkStates) { c.Wake = 0 },
		"booked before a reset":             func(_ *task.Chunk, st *chunkStates) { st.resetMark++ },
		"booking instant not known":         func(c *task.Chunk, _ *chunkStates) { c.Booked = 0 },
	} {
		c, st := base()
		app = &App{Name: "a"}
		change(c, st)
		if b := w.heldSlots(t.Context(), app, c, st, []int{0, 1}); b != nil {
			t.Errorf("%s: slots taken from the payload (%+v), want them looked up", name, b.res)
		}
	}
}

// TestLimiterClock: the reading with the shortest round trip is kept
// until it is limiterClockAge old; a failed booking teaches nothing; and
// a slot on the limiter's clock is read on the local one never before
// its instant.
func TestLimiterClock(t *testing.T) {
	var c limiterClock
	t0 := time.Now()
	at := t0.Add(time.Minute)
	if _, ok := c.found(at, t0); ok {
		t.Fatal("a slot read with no reading of the limiter's clock")
	}
	c.learn([]throttle.Reservation{{}}, t0, t0.Add(time.Millisecond))
	if _, ok := c.found(at, t0); ok {
		t.Fatal("a failed booking (no Now) taught the limiter's clock")
	}
	// The limiter is 3 s ahead; it read its clock in the middle of a 40 ms
	// round trip, then of a 4 ms one.
	c.learn([]throttle.Reservation{{}, {Now: t0.Add(3*time.Second + 20*time.Millisecond)}}, t0, t0.Add(40*time.Millisecond))
	local := func(now time.Time) time.Time {
		t.Helper()
		r, ok := c.found(at, now)
		if !ok {
			t.Fatalf("no reading at %s", now.Sub(t0))
		}
		return now.Add(r.Wait) // as plan reads it, answered = now
	}
	if got, want := local(t0), at.Add(-3*time.Second); got.Before(want) || got.After(want.Add(20*time.Millisecond)) {
		t.Errorf("slot read at %s, want within 20 ms after %s", got.Sub(t0), want.Sub(t0))
	}
	t1 := t0.Add(time.Second)
	c.learn([]throttle.Reservation{{Now: t1.Add(3*time.Second + 2*time.Millisecond)}}, t1, t1.Add(4*time.Millisecond))
	if got, want := local(t1), at.Add(-3*time.Second); got.Before(want) || got.After(want.Add(2*time.Millisecond)) {
		t.Errorf("after a shorter round trip: slot read at %s, want within 2 ms after %s", got.Sub(t0), want.Sub(t0))
	}
	// A longer round trip does not replace it, until it is too old.
	t2 := t1.Add(time.Second)
	c.learn([]throttle.Reservation{{Now: t2.Add(time.Hour)}}, t2, t2.Add(50*time.Millisecond))
	if got, want := local(t2), at.Add(-3*time.Second); got.Before(want) || got.After(want.Add(2*time.Millisecond)) {
		t.Errorf("a longer round trip replaced the reading: slot read at %s", got.Sub(t0))
	}
	if _, ok := c.found(at, t1.Add(limiterClockAge+time.Second)); ok {
		t.Error("a reading older than limiterClockAge was used")
	}
	t3 := t1.Add(limiterClockAge + time.Second)
	c.learn([]throttle.Reservation{{Now: t3.Add(time.Second + 25*time.Millisecond)}}, t3, t3.Add(50*time.Millisecond))
	if got, want := local(t3), at.Add(-time.Second); got.Before(want) || got.After(want.Add(50*time.Millisecond)) {
		t.Errorf("after the reading aged out: slot read at %s, want within 50 ms after %s", got.Sub(t0), want.Sub(t0))
	}
}

// TestNearRecipientsWaitInHeldTasks: recipients whose slots are within a
// wait in place (the users' 2 s gap) wait in held tasks of this second,
// not in delivery tasks (which would each keep a delivery slot while they
// wait, and a burst of them took every slot and started late); the held
// tasks send each at its slot, without asking the limiter again.
func TestNearRecipientsWaitInHeldTasks(t *testing.T) {
	e, _, chunkTask := heldEnv(t, 2*time.Second)
	if err := e.w.handleChunk(t.Context(), chunkTask); err != nil {
		t.Fatal(err)
	}
	if got := len(e.scheduled(TypeDelivery)); got != 0 {
		t.Errorf("%d delivery tasks for near recipients, want none", got)
	}
	held := heldOf(t, e.scheduled(TypeHeld))
	checkHeld(t, e, e.scheduled(TypeHeld), seq(0, 150))
	now := time.Now().Unix()
	for _, c := range held {
		if c.Wake > now {
			t.Errorf("held task %s wakes at %d, after now (%d): want it due at once", c.Name(), c.Wake, now)
		}
	}
	e.runHeldTogether(held)
	reqs := e.apns.Requests()
	handed := e.lateHandoffs()
	if len(reqs) == 0 {
		t.Fatal("no push sent by the held tasks")
	}
	for i := range 150 {
		m := fmt.Sprintf("held/%d", i)
		if n := e.lim.asked(m); !handed[m] && n != 1 {
			t.Errorf("recipient %d: in %d limiter requests, want only its chunk's booking", i, n)
		}
		slot, _ := e.lim.slot(m)
		checkHeldSent(e, reqs, handed, i, slot)
	}
}
