package worker

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
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
	jt := jobTask(t, job)
	// An earlier run booked recipient 5 and died before sending.
	if _, err := e.lim.Reserve(t.Context(), "u-5", "fan/5"); err != nil {
		t.Fatal(err)
	}

	if err := e.w.handleJob(t.Context(), jt); err != nil {
		t.Fatal(err)
	}
	wantTasks := []string{"chunk:fan/1", "chunk:fan/2", "delivery:fan/5"}
	if diff := cmp.Diff(wantTasks, e.pending()); diff != "" {
		t.Fatalf("pending tasks after the job task (-want +got):\n%s", diff)
	}
	if got := len(e.apns.Requests()); got != task.ChunkSize-1 {
		t.Errorf("the job task sent %d pushes, want %d (its chunk but the recipient booked before)", got, task.ChunkSize-1)
	}
	// A re-run after a crash that lost the cursor.
	if err := e.rdb.HDel(t.Context(), store.JobKey("fan"), "cursor").Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.w.handleJob(t.Context(), jt); err != nil {
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
			if ti.Type != TypeGroupingChunk {
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
	if st.State != store.JobFannedOut || st.Counts[task.Delivered] != n-1 || st.Counts["pending"] != 1 {
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
	jt := jobTask(t, job)
	for run := range 2 {
		if err := e.w.handleJob(t.Context(), jt); err != nil {
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
		ID: "again", App: DefaultApp, State: store.JobFannedOut, Queue: "normal", AcceptedAt: rec.AcceptedAt, Recipients: n,
		Counts: map[string]int{task.Delivered: n - 1, task.Expired: 0, task.TokenInvalid: 0, task.Failed: 0, task.ThrottleFull: 0, task.Collapsed: 0, task.Cancelled: 0, task.OptedOut: 0, "pending": 1},
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
	if err := e.rdb.HIncrBy(t.Context(), store.JobKey("lost"), "deferrals", 1).Err(); err != nil {
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
	want := JobStatus{ID: "lost", State: jobDone, Outcome: OutcomeDelivered, Queue: "normal", AcceptedAt: job.AcceptedAt, Recipients: 1,
		Deadline: job.Deadline(), Deferrals: 1, Counts: map[string]int{"pending": 0}}
	for _, f := range task.FinalStates() {
		want.Counts[f] = 0
	}
	want.Counts[task.Delivered] = 1
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("job status (-want +got):\n%s", diff)
	}
	if got := len(e.apns.Requests()); got != 1 {
		t.Errorf("%d pushes, want 1", got)
	}
}

// TestChunkRerunsReadWhatWasSent: chunk tasks run again with the users'
// bookings gone (the rule windows passed), so that only the recorded
// states keep a push from going out twice. First the same hush:marked-chunk
// task again, as after a crash right before Asynq heard it was done: the
// mark its first run left makes it read. Then a chunk run by an earlier
// version (no mark), whose job task runs again after losing its cursor:
// the re-run makes a hush:chunk task, which reads always. A hush:marked-chunk
// task there would take its first run for the chunk's first and send its
// 50 pushes again; so would the first case without the mark's read.
func TestChunkRerunsReadWhatWasSent(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	const n = 150 // two chunks
	job := fanJob("old", n)
	e.submit(job)
	jt := jobTask(t, job)
	// Recipient 5 was booked before (it goes to a delivery task that does
	// not run here), so that the job stays unfinished, its records kept.
	if _, err := e.lim.Reserve(t.Context(), "u-5", "old/5"); err != nil {
		t.Fatal(err)
	}
	if err := e.w.handleJob(t.Context(), jt); err != nil {
		t.Fatal(err)
	}
	tasks := e.chunkTasks()
	if len(tasks) != 1 || tasks[0].Type != TypeGroupingChunk {
		t.Fatalf("the job's first run made %v, want one %s task", tasks, TypeGroupingChunk)
	}
	if err := e.w.handleChunk(t.Context(), asynq.NewTask(tasks[0].Type, tasks[0].Payload)); err != nil {
		t.Fatal(err)
	}
	if got := len(e.apns.Requests()); got != n-1 {
		t.Fatalf("%d pushes after the first runs, want %d", got, n-1)
	}
	resetBookings := func() {
		for i := range n {
			if err := e.lim.Reset(t.Context(), fmt.Sprintf("u-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	resetBookings()
	if err := e.w.handleChunk(t.Context(), asynq.NewTask(tasks[0].Type, tasks[0].Payload)); err != nil {
		t.Fatal(err)
	}
	if got := len(e.apns.Requests()); got != n-1 {
		t.Fatalf("%d pushes after the chunk task ran again, want %d", got, n-1)
	}
	// As if a process that does not mark chunks had run it: no mark; and the task
	// done, the cursor lost, the bookings gone.
	if err := e.insp.DeleteTask("normal", tasks[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.HDel(t.Context(), store.JobKey("old"), "s:100", "cursor").Err(); err != nil {
		t.Fatal(err)
	}
	resetBookings()

	if err := e.w.handleJob(t.Context(), jt); err != nil {
		t.Fatal(err)
	}
	tasks = e.chunkTasks()
	if len(tasks) != 1 || tasks[0].Type != task.TypeRereadingChunk {
		t.Fatalf("the job's re-run made %v, want one %s task", tasks, task.TypeRereadingChunk)
	}
	if err := e.w.handleChunk(t.Context(), asynq.NewTask(tasks[0].Type, tasks[0].Payload)); err != nil {
		t.Fatal(err)
	}
	reqs := e.apns.Requests()
	for i := range n {
		if got := len(requestsFor(reqs, apnsToken(fmt.Sprint("old", i)))); got > 1 {
			t.Errorf("recipient %d got %d pushes", i, got)
		}
	}
	want := []string{"chunk:old/1", "delivery:old/5", "job:old"}
	if diff := cmp.Diff(want, e.pending()); diff != "" {
		t.Errorf("pending tasks after the re-runs (-want +got):\n%s", diff)
	}
}

// chunkTasks are the pending chunk tasks on the normal queue.
func (e *env) chunkTasks() []*asynq.TaskInfo {
	e.t.Helper()
	tasks, err := e.insp.ListPendingTasks("normal", asynq.PageSize(1000))
	if err != nil {
		e.t.Fatal(err)
	}
	return slices.DeleteFunc(tasks, func(ti *asynq.TaskInfo) bool {
		return !slices.Contains([]string{TypeGroupingChunk, task.TypeRereadingChunk, typeMarkedChunk, typeChunk}, ti.Type)
	})
}

// TestEarlierChunkTasksStillRun: a hush:chunk or hush:marked-chunk task
// left queued during a rolling upgrade is run by a running worker (through its
// task server), and sends its chunk once.
func TestEarlierChunkTasksStillRun(t *testing.T) {
	for _, typ := range []string{typeChunk, typeMarkedChunk} {
		t.Run(typ, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			const n = 150
			job := fanJob("left", n)
			job.AcceptedAt = time.Now()
			// The job's record as its client wrote it; its job task is not
			// queued here, the chunk task alone runs.
			if _, err := e.w.store.create(t.Context(), recordOf(&job, "normal"), store.JobQueued); err != nil {
				t.Fatal(err)
			}
			c := task.ChunkOf(&job, task.ChunkSize)
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.w.client.aq.Enqueue(asynq.NewTask(typ, b), asynq.TaskID(c.Name()), asynq.Queue("normal")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "the chunk's 50 pushes", func() bool { return len(e.apns.Requests()) >= n-task.ChunkSize })
			e.waitQuiet(10 * time.Second) // a second run of the chunk would have sent again
			if got := len(e.apns.Requests()); got != n-task.ChunkSize {
				t.Errorf("%d pushes, want %d", got, n-task.ChunkSize)
			}
		})
	}
}

// TestTaskTypesArePrefixFree: no task type starts with another, since
// Asynq's ServeMux matches by prefix, and a process of a version that
// registers only the shorter one would run the longer one's tasks as its
// own.
func TestTaskTypesArePrefixFree(t *testing.T) {
	types := []string{TypeJob, TypeBatch, TypeGroupingChunk, task.TypeRereadingChunk, typeMarkedChunk, typeChunk, TypeDelivery, TypeHeld, TypeWaitingJobs, TypeWaitingSecond}
	for _, a := range types {
		for _, b := range types {
			if a != b && strings.HasPrefix(b, a) {
				t.Errorf("task type %q starts with %q: a process handling only %q would take its tasks", b, a, a)
			}
		}
	}
}
