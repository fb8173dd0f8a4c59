package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// waitingJobsEnv is a worker that does not run, with a batch of n
// single-recipient jobs "hj-<i>" for users u-<i>, each user booked just
// before under gap, so the limiter defers every job; the batch task is
// returned, not run.
func waitingJobsEnv(t *testing.T, n int, gap time.Duration) (*env, *asynq.Task, []payload.Job) {
	t.Helper()
	e := newEnv(t, envOptions{noRun: true, gap: gap.String()})
	var jobs []payload.Job
	for i := range n {
		if _, err := e.lim.Reserve(t.Context(), fmt.Sprintf("u-%d", i), fmt.Sprintf("before/%d", i)); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, alertJob(fmt.Sprint("hj-", i), "held", apnsRecipient(fmt.Sprint("u-", i), apnsToken(fmt.Sprint("hj-", i)))))
	}
	e.submitBatch(jobs)
	pending, err := e.insp.ListPendingTasks("normal")
	if err != nil || len(pending) != 1 || pending[0].Type != TypeBatch {
		t.Fatalf("pending tasks %v, %v: want the one batch", pending, err)
	}
	return e, asynq.NewTask(TypeBatch, pending[0].Payload), jobs
}

// waitingJobsTasks lists the hush:waiting-jobs groups waiting in the held
// queue of priority normal, decoded, by id: in a task of their own, or
// in the hash of a hush:waiting-second task that has not taken them yet
// (waitingsecond.go).
func (e *env) waitingJobsTasks() map[string]waitingJobs {
	e.t.Helper()
	out := map[string]waitingJobs{}
	add := func(id string, body []byte) {
		var h waitingJobs
		if err := json.Unmarshal(body, &h); err != nil {
			e.t.Fatal(err)
		}
		if h.ID != id {
			e.t.Errorf("held jobs %s names itself %s", id, h.ID)
		}
		out[id] = h
	}
	for _, ti := range e.heldTasks(TypeWaitingJobs) {
		add(ti.ID, ti.Payload)
	}
	for _, s := range e.waitingSeconds() {
		for id, body := range e.rdb.HGetAll(e.t.Context(), store.TogetherKeys(s.Queue, s.Wake)[0]).Val() {
			add(id, []byte(body))
		}
	}
	return out
}

// heldTasks lists the tasks of type typ scheduled, pending or active in
// the held queue of priority normal.
func (e *env) heldTasks(typ string) []*asynq.TaskInfo {
	e.t.Helper()
	var out []*asynq.TaskInfo
	for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){e.insp.ListScheduledTasks, e.insp.ListPendingTasks, e.insp.ListActiveTasks} {
		tasks, err := list(heldNormal, asynq.PageSize(1000))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			break
		}
		if err != nil {
			e.t.Fatal(err)
		}
		for _, ti := range tasks {
			if ti.Type == typ {
				out = append(out, ti)
			}
		}
	}
	return out
}

// waitingSeconds lists the hush:waiting-second tasks of the held queue of
// priority normal, by id, checking each is its second's.
func (e *env) waitingSeconds() map[string]waitingSecond {
	e.t.Helper()
	out := map[string]waitingSecond{}
	for _, ti := range e.heldTasks(TypeWaitingSecond) {
		var s waitingSecond
		if err := json.Unmarshal(ti.Payload, &s); err != nil {
			e.t.Fatal(err)
		}
		if id := task.WaitingSecondID(s.Queue, s.Wake); id != ti.ID || s.Queue != heldNormal {
			e.t.Errorf("held second %s: payload %+v", ti.ID, s)
		}
		out[ti.ID] = s
	}
	return out
}

// runHeldSeconds runs each hush:waiting-second task as Asynq would, at its
// second, runs times each, and deletes it (Asynq would, once it ran).
func (e *env) runHeldSeconds(runs int) {
	e.t.Helper()
	secs := e.waitingSeconds()
	for _, id := range slices.Sorted(maps.Keys(secs)) {
		// Real time: the slots are on the limiter's clock (Redis TIME),
		// which no injected clock moves.
		time.Sleep(time.Until(time.Unix(secs[id].Wake, 0)))
		body, err := json.Marshal(secs[id])
		if err != nil {
			e.t.Fatal(err)
		}
		for run := range runs {
			if err := e.w.handleWaitingSecond(e.t.Context(), asynq.NewTask(TypeWaitingSecond, body)); err != nil {
				e.t.Fatalf("run %d of %s: %v", run+1, id, err)
			}
		}
		if err := e.insp.DeleteTask(heldNormal, id); err != nil {
			e.t.Fatal(err)
		}
	}
}

// heldJoined is the queue a joined group's markers name in the held queue
// of priority normal.
var heldJoined = heldNormal + task.TogetherSuffix

// checkHeldJobs checks that tasks hold exactly jobs hj-<want...>, each
// marked held by its task in heldNormal, and returns the jobs' ids per
// task.
func checkHeldJobs(t *testing.T, e *env, tasks map[string]waitingJobs, want []int) map[string][]string {
	t.Helper()
	var got []string
	out := map[string][]string{}
	for id, h := range tasks {
		for _, c := range h.Jobs {
			got = append(got, c.Job)
			out[id] = append(out[id], c.Job)
			mark := e.rdb.HGet(t.Context(), store.JobKey(c.Job), store.HeldPrefix+"0").Val()
			if mark != task.HeldMark(heldJoined, id) {
				t.Errorf("job %s marked %q, want held by %s in %s", c.Job, mark, id, heldJoined)
			}
		}
	}
	var wantIDs []string
	for _, i := range want {
		wantIDs = append(wantIDs, fmt.Sprint("hj-", i))
	}
	slices.Sort(got)
	slices.Sort(wantIDs)
	if !slices.Equal(got, wantIDs) {
		t.Errorf("held jobs %v, want %v", got, wantIDs)
	}
	return out
}

// TestBatchHoldsSingleJobsBackTogether: a batch whose single-recipient
// jobs the limiter all defers holds them in hush:waiting-jobs groups (one
// per second of waking), each waiting for its second's hush:waiting-second
// task, not in a delivery task each; each job's record marks it held by
// its group. The seconds' runs send each job once, at its slot; a second
// run of a second's task sends nothing more. A re-run of the batch, with
// the groups and tasks lost (a crash between the markers and the joins),
// adds them again whole under the same ids, and sends nothing.
func TestBatchHoldsSingleJobsBackTogether(t *testing.T) {
	const n, gap = 12, 3 * time.Second
	e, batchT, jobs := waitingJobsEnv(t, n, gap)
	if err := e.w.handleBatch(t.Context(), batchT); err != nil {
		t.Fatal(err)
	}
	if got := len(e.scheduled(TypeDelivery)); got != 0 {
		t.Errorf("%d delivery tasks, want none", got)
	}
	tasks := e.waitingJobsTasks()
	if len(tasks) == 0 || len(tasks) > 2 {
		t.Fatalf("%d held jobs groups, want 1 or 2 (the bookings were made within a moment)", len(tasks))
	}
	if own := e.heldTasks(TypeWaitingJobs); len(own) != 0 {
		t.Errorf("%d groups in tasks of their own, want each waiting for its second's task", len(own))
	}
	secs := e.waitingSeconds()
	if len(secs) != len(tasks) {
		t.Errorf("%d hush:waiting-second tasks for %d groups of one run, want one each", len(secs), len(tasks))
	}
	members := checkHeldJobs(t, e, tasks, seq(0, n))

	// Lost groups and tasks: the batch's re-run, in a new process, adds
	// each group again, whole, and makes its second's task.
	for id, s := range secs {
		if err := e.insp.DeleteTask(heldNormal, id); err != nil {
			t.Fatal(err)
		}
		e.rdb.Del(t.Context(), store.TogetherKeys(s.Queue, s.Wake)[0])
	}
	e.w.seconds.reset()
	if err := e.w.handleBatch(t.Context(), batchT); err != nil {
		t.Fatal(err)
	}
	again := e.waitingJobsTasks()
	if !slices.Equal(keysOf(again), keysOf(tasks)) {
		t.Fatalf("re-run made held jobs groups %v, want %v", keysOf(again), keysOf(tasks))
	}
	if !slices.Equal(keysOf(e.waitingSeconds()), keysOf(secs)) {
		t.Fatalf("re-run made seconds' tasks %v, want %v", keysOf(e.waitingSeconds()), keysOf(secs))
	}
	checkHeldJobs(t, e, again, seq(0, n))
	if got := len(e.scheduled(TypeDelivery)); got != 0 {
		t.Errorf("%d delivery tasks after the re-run, want none", got)
	}
	if got := len(e.apns.Requests()); got != 0 {
		t.Fatalf("%d pushes before the held tasks ran, want none", got)
	}

	// Each second's task, run at its second as Asynq would, sends its
	// jobs at their slots; a second run nothing.
	e.runHeldSeconds(2)
	handed := e.lateHandoffs()
	for id, h := range again {
		if slices.ContainsFunc(h.Jobs, func(c task.Chunk) bool { return handed[task.Member(c.Job, 0, 0)] }) {
			continue // a member handed over: the mark stays for a re-run
		}
		if n := e.rdb.Exists(t.Context(), store.HeldRunKey(id)).Val(); n != 0 {
			t.Errorf("run mark of %s left after a run that settled every job", id)
		}
	}
	checkSentOnce(t, e, jobs, func(i int) string { return apnsToken(jobs[i].ID) })
	for _, j := range jobs {
		if handed[task.Member(j.ID, 0, 0)] {
			continue
		}
		if st, err := e.client.Status(t.Context(), j.ID); err != nil || st.Counts[task.Delivered] != 1 {
			t.Errorf("job %s: status %+v, %v; want 1 delivered", j.ID, st, err)
		}
	}
	t.Logf("%d jobs held in %d tasks: %v", n, len(members), members)
}

// TestHeldJobsReRunsCreateOnlyWholeTasks: a run that fails for one job,
// or is cut by a shutdown, adds its own new groups to their second (every
// member is known: it added them) but not an earlier run's (a member might
// be the failed job's), and a later run without a failure adds those. A
// marker naming another task's group stops that job alone (SkipRetry),
// sending nothing.
func TestHeldJobsReRunsCreateOnlyWholeTasks(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	c := task.ChunkOf(&payload.Job{ID: "j1", Recipients: []payload.Recipient{apnsRecipient("u", apnsToken("t"))}}, 0)
	c.Priority = payload.PriorityNormal
	old := newHeldJobsGroups("batch:b")
	cur := newHeldJobsGroups("batch:b")
	if old.token == cur.token {
		t.Fatal("two runs share a token")
	}
	wake := time.Now().Add(time.Hour).Unix()
	oldID, q := old.id(e.w, c, wake)
	newID, q2 := cur.id(e.w, c, wake)
	if oldID == newID || q != q2 || q != heldJoined {
		t.Fatalf("ids %s and %s (queues %s, %s): want two ids of one wake in %s", oldID, newID, q, q2, heldJoined)
	}
	for _, id := range []string{oldID, newID} {
		if err := cur.put(c, heldJoin{id: id, queue: q}); err != nil {
			t.Fatal(err)
		}
	}
	waiting := store.TogetherKeys(heldNormal, wake)[0]
	exists := func(id string) bool {
		return e.rdb.HExists(t.Context(), waiting, id).Val()
	}
	// Shutdown: this run's group is whole, and added before the hand-back.
	stopped, stop := context.WithCancel(t.Context())
	stop()
	if err := cur.finish(stopped, e.w, []error{nil, context.Canceled}); err != nil {
		t.Fatal(err)
	}
	if !exists(newID) || exists(oldID) {
		t.Fatalf("after a shutdown: this run's group waits %v, the earlier run's %v; want true, false", exists(newID), exists(oldID))
	}
	if _, err := e.insp.GetTaskInfo(heldNormal, task.WaitingSecondID(heldNormal, wake)); err != nil {
		t.Fatalf("the second's task: %v", err)
	}
	e.rdb.HDel(t.Context(), waiting, newID)
	if err := cur.finish(t.Context(), e.w, []error{nil, errors.New("redis down")}); err != nil {
		t.Fatal(err)
	}
	if !exists(newID) || exists(oldID) {
		t.Fatalf("after a failed job: this run's group waits %v, the earlier run's %v; want true, false", exists(newID), exists(oldID))
	}
	if err := cur.finish(t.Context(), e.w, []error{nil, fmt.Errorf("job x: %w", asynq.SkipRetry)}); err != nil {
		t.Fatal(err)
	}
	if !exists(oldID) {
		t.Fatal("a run whose jobs all ended (one for good) did not add the earlier run's group again")
	}

	other := task.WaitingJobsID("batch:other", "t0", wake)
	if err := cur.check(c, q, other); !errors.Is(err, asynq.SkipRetry) {
		t.Errorf("a marker naming %s: %v, want SkipRetry", other, err)
	}
	if err := cur.check(c, q, oldID); err != nil {
		t.Errorf("a marker naming an earlier run's task: %v", err)
	}
	if err := cur.put(c, heldJoin{id: oldID, queue: "held-normal.2" + task.TogetherSuffix}); !errors.Is(err, asynq.SkipRetry) {
		t.Errorf("one task marked in two queues: %v, want SkipRetry", err)
	}
}

// TestHeldJobsThrottledBurst: users each sent two single-recipient jobs
// in one batch, the worker running, under a gap longer than a wait in
// place: every push arrives once, a gap apart per user, and the deferred
// ones never became delivery tasks (the delivery queue ran the batch task
// alone).
func TestHeldJobsThrottledBurst(t *testing.T) {
	const users, per, gap = 6, 2, 3 * time.Second
	e := newEnv(t, envOptions{gap: gap.String()})
	var jobs []payload.Job
	for i := range users {
		for k := range per {
			id := fmt.Sprintf("burst-%d-%d", i, k)
			jobs = append(jobs, alertJob(id, "b", apnsRecipient(fmt.Sprint("u-", i), apnsToken(id))))
		}
	}
	e.submitBatch(jobs)
	for _, j := range jobs {
		e.waitDone(j.ID, 30*time.Second)
	}
	reqs := e.apns.Requests()
	for i := range users {
		var at []time.Time
		for k := range per {
			got := requestsFor(reqs, apnsToken(fmt.Sprintf("burst-%d-%d", i, k)))
			if len(got) != 1 {
				t.Errorf("job burst-%d-%d: %d pushes, want 1", i, k, len(got))
				continue
			}
			at = append(at, got[0].At)
		}
		slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
		for k := 1; k < len(at); k++ {
			if d := at[k].Sub(at[k-1]); d < gap-250*time.Millisecond {
				t.Errorf("user %d: pushes %s apart, want at least %s", i, d, gap)
			}
		}
	}
	qi, err := e.insp.GetQueueInfo("normal")
	if err != nil {
		t.Fatal(err)
	}
	hi, err := e.insp.GetQueueInfo(heldNormal)
	if err != nil {
		t.Fatal(err)
	}
	// Each step's held jobs may straddle a second: up to two tasks each.
	if qi.Processed != 1 || hi.Processed < 1 || hi.Processed > 2*(per-1) {
		t.Errorf("tasks run: %d in normal, %d in %s; want the batch alone, and 1 to %d held jobs tasks", qi.Processed, hi.Processed, heldNormal, 2*(per-1))
	}
}

// TestShutdownHandsBackWaitingHeldJobs: SIGTERM while a hush:waiting-jobs
// task waits for its slots, with a shutdown timeout shorter than the wait:
// it sends nothing and goes back to its queue; the next process sends
// each push once, the gap intact.
func TestShutdownHandsBackWaitingHeldJobs(t *testing.T) {
	testkit.Slow(t, "a restart while held jobs wait out a 4 s gap")
	const gap = 4 * time.Second
	var first, second []payload.Job
	for i := range 3 {
		first = append(first, alertJob(fmt.Sprint("sa", i), "a", apnsRecipient(fmt.Sprint("u-", i), apnsToken(fmt.Sprint("sa", i)))))
		second = append(second, alertJob(fmt.Sprint("sb", i), "b", apnsRecipient(fmt.Sprint("u-", i), apnsToken(fmt.Sprint("sb", i)))))
	}
	e, held := shutdownWhileHeldWaits(t, func() (*env, string, []string) {
		e := newEnv(t, envOptions{gap: gap.String(), shutdownTimeout: 100 * time.Millisecond})
		e.submitBatch(first)
		for _, j := range first {
			e.waitDone(j.ID, 10*time.Second)
		}
		e.submitBatch(second)
		held := e.waitHeldActive("the held second's task to wait for its slots", func() []string { return keysOf(e.waitingSeconds()) })
		var members []string
		for _, j := range second {
			members = append(members, task.Member(j.ID, 0, 0))
		}
		return e, held, members
	})
	reqs := e.apns.Requests()
	for _, j := range second {
		if got := len(requestsFor(reqs, apnsToken(j.ID))); got != 0 {
			t.Fatalf("job %s: %d pushes before the restart, want none (the shutdown timeout is shorter than the wait)", j.ID, got)
		}
	}
	e.checkHandedBack(held)
	e.restart()
	for _, j := range second {
		if st := e.waitDone(j.ID, 30*time.Second); st.Counts[task.Delivered] != 1 {
			t.Errorf("job %s: counts %v, want 1 delivered", j.ID, st.Counts)
		}
	}
	checkOnePushEachApart(t, e.apns.Requests(), "sa", "sb", 3, gap)
}

// TestHeldJobsLateHandsOverAndKeepsItsMark: a hush:waiting-jobs task that
// runs after its jobs' slots (a process that stalled) sends nothing: it
// marks each job held by its delivery task and creates that task, which
// books again. Its run mark stays (a later run of it must read the jobs'
// states, since a delivery task owns them), and such a later run sends
// nothing and creates nothing more. A run that settles every job deletes
// the mark (TestBatchHoldsSingleJobsBackTogether).
func TestHeldJobsLateHandsOverAndKeepsItsMark(t *testing.T) {
	const n, gap = 4, 3 * time.Second
	e, batchT, jobs := waitingJobsEnv(t, n, gap)
	if err := e.w.handleBatch(t.Context(), batchT); err != nil {
		t.Fatal(err)
	}
	tasks := e.waitingJobsTasks()
	if len(tasks) == 0 {
		t.Fatal("no held jobs task")
	}
	latest := latestSlot(t, e, jobs)
	// Real time: the slots are on the limiter's clock (Redis TIME),
	// which no injected clock moves.
	time.Sleep(time.Until(latest.Add(decide.LateRebook + 300*time.Millisecond)))
	// The second's task, twice (the second run takes nothing: done), then
	// each group's own task by hand (it reads its members' states).
	e.runHeldSeconds(2)
	for _, id := range keysOf(tasks) {
		body, err := json.Marshal(tasks[id])
		if err != nil {
			t.Fatal(err)
		}
		for run := range 2 {
			if n, err := e.rdb.Exists(t.Context(), store.HeldRunKey(id)).Result(); err != nil || n != 1 {
				t.Errorf("before run %d of %s by hand: run mark exists %d, %v; want kept", run+1, id, n, err)
			}
			if err := e.w.handleWaitingJobs(t.Context(), asynq.NewTask(TypeWaitingJobs, body)); err != nil {
				t.Fatalf("run %d of %s: %v", run+1, id, err)
			}
		}
		if n, err := e.rdb.Exists(t.Context(), store.HeldRunKey(id)).Result(); err != nil || n != 1 {
			t.Errorf("after the runs of %s by hand: run mark exists %d, %v; want kept", id, n, err)
		}
	}
	if got := len(e.apns.Requests()); got != 0 {
		t.Errorf("%d pushes sent by late held tasks, want none", got)
	}
	if got := len(e.lateHandoffs()); got != n {
		t.Errorf("%d delivery tasks, want %d (one per job)", got, n)
	}
	for _, j := range jobs {
		mark := e.rdb.HGet(t.Context(), store.JobKey(j.ID), store.HeldPrefix+"0").Val()
		if q, task := task.ParseHeldMark(mark); q != "normal" || task != "" {
			t.Errorf("job %s marked %q, want held by its delivery task in normal", j.ID, mark)
		}
	}
}

// reset forgets the seconds' tasks made, as a new process would.
func (s *seconds) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.made = nil
}

// TestHeldJobsTakeTheirSlotsFromTheGroup: a batch's run writes each held
// job's slot (the limiter's) into its group; the second's task's first
// run sends each at it without asking the limiter again.
func TestHeldJobsTakeTheirSlotsFromTheGroup(t *testing.T) {
	const n, gap = 8, 3 * time.Second
	e, batchT, jobs := waitingJobsEnv(t, n, gap)
	if err := e.w.handleBatch(t.Context(), batchT); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, h := range e.waitingJobsTasks() {
		for _, c := range h.Jobs {
			held++
			booked, ok := e.lim.slot(task.Member(c.Job, 0, 0))
			if !ok || len(c.Slots) != 1 || c.Slots[0] != booked.UnixMilli() {
				t.Errorf("job %s held with slots %v, want its booking's %v", c.Job, c.Slots, booked)
			}
		}
	}
	if held != n {
		t.Fatalf("%d jobs held back, want %d", held, n)
	}
	e.runHeldSeconds(1)
	checkHeldJobsSent(t, e, jobs, 1)
}

// checkHeldJobsSent checks that each of jobs, held back in groups whose
// seconds ran, was sent once, or handed over late, and that each not
// handed over was in asks limiter requests: 1, its batch's booking; 2,
// and its group's lookup. It returns those handed over.
func checkHeldJobsSent(t *testing.T, e *env, jobs []payload.Job, asks int) map[string]bool {
	t.Helper()
	handed := e.lateHandoffs()
	checkSentOnce(t, e, jobs, func(i int) string { return apnsToken(jobs[i].ID) })
	for _, j := range jobs {
		m := task.Member(j.ID, 0, 0)
		if n := e.lim.asked(m); !handed[m] && n != asks {
			t.Errorf("job %s: in %d limiter requests, want %d (its batch's booking, then its group's lookup)", j.ID, n, asks)
		}
	}
	return handed
}
