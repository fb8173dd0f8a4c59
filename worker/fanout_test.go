package worker

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

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
	return asynq.NewTask(payload.TypeJob, b)
}

// TestFanOutIsIdempotent runs the job handler again after a complete and
// after an interrupted fan-out: no recipient gets a second delivery task.
func TestFanOutIsIdempotent(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	const n = 250 // more than one cursor batch
	var rs []payload.Recipient
	for i := range n {
		rs = append(rs, apnsRecipient(fmt.Sprintf("u-%d", i), apnsToken(fmt.Sprint(i))))
	}
	task := jobTask(t, alertJob("fan", "f", rs...))
	pending := func() int {
		info, err := e.insp.GetQueueInfo("normal")
		if err != nil {
			t.Fatal(err)
		}
		return info.Pending
	}

	if err := e.w.handleJob(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	if got := pending(); got != n {
		t.Fatalf("%d delivery tasks after fan-out, want %d", got, n)
	}
	// A re-run after a crash that lost the cursor.
	if err := e.rdb.HDel(t.Context(), jobKey("fan"), "cursor").Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.w.handleJob(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	if got := pending(); got != n {
		t.Errorf("%d delivery tasks after a re-run, want still %d", got, n)
	}

	// Recipients already settled are skipped even when their task is gone.
	if _, err := e.w.store.finalize(t.Context(), "fan", 7, stateDelivered, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := e.insp.DeleteTask("normal", "fan/7"); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.HDel(t.Context(), jobKey("fan"), "cursor").Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.w.handleJob(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	if got := pending(); got != n-1 {
		t.Errorf("%d delivery tasks, want %d (the settled recipient is not fanned out again)", got, n-1)
	}
	st, err := e.client.Status(t.Context(), "fan")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != jobFannedOut || st.Recipients != n {
		t.Errorf("status %+v, want fanned_out with %d recipients", st, n)
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
