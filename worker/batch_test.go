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

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// submitBatch enqueues jobs with EnqueueBatch and fails the test unless
// every one is accepted (not a duplicate).
func (e *env) submitBatch(jobs []payload.Job) []BatchResult {
	e.t.Helper()
	res, err := e.client.EnqueueBatch(e.t.Context(), jobs)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil || r.Duplicate {
			e.t.Fatalf("%+v, want accepted", r)
		}
	}
	return res
}

// A batch of every kind of job: each is answered on its own, due jobs of
// one priority share a task per batchJobs, a scheduled job has its own
// task, and every device gets its push exactly once. The same batch sent
// again (a client that lost the answer) is all duplicates.
func TestBatchDeliversEachJobOnce(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true, limits: "1000/1m"})
	var jobs []payload.Job
	var tokens []string
	add := func(j payload.Job) {
		jobs = append(jobs, j)
		for _, r := range j.Recipients {
			for _, d := range r.Devices {
				tokens = append(tokens, d.Token)
			}
		}
	}
	const normal = 230
	for i := range normal {
		add(alertJob(fmt.Sprintf("b/%d", i), "n", apnsRecipient(fmt.Sprintf("u-%d", i), apnsToken(fmt.Sprintf("n-%d", i)))))
	}
	for i := range 3 {
		j := alertJob(fmt.Sprintf("b-high-%d", i), "h", apnsRecipient(fmt.Sprintf("h-%d", i), apnsToken(fmt.Sprintf("h-%d", i))))
		j.Priority = payload.PriorityHigh
		add(j)
	}
	at := time.Now().Add(3 * time.Second)
	later := alertJob("b-later", "l", apnsRecipient("u-later", apnsToken("later")))
	later.SendAt = &at
	add(later)
	add(alertJob("b-three", "3", apnsRecipient("t-0", apnsToken("t-0")), apnsRecipient("t-1", apnsToken("t-1")),
		apnsRecipient("t-2", apnsToken("t-2"), apnsToken("t-2b"))))
	add(alertJob("", "no id", apnsRecipient("u-gen", apnsToken("generated"))))
	jobs = append(jobs, alertJob("b/0", "again", apnsRecipient("u-0", apnsToken("n-0")))) // its id earlier in the batch
	jobs = append(jobs, alertJob("b-bad", "bad", payload.Recipient{UserID: "u-bad", Devices: []payload.Device{{Platform: payload.APNs, Token: "zz"}}}))

	res, err := e.client.EnqueueBatch(t.Context(), jobs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(jobs) {
		t.Fatalf("%d answers for %d jobs", len(res), len(jobs))
	}
	var ids []string
	for i, r := range res[:len(res)-2] {
		if r.Err != nil || r.Duplicate || r.ID == "" || (jobs[i].ID != "" && r.ID != jobs[i].ID) {
			t.Errorf("job %d (%q): %+v, want accepted under its id", i, jobs[i].ID, r)
		}
		ids = append(ids, r.ID)
	}
	if r := res[len(res)-2]; r.Err != nil || !r.Duplicate || r.ID != "b/0" {
		t.Errorf("the id repeated in the batch: %+v, want a duplicate of b/0", r)
	}
	var invalid *payload.ValidationError
	if r := res[len(res)-1]; !errors.As(r.Err, &invalid) || r.ID != "" || invalid.Problems[0].Field != "recipients[0].devices[0].token" {
		t.Errorf("the invalid job: %+v, want its token's problem and no id", r)
	}

	// Tasks: ceil(230/100) batches on normal (and the 3-recipient job and
	// the generated one with them: 232 jobs, 3 tasks), one on high, and
	// the scheduled job's own.
	count := func(queue string) map[string]int {
		n := map[string]int{}
		pending, _ := e.insp.ListPendingTasks(queue, asynq.PageSize(1000))
		scheduled, _ := e.insp.ListScheduledTasks(queue, asynq.PageSize(1000))
		for _, tk := range append(pending, scheduled...) {
			n[tk.Type]++
		}
		return n
	}
	if got := count("normal"); !cmp.Equal(got, map[string]int{TypeBatch: 3, TypeJob: 1}) {
		t.Errorf("normal's tasks %v, want 3 batches and the scheduled job", got)
	}
	if got := count("high"); !cmp.Equal(got, map[string]int{TypeBatch: 1}) {
		t.Errorf("high's tasks %v, want 1 batch", got)
	}
	if st, err := e.client.Status(t.Context(), "b/7"); err != nil || st.State != store.JobQueued || st.Queue != "normal" {
		t.Errorf("status of a batched job before it runs: %+v, %v; want queued on normal", st, err)
	}

	e.start()
	t.Cleanup(e.shutdown)
	for _, id := range ids {
		st := e.waitDone(id, 30*time.Second)
		if st.Counts[task.Delivered] != st.Recipients {
			t.Errorf("job %s: %v, want every recipient delivered", id, st.Counts)
		}
	}
	reqs := e.apns.Requests()
	for _, tok := range tokens {
		if n := len(requestsFor(reqs, tok)); n != 1 {
			t.Errorf("token %s…: %d pushes, want 1", tok[:8], n)
		}
	}
	if len(reqs) != len(tokens) {
		t.Errorf("%d pushes, want %d", len(reqs), len(tokens))
	}

	// Sent again with the ids answered (the scheduled job left out: its
	// send_at is past now, which validation refuses).
	var resend []payload.Job
	for i, j := range jobs[:len(jobs)-1] {
		if j.ID != "b-later" {
			j.ID = res[i].ID
			resend = append(resend, j)
		}
	}
	again, err := e.client.EnqueueBatch(t.Context(), resend)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again {
		if r.Err != nil || !r.Duplicate {
			t.Errorf("job %d (%q) sent again: %+v, want a duplicate", i, resend[i].ID, r)
		}
	}
	e.waitQuiet(10 * time.Second) // anything enqueued by mistake has run
	if n := len(e.apns.Requests()); n != len(tokens) {
		t.Errorf("%d pushes after the batch was sent again, want still %d", n, len(tokens))
	}
}

// Two batches carrying the same jobs, and a job task for one of them,
// race with no records written (clients that died before writing them and
// submitted again): each job runs in the one task that claims its record,
// so each device gets its push once, even with a slow provider keeping the
// first run in flight while the others start.
func TestBatchJobRunsInOneTaskOnly(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true, concurrency: 20})
	const n = 20
	var jobs []payload.Job
	for i := range n {
		tok := apnsToken(fmt.Sprintf("race-%d", i))
		e.apns.Script(tok, fake.OK().WithLatency(300*time.Millisecond))
		j := alertJob(fmt.Sprintf("race-%d", i), "r", apnsRecipient(fmt.Sprintf("u-r%d", i), tok))
		j.AcceptedAt = time.Now().Truncate(time.Millisecond)
		jobs = append(jobs, j)
	}
	enqueue := func(typ, id string, payload any) {
		t.Helper()
		b, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.client.aq.Enqueue(asynq.NewTask(typ, b), asynq.TaskID(id), asynq.Queue("normal")); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(TypeBatch, task.BatchID("first"), batch{ID: "first", Jobs: jobs})
	enqueue(TypeBatch, task.BatchID("second"), batch{ID: "second", Jobs: jobs})
	enqueue(TypeJob, task.JobID(jobs[3].ID), jobs[3])
	e.start()
	t.Cleanup(e.shutdown)
	for _, j := range jobs {
		e.waitDone(j.ID, 30*time.Second)
	}
	waitFor(t, 10*time.Second, "every task finished", func() bool {
		q, err := e.insp.GetQueueInfo("normal")
		return err == nil && q.Size == 0
	})
	reqs := e.apns.Requests()
	for _, j := range jobs {
		tok := j.Recipients[0].Devices[0].Token
		if got := len(requestsFor(reqs, tok)); got != 1 {
			t.Errorf("job %s: %d pushes, want 1", j.ID, got)
		}
	}
}

// A batch task run again after it finished (a re-run after a crash that
// lost its completion) sends nothing again.
func TestBatchRerunSendsNothingAgain(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	var jobs []payload.Job
	for i := range 5 {
		jobs = append(jobs, alertJob(fmt.Sprintf("rerun-%d", i), "r", apnsRecipient(fmt.Sprintf("u-rr%d", i), apnsToken(fmt.Sprintf("rerun-%d", i)))))
	}
	e.submitBatch(jobs)
	pending, err := e.insp.ListPendingTasks("normal")
	if err != nil || len(pending) != 1 || pending[0].Type != TypeBatch {
		t.Fatalf("pending tasks %v, %v: want the one batch", pending, err)
	}
	task := pending[0]
	e.start()
	t.Cleanup(e.shutdown)
	for _, j := range jobs {
		e.waitDone(j.ID, 20*time.Second)
	}
	if n := len(e.apns.Requests()); n != len(jobs) {
		t.Fatalf("%d pushes, want %d", n, len(jobs))
	}
	waitFor(t, 10*time.Second, "the batch task gone", func() bool {
		_, err := e.insp.GetTaskInfo("normal", task.ID)
		return errors.Is(err, asynq.ErrTaskNotFound)
	})
	if _, err := e.client.aq.Enqueue(asynq.NewTask(TypeBatch, task.Payload), asynq.TaskID(task.ID), asynq.Queue("normal")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the re-run finished", func() bool {
		_, err := e.insp.GetTaskInfo("normal", task.ID)
		return errors.Is(err, asynq.ErrTaskNotFound)
	})
	e.waitQuiet(10 * time.Second) // any task the re-run made by mistake has run
	if n := len(e.apns.Requests()); n != len(jobs) {
		t.Errorf("%d pushes after the re-run, want still %d", n, len(jobs))
	}
}

// Batches submitted side by side from many goroutines, with ids shared
// between them: every id is accepted exactly once across all answers and
// its device gets one push, whether the worker runs meanwhile (a job can
// then finish before another batch's write of its id, in the same
// millisecond: the task tag in its done entry tells the batches apart,
// finishedBy) or starts once the batches are written.
func TestConcurrentBatchesAcceptEachIDOnce(t *testing.T) {
	for _, running := range []bool{true, false} {
		t.Run(fmt.Sprintf("running=%v", running), func(t *testing.T) {
			concurrentBatches(t, running)
		})
	}
}

func concurrentBatches(t *testing.T, running bool) {
	e := newEnv(t, envOptions{limits: "1000/1m", concurrency: 20, noRun: !running})
	const ids, clients = 150, 6
	var mu sync.Mutex
	accepted := map[string]int{}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			var jobs []payload.Job
			for i := range ids {
				k := (i*7 + c*31) % ids // each client its own order
				jobs = append(jobs, alertJob(fmt.Sprintf("shared-%d", k), "s", apnsRecipient(fmt.Sprintf("u-s%d", k), apnsToken(fmt.Sprintf("shared-%d", k)))))
			}
			res, err := e.client.EnqueueBatch(context.Background(), jobs)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range res {
				if r.Err != nil {
					t.Error(r.Err)
				} else if !r.Duplicate {
					accepted[r.ID]++
				}
			}
		})
	}
	wg.Wait()
	if !running {
		e.start()
		t.Cleanup(e.shutdown)
	}
	for k := range ids {
		id := fmt.Sprintf("shared-%d", k)
		if accepted[id] != 1 {
			t.Errorf("%s accepted %d times, want 1", id, accepted[id])
		}
		e.waitDone(id, 30*time.Second)
	}
	waitFor(t, 10*time.Second, "every task finished", func() bool {
		q, err := e.insp.GetQueueInfo("normal")
		return err == nil && q.Size == 0
	})
	reqs := e.apns.Requests()
	for k := range ids {
		if n := len(requestsFor(reqs, apnsToken(fmt.Sprintf("shared-%d", k)))); n != 1 {
			t.Errorf("shared-%d: %d pushes, want 1", k, n)
		}
	}
}

// A flood for one user inside one batch: the jobs are booked together
// (one batched reservation), in order, and the pushes still keep the
// minimum gap and the cap.
func TestBatchFloodForOneUserKeepsTheRules(t *testing.T) {
	e := newEnv(t, envOptions{limits: "4/1m", gap: "400ms"})
	const n = 8
	var jobs []payload.Job
	for i := range n {
		jobs = append(jobs, alertJob(fmt.Sprintf("flood-%d", i), "f", apnsRecipient("u-flood", apnsToken(fmt.Sprintf("flood-%d", i)))))
	}
	res := e.submitBatch(jobs)
	waitFor(t, 10*time.Second, "4 pushes", func() bool { return len(e.apns.Requests()) >= 4 })
	// Every job booked: a fifth push inside the minute would be a fifth
	// booking there, so any five consecutive slots span the window.
	var slots []time.Time
	waitFor(t, 10*time.Second, "every job booked", func() bool {
		slots = slots[:0]
		for _, r := range res {
			if at, ok := e.lim.slot(task.Member(r.ID, 0, 0)); ok {
				slots = append(slots, at)
			}
		}
		return len(slots) == n
	})
	slices.SortFunc(slots, time.Time.Compare)
	for i := 4; i < n; i++ {
		if span := slots[i].Sub(slots[i-4]); span < time.Minute {
			t.Errorf("bookings %d to %d within %s, want the cap of 4 a minute", i-4, i, span)
		}
	}
	reqs := e.apns.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d pushes within the minute, want the cap of 4", len(reqs))
	}
	for i := 1; i < len(reqs); i++ {
		if gap := reqs[i].At.Sub(reqs[i-1].At); gap < 400*time.Millisecond-250*time.Millisecond {
			t.Errorf("pushes %d and %d %s apart, want at least the 400ms gap (250ms tolerance)", i-1, i, gap)
		}
	}
	held := 0
	waitFor(t, 10*time.Second, "the 4 pushes recorded delivered", func() bool {
		delivered := 0
		held = 0
		for _, r := range res {
			st, err := e.client.Status(t.Context(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			delivered += st.Counts[task.Delivered]
			held += st.Counts["pending"]
		}
		return delivered == 4
	})
	if held != n-4 {
		t.Errorf("%d deliveries still held, want %d (deferred, not dropped)", held, n-4)
	}
}

// Jobs submitted one by one from many goroutines at once are gathered:
// those arriving during a write share the next one's batch task, each
// caller gets its own job's answer, every id is accepted once, and every
// device gets its push once. A lone submission still has a task of its
// own.
func TestEnqueueGathersConcurrentSubmissions(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true, limits: "1000/1m"})
	lone := e.submit(alertJob("lone", "l", apnsRecipient("u-lone", apnsToken("lone"))))
	if _, err := e.insp.GetTaskInfo("normal", task.JobID(lone)); err != nil {
		t.Errorf("a lone submission's own task: %v", err)
	}
	const n, callers = 400, 40
	answers := make([]Accepted, n)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := c; i < n; i += callers {
				id := fmt.Sprintf("gather-%d", i%(n/2)) // every id twice
				acc, err := e.client.Enqueue(context.Background(), alertJob(id, "g", apnsRecipient("u-"+id, apnsToken(id))))
				if err != nil {
					t.Error(err)
				}
				answers[i] = acc
			}
		})
	}
	wg.Wait()
	accepted := map[string]int{}
	for _, a := range answers {
		if !a.Duplicate {
			accepted[a.ID]++
		}
	}
	for i := range n / 2 {
		if id := fmt.Sprintf("gather-%d", i); accepted[id] != 1 {
			t.Errorf("%s accepted %d times, want 1", id, accepted[id])
		}
	}
	pending, err := e.insp.ListPendingTasks("normal", asynq.PageSize(1000))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	for _, tk := range pending {
		types[tk.Type]++
	}
	t.Logf("%d submissions of %d ids from %d goroutines: tasks %v", n, n/2, callers, types)
	if types[TypeBatch] == 0 || len(pending) >= n/2 {
		t.Errorf("tasks %v for %d jobs: want them gathered into batches", types, n/2+1)
	}
	// hush_submit_task_jobs saw each task written, and each new job once.
	var h dto.Metric
	if err := e.w.m.taskJobs.Write(&h); err != nil {
		t.Fatal(err)
	}
	if c, s := h.GetHistogram().GetSampleCount(), h.GetHistogram().GetSampleSum(); int(c) != len(pending) || int(s) != n/2+1 {
		t.Errorf("hush_submit_task_jobs: %d tasks, %.0f jobs; want %d and %d", c, s, len(pending), n/2+1)
	}
	e.start()
	t.Cleanup(e.shutdown)
	for i := range n / 2 {
		e.waitDone(fmt.Sprintf("gather-%d", i), 30*time.Second)
	}
	e.waitDone(lone, 10*time.Second)
	reqs := e.apns.Requests()
	for i := range n / 2 {
		id := fmt.Sprintf("gather-%d", i)
		if got := len(requestsFor(reqs, apnsToken(id))); got != 1 {
			t.Errorf("%s: %d pushes, want 1", id, got)
		}
	}
}

// A write that follows one of answered jobs waits (up to gatherLinger)
// for as many more jobs as it answered: a caller submitting one job after
// another, answered by one write, is carried by the next instead of
// missing it. Write 1 carries x's first job alone while y1 to y3 wait;
// once it answers, x submits again (20 ms later) and write 2 carries y1
// to y3 and x's second job. When x does not come back, write 2 goes when the
// linger ends, without it.
func TestGatheringWaitsForTheCallersItAnswered(t *testing.T) {
	for _, comesBack := range []bool{true, false} {
		t.Run(fmt.Sprintf("comes-back=%v", comesBack), func(t *testing.T) {
			e := newEnv(t, envOptions{noRun: true})
			c := e.client
			c.gathering = c.newGathering(3 * time.Second) // ended by x's return, or below
			if !comesBack {
				c.gathering = c.newGathering(50 * time.Millisecond)
			}
			entered, release := blockFirstWrite(c)
			job := func(id string) payload.Job { return alertJob(id, "g", apnsRecipient("u-"+id, apnsToken(id))) }
			var wg sync.WaitGroup
			second := make(chan error, 1)
			wg.Go(func() {
				if _, err := c.Enqueue(context.Background(), job("x1")); err != nil {
					t.Error(err)
				}
				if comesBack {
					// Some work between two submissions, in real time:
					// a write that waited only for the callers already
					// there would have gone without x2 by then.
					time.Sleep(20 * time.Millisecond)
					_, err := c.Enqueue(context.Background(), job("x2"))
					second <- err
				}
			})
			<-entered // write 1 (x1 alone) is under way
			for _, id := range []string{"y1", "y2", "y3"} {
				wg.Go(func() {
					if _, err := c.Enqueue(context.Background(), job(id)); err != nil {
						t.Error(err)
					}
				})
			}
			waitFor(t, 10*time.Second, "y1, y2 and y3 waiting for write 2", func() bool { return c.gathering.Waiting() >= 3 })
			close(release)
			wg.Wait()
			if !comesBack {
				// Written after the linger (write 2 is done): a task of its own.
				_, err := c.Enqueue(context.Background(), job("x2"))
				second <- err
			}
			if err := <-second; err != nil {
				t.Fatal(err)
			}
			pending, err := e.insp.ListPendingTasks("normal")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tk := range pending {
				switch tk.Type {
				case TypeBatch:
					var b batch
					if err := json.Unmarshal(tk.Payload, &b); err != nil {
						t.Fatal(err)
					}
					var ids []string
					for _, j := range b.Jobs {
						ids = append(ids, j.ID)
					}
					slices.Sort(ids)
					got = append(got, strings.Join(ids, "+"))
				default:
					got = append(got, tk.ID)
				}
			}
			slices.Sort(got)
			want := []string{task.JobID("x1"), "x2+y1+y2+y3"}
			if !comesBack {
				want = []string{task.JobID("x1"), task.JobID("x2"), "y1+y2+y3"}
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("tasks %q, want %q", got, want)
			}
		})
	}
}

// Big jobs do not make one huge task: a batch task carries at most
// batchBytes of jobs (a job larger than that goes alone), so 8 jobs of
// 2,000 recipients each (about 1.5 MiB) take two tasks, each under the
// bound.
func TestBatchTasksAreBoundedInBytes(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	var jobs []payload.Job
	for j := range 8 {
		var rs []payload.Recipient
		for i := range 2000 {
			rs = append(rs, apnsRecipient(fmt.Sprintf("u-%d-%d", j, i), apnsToken(fmt.Sprintf("big-%d-%d", j, i))))
		}
		jobs = append(jobs, alertJob(fmt.Sprintf("big-%d", j), "b", rs...))
	}
	e.submitBatch(jobs)
	pending, err := e.insp.ListPendingTasks("normal")
	if err != nil {
		t.Fatal(err)
	}
	carried := 0
	for _, tk := range pending {
		var b batch
		if tk.Type != TypeBatch || json.Unmarshal(tk.Payload, &b) != nil {
			t.Fatalf("task %s of type %s, want batches", tk.ID, tk.Type)
		}
		carried += len(b.Jobs)
		if len(tk.Payload) > batchBytes+1024 {
			t.Errorf("task %s: %d bytes, want at most about %d", tk.ID, len(tk.Payload), batchBytes)
		}
	}
	if len(pending) < 2 || carried != len(jobs) {
		t.Errorf("%d tasks carrying %d jobs, want at least 2 carrying all %d", len(pending), carried, len(jobs))
	}
}

// blockFirstWrite holds c's first write of gathered jobs after its
// enqueue: entered closes when it is held, closing release lets it go on.
func blockFirstWrite(c *Client) (entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	c.afterEnqueue = func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	return entered, release
}

// A write of gathered jobs that panics answers each of its callers with an
// error, and the next submission is written as usual: no caller waits
// forever behind it.
func TestGatheringSurvivesAPanickingWrite(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	c := NewClient(panickyPipelines{e.rdb})
	entered, release := blockFirstWrite(c)
	job := func(id string) payload.Job { return alertJob(id, "p", apnsRecipient("u-"+id, apnsToken(id))) }
	first := make(chan error, 1)
	go func() {
		_, err := c.Enqueue(t.Context(), job("p-0"))
		first <- err
	}()
	<-entered // p-0 is written alone, without a pipeline
	// Two jobs wait meanwhile: they are written together, in one
	// pipeline, which panics.
	errs := make(chan error, 2)
	for _, id := range []string{"p-1", "p-2"} {
		go func() {
			_, err := c.Enqueue(t.Context(), job(id))
			errs <- err
		}()
	}
	waitFor(t, 10*time.Second, "p-1 and p-2 waiting for the next write", func() bool { return c.gathering.Waiting() >= 2 })
	close(release)
	if err := <-first; err != nil {
		t.Errorf("the job written alone: %v", err)
	}
	for i := range 2 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "panic") {
			t.Errorf("waiting job %d: %v, want the panic as its error", i, err)
		}
	}
	// The writing went on: a lone job (written without a pipeline) goes
	// through.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	acc, err := c.Enqueue(ctx, job("p-next"))
	if err != nil || acc.ID != "p-next" {
		t.Errorf("the next submission: %+v, %v", acc, err)
	}
}

// panickyPipelines is a Redis client whose pipelines panic.
type panickyPipelines struct{ redis.UniversalClient }

func (panickyPipelines) Pipelined(context.Context, func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	panic("a pipeline that panics")
}

// A submission whose task delivers and retires its job before the
// submission writes the record (a busy worker beside a slow API) is
// answered accepted, not as a duplicate of itself, alone and in a batch;
// the same id submitted again later, alone or in a batch, is a
// duplicate, and each device got its push once.
func TestJobFinishedBeforeItsRecordIsAccepted(t *testing.T) {
	e := newEnv(t, envOptions{})
	var finishing []string
	e.client.afterEnqueue = func() {
		for _, id := range finishing {
			e.waitDone(id, 10*time.Second)
		}
	}
	submit := func(batch bool, jobs ...payload.Job) []BatchResult {
		t.Helper()
		if !batch {
			acc, err := e.client.Enqueue(t.Context(), jobs[0])
			return []BatchResult{{Accepted: acc, Err: err}}
		}
		res, err := e.client.EnqueueBatch(t.Context(), jobs)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, batch := range []bool{false, true} {
		var jobs []payload.Job
		finishing = nil
		for i := range 2 {
			id := fmt.Sprintf("own-%v-%d", batch, i)
			jobs = append(jobs, alertJob(id, "x", apnsRecipient("u-"+id, apnsToken(id))))
			finishing = append(finishing, id)
		}
		if !batch {
			jobs, finishing = jobs[:1], finishing[:1]
		}
		for i, r := range submit(batch, jobs...) {
			if r.Err != nil || r.Duplicate {
				t.Errorf("batch %v: job %s finished by its own task first: %+v, want accepted", batch, jobs[i].ID, r)
			}
			if keys := e.liveKeys(jobs[i].ID); len(keys) != 0 {
				t.Errorf("batch %v: job %s retired, but the submission wrote %v after", batch, jobs[i].ID, keys)
			}
		}
		finishing = nil
		// A later acceptance, to the millisecond: the client stamps it
		// with the system clock.
		time.Sleep(2 * time.Millisecond)
		for _, again := range []bool{false, true} {
			for i, r := range submit(again, jobs...) {
				if r.Err != nil || !r.Duplicate {
					t.Errorf("batch %v: job %s submitted again (batch %v): %+v, want a duplicate", batch, jobs[i].ID, again, r)
				}
			}
		}
	}
	e.waitQuiet(10 * time.Second) // any duplicate task has sent
	sent := map[string]int{}
	for _, r := range e.apns.Requests() {
		sent[r.Token]++
	}
	for _, id := range []string{"own-false-0", "own-true-0", "own-true-1"} {
		if n := sent[apnsToken(id)]; n != 1 {
			t.Errorf("job %s: %d pushes, want 1", id, n)
		}
	}
}
