package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// twoBatchesEnv is a worker that does not run, with two batches of n
// single-recipient jobs each ("<a>-<i>" and "<b>-<i>"), for users booked
// just before under gap, alternating between the batches, so that every
// second of waking holds jobs of both. The batch tasks are returned, not
// run.
func twoBatchesEnv(t *testing.T, n int, gap time.Duration, a, b string) (e *env, ta, tb *asynq.Task, ja, jb []payload.Job) {
	t.Helper()
	e = newEnv(t, envOptions{noRun: true, gap: gap.String()})
	for i := range 2 * n {
		if _, err := e.lim.Reserve(t.Context(), fmt.Sprint("u-", i), fmt.Sprint("before/", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		ja = append(ja, alertJob(fmt.Sprint(a, "-", i), "a", apnsRecipient(fmt.Sprint("u-", 2*i), apnsToken(fmt.Sprint(a, i)))))
		jb = append(jb, alertJob(fmt.Sprint(b, "-", i), "b", apnsRecipient(fmt.Sprint("u-", 2*i+1), apnsToken(fmt.Sprint(b, i)))))
	}
	batch := func(jobs []payload.Job, seen map[string]bool) *asynq.Task {
		e.submitBatch(jobs)
		pending, err := e.insp.ListPendingTasks("normal")
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range pending {
			if ti.Type == TypeBatch && !seen[ti.ID] {
				seen[ti.ID] = true
				return asynq.NewTask(TypeBatch, ti.Payload)
			}
		}
		t.Fatalf("no new batch task in %v", pending)
		return nil
	}
	seen := map[string]bool{}
	return e, batch(ja, seen), batch(jb, seen), ja, jb
}

// latestSlot is the latest slot booked for the single-recipient jobs.
func latestSlot(t *testing.T, e *env, jobs []payload.Job) time.Time {
	t.Helper()
	var latest time.Time
	for _, j := range jobs {
		slot, ok := e.lim.slot(task.Member(j.ID, 0, 0))
		if !ok {
			t.Fatalf("job %s: no booking", j.ID)
		}
		latest = later(latest, slot)
	}
	return latest
}

// checkSentOnce checks that each job got one push, not before its slot,
// and that nothing else waits in a delivery task: but for jobs whose run
// was late for their slots on a loaded machine (lateHandoffs), which got
// none and wait in their delivery tasks. Not all of them: a run that
// misses every slot is a fault of the run, not of the machine.
func checkSentOnce(t *testing.T, e *env, jobs []payload.Job, tokenOf func(i int) string) {
	t.Helper()
	reqs := e.apns.Requests()
	handed := e.lateHandoffs()
	if len(handed) >= len(jobs) {
		t.Errorf("all %d jobs late for their slots: want the runs to send at least one at its slot", len(jobs))
	}
	for i, j := range jobs {
		got := requestsFor(reqs, tokenOf(i))
		slot, ok := e.lim.slot(task.Member(j.ID, 0, 0))
		switch {
		case handed[task.Member(j.ID, 0, 0)]:
			if len(got) != 0 {
				t.Errorf("job %s: %d pushes and a delivery task, want none and the task", j.ID, len(got))
			}
		case len(got) != 1:
			t.Errorf("job %s: %d pushes, want 1", j.ID, len(got))
		case !ok:
			t.Errorf("job %s: no booking recorded", j.ID)
		case got[0].At.Before(slot.Add(-50 * time.Millisecond)):
			t.Errorf("job %s sent at %s, before its slot %s", j.ID, got[0].At.Format(time.StampMilli), slot.Format(time.StampMilli))
		}
	}
}

// TestHeldJobsOfTwoBatchesShareTheirSecond: the held jobs of two batch
// tasks' runs that wake in the same second wait for one
// hush:waiting-second task, not one task per run; its run sends every job
// once, at its slot. A run of it that Asynq repeats after the run's work
// but before its end was recorded (its groups taken again) sends nothing
// more. The queue a process without seconds' tasks would create a group's
// own task in (its marker's) is served once it exists, by the held
// queue's weight (TestReRunWithoutSecondsTasksRunsItsGroups).
func TestHeldJobsOfTwoBatchesShareTheirSecond(t *testing.T) {
	const n, gap = 6, 3 * time.Second
	e, ta, tb, ja, jb := twoBatchesEnv(t, n, gap, "sa", "sb")
	for _, bt := range []*asynq.Task{ta, tb} {
		if err := e.w.handleBatch(t.Context(), bt); err != nil {
			t.Fatal(err)
		}
	}
	groups := e.waitingJobsTasks()
	secs := e.waitingSeconds()
	wakes := map[int64][]string{}
	for id, h := range groups {
		wakes[h.Wake] = append(wakes[h.Wake], id)
	}
	// The batches' users alternate, so a second holds groups of both, but
	// for a second split off with one user.
	if len(secs) != len(wakes) || len(groups) <= len(secs) {
		t.Fatalf("%d groups waking in %d seconds wait for %d tasks; want one task per second, shared by the batches (%v)", len(groups), len(wakes), len(secs), wakes)
	}
	if own := e.heldTasks(TypeWaitingJobs); len(own) != 0 {
		t.Errorf("%d groups in tasks of their own, want none", len(own))
	}
	all := append(slices.Clone(ja), jb...)
	var held []string
	for id, h := range groups {
		for _, c := range h.Jobs {
			held = append(held, c.Job)
			if mark := e.rdb.HGet(t.Context(), store.JobKey(c.Job), store.HeldPrefix+"0").Val(); mark != task.HeldMark(heldJoined, id) {
				t.Errorf("job %s marked %q, want held by %s in %s", c.Job, mark, id, heldJoined)
			}
		}
	}
	if len(held) != len(all) {
		t.Errorf("%d jobs held in groups, want %d", len(held), len(all))
	}
	taken := map[string]map[string]string{}
	for id, s := range secs {
		taken[id] = e.rdb.HGetAll(t.Context(), store.TogetherKeys(s.Queue, s.Wake)[0]).Val()
	}
	e.runHeldSeconds(1)
	// Asynq runs a task again when its end was not recorded: here after
	// the groups ran but before the second was marked done.
	for id, s := range secs {
		k := store.TogetherKeys(s.Queue, s.Wake)
		e.rdb.Del(t.Context(), k[1])
		e.rdb.HSet(t.Context(), k[1], taken[id])
		body, _ := json.Marshal(s)
		if err := e.w.handleWaitingSecond(t.Context(), asynq.NewTask(TypeWaitingSecond, body)); err != nil {
			t.Fatalf("run again of %s: %v", id, err)
		}
	}
	checkSentOnce(t, e, all, func(i int) string {
		if i < n {
			return apnsToken(fmt.Sprint("sa", i))
		}
		return apnsToken(fmt.Sprint("sb", i-n))
	})
	served := task.ServedHeldQueues(map[string]int{"normal": 1}, 2, []string{heldJoined, task.HeldQueueOf("normal.1") + task.TogetherSuffix, task.HeldQueueOf("other") + task.TogetherSuffix})
	for _, q := range []string{heldJoined, task.HeldQueueOf("normal.1") + task.TogetherSuffix} {
		if served[q] != 1 {
			t.Errorf("held queues served %v: want the marked queue %s, by its held queue's weight", task.SortedQueues(served), q)
		}
	}
	if q := task.HeldQueueOf("other") + task.TogetherSuffix; served[q] != 0 {
		t.Errorf("held queues served %v: %s is not a served held queue's", task.SortedQueues(served), q)
	}
}

// TestHeldSecondTakenRefusesLaterGroups: once a second's task took its
// groups, a group that joins the second (a batch run late for it) gets a
// task of its own, which sends its jobs once; a re-run of a batch whose
// group the task took adds nothing and creates nothing, and the task's
// run sends that group's jobs once.
func TestHeldSecondTakenRefusesLaterGroups(t *testing.T) {
	const n, gap = 6, 3 * time.Second
	e, ta, tb, ja, jb := twoBatchesEnv(t, n, gap, "la", "lb")
	if err := e.w.handleBatch(t.Context(), ta); err != nil {
		t.Fatal(err)
	}
	secs := e.waitingSeconds()
	if len(secs) == 0 {
		t.Fatal("no second's task after the first batch")
	}
	for _, s := range secs {
		// The task's first step, before the second batch's run ends.
		if err := store.TogetherScript.Run(t.Context(), e.rdb, store.TogetherKeys(s.Queue, s.Wake), "take", task.RecordTTL.Milliseconds()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.w.handleBatch(t.Context(), tb); err != nil {
		t.Fatal(err)
	}
	own := map[string]*asynq.TaskInfo{}
	for _, ti := range e.heldTasks(TypeWaitingJobs) {
		own[ti.ID] = ti
	}
	late := 0
	for id, h := range e.waitingJobsTasks() {
		if own[id] == nil {
			continue
		}
		late++
		var g waitingJobs
		if err := json.Unmarshal(own[id].Payload, &g); err != nil || g.Wake != h.Wake {
			t.Errorf("own task of %s: %+v, %v", id, g, err)
		}
		if !slices.ContainsFunc(g.Jobs, func(c task.Chunk) bool { return strings.HasPrefix(c.Job, "lb-") }) {
			t.Errorf("group %s of the first batch got a task of its own", id)
		}
	}
	if late == 0 {
		t.Fatalf("no group of the second batch got a task of its own (own tasks %v)", keysOf(own))
	}
	// The first batch's re-run: its groups were taken, and stay the task's.
	if err := e.w.handleBatch(t.Context(), ta); err != nil {
		t.Fatal(err)
	}
	if got := len(e.heldTasks(TypeWaitingJobs)); got != late {
		t.Errorf("%d groups in tasks of their own after the first batch's re-run, want %d", got, late)
	}
	e.runHeldSeconds(1)
	for _, id := range keysOf(own) {
		// Real time: Asynq runs a task at its NextProcessAt, and the slots
		// are on the limiter's clock (Redis TIME).
		time.Sleep(time.Until(own[id].NextProcessAt))
		if err := e.w.handleWaitingJobs(t.Context(), asynq.NewTask(TypeWaitingJobs, own[id].Payload)); err != nil {
			t.Fatal(err)
		}
	}
	checkSentOnce(t, e, append(slices.Clone(ja), jb...), func(i int) string {
		if i < n {
			return apnsToken(fmt.Sprint("la", i))
		}
		return apnsToken(fmt.Sprint("lb", i-n))
	})
}

// TestCancelWakesOneGroupOutOfItsSecond: cancelling a job held in a
// group waiting for its second's task wakes that group alone, at once, in
// a task of its own: the job ends cancelled, with its booking given back,
// and the other batch's group still waits for the second, its jobs still
// marked held by it. A waker that died after taking a group out of its
// second, before making its task, leaves it to the second's task, which
// makes the task.
func TestCancelWakesOneGroupOutOfItsSecond(t *testing.T) {
	const n = 4
	e := newEnv(t, envOptions{gap: "20s"})
	for i := range 3 * n {
		if _, err := e.lim.Reserve(t.Context(), fmt.Sprint("u-", i), fmt.Sprint("before/", i)); err != nil {
			t.Fatal(err)
		}
	}
	var batches [3][]payload.Job
	for i := range 3 * n {
		b := i % 3
		id := fmt.Sprintf("c%d-%d", b, i)
		batches[b] = append(batches[b], alertJob(id, "c", apnsRecipient(fmt.Sprint("u-", i), apnsToken(id))))
	}
	for _, jobs := range batches {
		e.submitBatch(jobs)
	}
	groupOf := func(job string) (q, id string) {
		return task.ParseHeldMark(e.rdb.HGet(t.Context(), store.JobKey(job), store.HeldPrefix+"0").Val())
	}
	// A job's marker names its group before the group joins its second
	// (the run's end adds its groups: waitingJobsGroups.finish), so wait for
	// the groups themselves in their seconds' hashes.
	waitFor(t, 10*time.Second, "every job's group waiting in its second", func() bool {
		for _, jobs := range batches {
			for _, j := range jobs {
				q, g := groupOf(j.ID)
				_, _, wake, ok := task.ParseWaitingJobsID(g)
				if q != heldJoined || !ok || !e.rdb.HExists(t.Context(), store.TogetherKeys(heldNormal, wake)[0], g).Val() {
					return false
				}
			}
		}
		return true
	})
	// A waker that died: batch 2's group out of its second, no task made.
	_, g2 := groupOf(batches[2][0].ID)
	_, _, wake2, _ := task.ParseWaitingJobsID(g2)
	if err := store.TogetherScript.Run(t.Context(), e.rdb, store.TogetherKeys(heldNormal, wake2), "pluck", task.RecordTTL.Milliseconds(), g2).Err(); err != nil {
		t.Fatal(err)
	}

	cancelled := batches[0][0].ID
	_, g0 := groupOf(cancelled)
	if _, err := e.client.Cancel(t.Context(), cancelled); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the cancelled job final", func() bool {
		st, err := e.client.Status(t.Context(), cancelled)
		return err == nil && st.Counts[task.Cancelled] == 1
	})
	if _, ok := e.lim.slot(task.Member(cancelled, 0, 0)); ok {
		t.Error("the cancelled job's booking kept")
	}
	for _, j := range batches[1] {
		q, g := groupOf(j.ID)
		_, _, wake, _ := task.ParseWaitingJobsID(g)
		if q != heldJoined || !e.rdb.HExists(t.Context(), store.TogetherKeys(heldNormal, wake)[0], g).Val() {
			t.Errorf("job %s of the other batch: marked %s %s, not waiting in its second (woken with %s?)", j.ID, q, g, g0)
		}
	}
	if got := len(requestsFor(e.apns.Requests(), apnsToken(cancelled))); got != 0 {
		t.Errorf("the cancelled job got %d pushes", got)
	}
	// The second's task, due in about 20 s, makes batch 2's group's task.
	s := waitingSecond{Queue: heldNormal, Wake: wake2}
	body, _ := json.Marshal(s)
	if _, err := e.insp.GetTaskInfo(heldNormal, g2); err == nil {
		t.Fatalf("group %s has a task before its second's task ran", g2)
	}
	// Its groups' runs would wait for their slots, 20 s on: the run is cut
	// once the group's task is there, however long making it takes.
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		_ = e.w.waitingSecondTask(ctx, asynq.NewTask(TypeWaitingSecond, body))
	}()
	defer func() { cancel(); <-ran }()
	// Under -race on a loaded machine making it has taken more than 10 s.
	waitFor(t, 30*time.Second, "woken group "+g2+"'s task, made by its second's task", func() bool {
		_, err := e.insp.GetTaskInfo(heldNormal, g2)
		return err == nil
	})
}

// TestHeldRunLateForItsSlotsHandsOver: a second's task whose run cannot
// start its calls until well after its jobs' slots (every send permit
// held, as by a provider answering slowly) makes no call: each device
// is counted in hush_late_sends_total and each job handed to its delivery
// task, which books again and sends it once.
func TestHeldRunLateForItsSlotsHandsOver(t *testing.T) {
	const n, gap = 3, 3 * time.Second
	e, ta, _, ja, _ := twoBatchesEnv(t, n, gap, "xa", "xb")
	if err := e.w.handleBatch(t.Context(), ta); err != nil {
		t.Fatal(err)
	}
	if len(e.waitingSeconds()) == 0 || len(e.scheduled(TypeDelivery)) != 0 {
		t.Fatalf("seconds' tasks %v, delivery tasks %v; want the jobs held for their seconds", keysOf(e.waitingSeconds()), keysOf(e.scheduled(TypeDelivery)))
	}
	latest := latestSlot(t, e, ja)
	// Every permit taken until well after the last slot.
	if err := e.w.sends.Acquire(t.Context(), 10); err != nil {
		t.Fatal(err)
	}
	freed := make(chan struct{})
	go func() {
		defer close(freed)
		// Real time: the slots are on the limiter's clock (Redis TIME),
		// which no injected clock moves.
		time.Sleep(time.Until(latest.Add(decide.LateRebook + 400*time.Millisecond)))
		e.w.sends.Release(10)
	}()
	e.runHeldSeconds(1)
	<-freed
	if got := len(e.apns.Requests()); got != 0 {
		t.Fatalf("%d pushes sent late for their slots, want none", got)
	}
	if got := e.lateSends(); got != n {
		t.Errorf("hush_late_sends_total %d, want %d", got, n)
	}
	handed := e.lateHandoffs()
	for _, j := range ja {
		if !handed[task.Member(j.ID, 0, 0)] {
			t.Errorf("job %s not handed to its delivery task", j.ID)
		}
	}
	for _, ti := range e.scheduled(TypeDelivery) {
		if err := e.w.handleDelivery(t.Context(), asynq.NewTask(ti.Type, ti.Payload)); err != nil {
			t.Errorf("delivery %s: %v", ti.ID, err)
		}
	}
	reqs := e.apns.Requests()
	for i, j := range ja {
		got := requestsFor(reqs, apnsToken(fmt.Sprint("xa", i)))
		slot, ok := e.lim.slot(task.Member(j.ID, 0, 0))
		switch {
		case len(got) != 1:
			t.Errorf("job %s: %d pushes after its delivery task, want 1", j.ID, len(got))
		case !ok || !slot.After(latest):
			t.Errorf("job %s: booked at %v (%v), want a new slot after the missed ones", j.ID, slot, ok)
		case got[0].At.Before(slot.Add(-50 * time.Millisecond)):
			t.Errorf("job %s sent at %s, before its new slot %s", j.ID, got[0].At.Format(time.StampMilli), slot.Format(time.StampMilli))
		}
		if st, err := e.client.Status(t.Context(), j.ID); err != nil || st.Counts[task.Delivered] != 1 {
			t.Errorf("job %s: status %+v, %v; want 1 delivered", j.ID, st, err)
		}
	}
}
