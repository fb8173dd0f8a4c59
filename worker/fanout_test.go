package worker

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/payload"
)

func jobTask(t *testing.T, job payload.Job) *asynq.Task {
	t.Helper()
	if job.AcceptedAt.IsZero() {
		job.AcceptedAt = time.Now()
	}
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	return asynq.NewTask(TypeJob, b)
}

// pending returns the ids of the pending tasks of the normal queue.
func (e *env) pending() []string {
	e.t.Helper()
	tasks, err := e.insp.ListPendingTasks("normal", asynq.PageSize(1000))
	if err != nil {
		e.t.Fatal(err)
	}
	var ids []string
	for _, ti := range tasks {
		ids = append(ids, ti.ID)
	}
	slices.Sort(ids)
	return ids
}

func fanJob(id string, n int) payload.Job {
	var rs []payload.Recipient
	for i := range n {
		rs = append(rs, apnsRecipient(fmt.Sprintf("u-%d", i), apnsToken(fmt.Sprint(id, i))))
	}
	return alertJob(id, "f", rs...)
}

// TestChunkedFanOutIsIdempotent runs the job handler and the chunk tasks
// twice, the second time after the cursor was lost: the job task delivers
// the first chunk itself, creates one task per further chunk, a recipient
// booked by an earlier run goes to its own delivery task, and every device
// gets exactly one push.
func TestChunkedFanOutIsIdempotent(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	const n = 250 // three chunks
	job := fanJob("fan", n)
	task := jobTask(t, job)
	// An earlier run booked recipient 5 and died before sending.
	if _, err := e.lim.Reserve(t.Context(), "u-5", "fan/5"); err != nil {
		t.Fatal(err)
	}

	if err := e.w.handleJob(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	wantTasks := []string{"chunk:fan/1", "chunk:fan/2", "delivery:fan/5"}
	if diff := cmp.Diff(wantTasks, e.pending()); diff != "" {
		t.Fatalf("pending tasks after the job task (-want +got):\n%s", diff)
	}
	if got := len(e.apns.Requests()); got != chunkSize-1 {
		t.Errorf("the job task sent %d pushes, want %d (its chunk but the recipient booked before)", got, chunkSize-1)
	}
	// A re-run after a crash that lost the cursor.
	if err := e.rdb.HDel(t.Context(), jobKey("fan"), "cursor").Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.w.handleJob(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantTasks, e.pending()); diff != "" {
		t.Errorf("pending tasks after a re-run (-want +got):\n%s", diff)
	}

	tasks, err := e.insp.ListPendingTasks("normal")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		for _, ti := range tasks {
			if ti.Type != TypeChunk {
				continue
			}
			if err := e.w.handleChunk(t.Context(), asynq.NewTask(ti.Type, ti.Payload)); err != nil {
				t.Fatalf("chunk %s: %v", ti.ID, err)
			}
		}
	}
	reqs := e.apns.Requests()
	if len(reqs) != n-1 {
		t.Errorf("%d pushes, want %d", len(reqs), n-1)
	}
	for i := range n {
		tok := apnsToken(fmt.Sprint("fan", i))
		want := 1
		if i == 5 {
			want = 0 // left to its delivery task
		}
		if got := len(requestsFor(reqs, tok)); got != want {
			t.Errorf("recipient %d got %d pushes, want %d", i, got, want)
		}
	}
	st, err := e.client.Status(t.Context(), "fan")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != jobFannedOut || st.Counts[stateDelivered] != n-1 || st.Counts["pending"] != 1 {
		t.Errorf("status %+v, want fanned_out with %d delivered and 1 pending", st, n-1)
	}
}

// TestDuplicateOnAnotherQueueIsIgnored: the same id submitted at once with
// two priorities lands in two queues (Asynq task ids are per queue); the job
// record decides which one is the job.
func TestDuplicateOnAnotherQueueIsIgnored(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	job := alertJob("twice", "t", apnsRecipient("u-1", apnsToken("twice")))
	e.submit(job)
	job.Priority = payload.PriorityHigh
	if err := e.w.handleJob(t.Context(), jobTask(t, job)); err != nil {
		t.Fatal(err)
	}
	info, err := e.insp.GetQueueInfo("normal")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.insp.GetQueueInfo("high"); err == nil {
		t.Errorf("the duplicate on the high queue created deliveries")
	}
	if info.Pending != 1 {
		t.Errorf("normal queue holds %d tasks, want only the first submission's job task", info.Pending)
	}
}

// TestJobTaskRerunKeepsTheClientsRecord: a job the client accepted (its
// record written) runs twice, as after a crash right before Asynq heard the
// task was done: start.lua keeps the accepted record's fields, the second
// run sends nothing, counts nothing twice and the job reads done; a chunk
// gives back every send permit it took, for recipients sent, held back
// and already settled alike. (The job task itself stays pending: Asynq
// never ran it.)
func TestJobTaskRerunKeepsTheClientsRecord(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	const n = 30 // more than one wave
	job := fanJob("again", n)
	e.submit(job) // the client stamps accepted_at
	rec, err := e.client.Status(t.Context(), "again")
	if err != nil {
		t.Fatal(err)
	}
	// The task's copy differs: the record must keep the client's.
	job.AcceptedAt = rec.AcceptedAt.Add(-time.Minute)
	// Booked by an earlier run: left to its delivery task.
	if _, err := e.lim.Reserve(t.Context(), "u-3", "again/3"); err != nil {
		t.Fatal(err)
	}
	task := jobTask(t, job)
	for run := range 2 {
		if err := e.w.handleJob(t.Context(), task); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if !e.w.sends.TryAcquire(int64(e.w.conc)) {
			t.Fatalf("run %d: the chunk kept send permits", run)
		}
		e.w.sends.Release(int64(e.w.conc))
	}
	reqs := e.apns.Requests()
	if len(reqs) != n-1 {
		t.Errorf("%d pushes, want %d (each recipient once, but the one booked before)", len(reqs), n-1)
	}
	for i := range n {
		want := 1
		if i == 3 {
			want = 0
		}
		if got := len(requestsFor(reqs, apnsToken(fmt.Sprint("again", i)))); got != want {
			t.Errorf("recipient %d got %d pushes, want %d", i, got, want)
		}
	}
	st, err := e.client.Status(t.Context(), "again")
	if err != nil {
		t.Fatal(err)
	}
	want := JobStatus{
		ID: "again", State: jobFannedOut, Queue: "normal", AcceptedAt: rec.AcceptedAt, Recipients: n,
		Counts: map[string]int{stateDelivered: n - 1, stateExpired: 0, stateTokenInvalid: 0, stateFailed: 0, stateThrottleFull: 0, stateCollapsed: 0, stateCancelled: 0, "pending": 1},
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"delivery:again/3", "job:again"}, e.pending()); diff != "" {
		t.Errorf("pending tasks (-want +got):\n%s", diff)
	}
}

// TestJobTaskWritesAMissingRecord: when the client's record write was lost
// (or the task came from elsewhere), the job task writes the record's fixed
// fields itself (and they outlive the job's retirement), and a later run
// keeps the first run's fields.
func TestJobTaskWritesAMissingRecord(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	job := alertJob("lost", "l", apnsRecipient("u-1", apnsToken("lost")))
	job.AcceptedAt = time.Now().UTC().Truncate(time.Second)
	job.TTL = payload.Duration(time.Hour)
	// A counter written before the record (the hash exists without queue).
	if err := e.rdb.HIncrBy(t.Context(), jobKey("lost"), "deferrals", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.w.handleJob(t.Context(), jobTask(t, job)); err != nil {
		t.Fatal(err)
	}
	later := job
	later.AcceptedAt = job.AcceptedAt.Add(time.Hour)
	if err := e.w.handleJob(t.Context(), jobTask(t, later)); err != nil {
		t.Fatal(err)
	}
	// The job finished at the first run: its status is what the record
	// held when it retired.
	got, err := e.client.Status(t.Context(), "lost")
	if err != nil {
		t.Fatal(err)
	}
	want := JobStatus{ID: "lost", State: jobDone, Queue: "normal", AcceptedAt: job.AcceptedAt, Recipients: 1,
		Deadline: job.Deadline(), Deferrals: 1, Counts: map[string]int{"pending": 0}}
	for _, f := range finalStates {
		want.Counts[f] = 0
	}
	want.Counts[stateDelivered] = 1
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("job status (-want +got):\n%s", diff)
	}
	if got := len(e.apns.Requests()); got != 1 {
		t.Errorf("%d pushes, want 1", got)
	}
}
