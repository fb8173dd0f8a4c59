package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// TestShardedDeliveries: with 4 shards, the held back single-recipient
// jobs, a fan-out's held tasks and its chunks wait in the shard queues of
// their tasks' ids, and everything is delivered with the limiter's gap
// intact. (A delivery task waits in its user's shard: TestDeliveryShards.)
func TestShardedDeliveries(t *testing.T) {
	testkit.Slow(t, "waits out a 6 s gap for 190 recipients across 4 shards")
	const n, singles, shards = 150, 40, 4
	e := newEnv(t, envOptions{limits: "100/1m", gap: "6s", shards: shards})
	single := func(prefix string, i int) payload.Job {
		return alertJob(fmt.Sprintf("%s%03d", prefix, i), "s", apnsRecipient(fmt.Sprint("s-", i), apnsToken(fmt.Sprintf("%s%03d", prefix, i))))
	}
	first := e.submit(fanJob("sa", n))
	for i := range singles {
		e.submit(single("pa", i))
	}
	e.waitDone(first, 20*time.Second)
	for i := range singles {
		e.waitDone(fmt.Sprintf("pa%03d", i), 10*time.Second)
	}
	second := e.submit(fanJob("sb", n))
	for i := range singles {
		e.submit(single("pb", i))
	}

	// The second round is all held back by the gap (longer than a wait in
	// place): the single-recipient jobs in held jobs tasks, the fan-out's
	// recipients in held tasks, each task in the shard of its id.
	users := map[string]string{} // single user -> queue its job waits in
	held := map[string]bool{}    // users waiting in held tasks
	waitFor(t, 10*time.Second, "the second job's deliveries to be scheduled", func() bool {
		for k := range shards {
			q := fmt.Sprintf("normal.%d", k)
			var tasks []*asynq.TaskInfo
			for _, queue := range []string{q, task.HeldQueueOf(q)} {
				more, err := e.insp.ListScheduledTasks(queue, asynq.PageSize(n))
				if err == nil { // else the queue does not exist yet
					tasks = append(tasks, more...)
				}
			}
			for _, ti := range tasks {
				if ti.Type == TypeWaitingSecond {
					// The groups of one shard's second: each in the shard
					// of its id.
					var s waitingSecond
					if err := json.Unmarshal(ti.Payload, &s); err != nil || s.Queue != ti.Queue {
						t.Fatalf("task %s in %s: payload %+v, %v", ti.ID, ti.Queue, s, err)
					}
					for id, body := range e.rdb.HGetAll(t.Context(), store.TogetherKeys(s.Queue, s.Wake)[0]).Val() {
						if want := task.HeldQueueOf(task.ShardQueue("normal", id, shards)); ti.Queue != want {
							t.Errorf("group %s waits in %s, want %s", id, ti.Queue, want)
						}
						var h waitingJobs
						if err := json.Unmarshal([]byte(body), &h); err != nil {
							t.Fatalf("group %s in %s: %v", id, ti.Queue, err)
						}
						for _, c := range h.Jobs {
							users[c.Recipients[0].UserID] = ti.Queue
						}
					}
					continue
				}
				if want := task.HeldQueueOf(task.ShardQueue("normal", ti.ID, shards)); ti.Queue != want {
					t.Errorf("%s task %s waits in %s, want %s", ti.Type, ti.ID, ti.Queue, want)
				}
				if ti.Type == TypeWaitingJobs {
					var h waitingJobs
					if err := json.Unmarshal(ti.Payload, &h); err != nil {
						t.Fatalf("task %s in %s: %v", ti.ID, ti.Queue, err)
					}
					for _, c := range h.Jobs {
						users[c.Recipients[0].UserID] = ti.Queue
					}
					continue
				}
				if ti.Type == TypeHeld {
					var c task.Chunk
					if err := json.Unmarshal(ti.Payload, &c); err != nil {
						t.Fatalf("task %s in %s: %v", ti.ID, ti.Queue, err)
					}
					for _, r := range c.Recipients {
						held[r.UserID] = true
					}
					continue
				}
				t.Errorf("task %s (%s) waits in %s, want only held tasks", ti.ID, ti.Type, ti.Queue)
			}
		}
		return len(users) == singles && len(held) == n
	})
	queues, err := e.insp.Queues()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"sa/c1", "sb/c1"} {
		if q := task.ShardQueue("normal", c, shards); !slices.Contains(queues, q) {
			t.Errorf("chunk %s: its shard queue %s was never used (queues %v)", c, q, queues)
		}
	}

	st := e.waitDone(second, 30*time.Second)
	if st.Counts[task.Delivered] != n {
		t.Errorf("second job: counts %v, want %d delivered", st.Counts, n)
	}
	for i := range singles {
		e.waitDone(fmt.Sprintf("pb%03d", i), 10*time.Second)
	}
	reqs := e.apns.Requests()
	for i := range singles {
		a := requestsFor(reqs, apnsToken(fmt.Sprintf("pa%03d", i)))
		b := requestsFor(reqs, apnsToken(fmt.Sprintf("pb%03d", i)))
		if len(a) != 1 || len(b) != 1 {
			t.Errorf("single user %d got %d and %d pushes, want 1 and 1", i, len(a), len(b))
		} else if d := b[0].At.Sub(a[0].At); d < 6*time.Second-250*time.Millisecond {
			t.Errorf("single user %d: pushes %s apart, want at least 6s", i, d)
		}
	}
	checkOnePushEachApart(t, reqs, "sa", "sb", n, 6*time.Second)
}

// TestLeftoverShardQueueIsDrained: a delivery waiting in a shard queue of a
// deployment that had more shards is still delivered by workers configured
// with fewer.
func TestLeftoverShardQueueIsDrained(t *testing.T) {
	e := newEnv(t, envOptions{shards: 2, noRun: true})
	tok := apnsToken("leftover")
	d := task.Delivery{
		Job: "leftover", Index: 0, UserID: "u-left",
		Devices:  []payload.Device{{Platform: payload.APNs, Token: tok}},
		Content:  payload.Content{Alert: &payload.Alert{Title: "t", Body: "b"}},
		Priority: payload.PriorityNormal, AcceptedAt: time.Now(),
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.aq.EnqueueContext(context.Background(), asynq.NewTask(TypeDelivery, b),
		asynq.TaskID(d.Member()), asynq.Queue("normal.9")); err != nil {
		t.Fatal(err)
	}
	e.start()
	t.Cleanup(e.shutdown)
	waitFor(t, 10*time.Second, "the leftover delivery to be sent", func() bool {
		return len(requestsFor(e.apns.Requests(), tok)) == 1
	})
}

// TestShardedJobs: with shards, a worker's Client puts each job's task on
// one of its priority's shard queues (by job id, so a duplicate meets its
// first task there), the priority queue gets none, a cancellation wakes a
// scheduled job on its shard queue, and the workers deliver them all.
func TestShardedJobs(t *testing.T) {
	const shards = 4
	e := newEnv(t, envOptions{shards: shards, noRun: true})
	var ids []string
	used := map[string]bool{}
	for i := range 40 {
		id := e.submit(alertJob(fmt.Sprintf("sj-%d", i), "s", apnsRecipient(fmt.Sprintf("u-%d", i), apnsToken(fmt.Sprint("sj", i)))))
		q := task.ShardQueue("normal", task.JobID(id), shards)
		if _, err := e.insp.GetTaskInfo(q, task.JobID(id)); err != nil {
			t.Fatalf("job %s's task is not on its shard queue %s: %v", id, q, err)
		}
		used[q] = true
		ids = append(ids, id)
	}
	if len(used) < 2 {
		t.Errorf("40 jobs used the shard queues %v, want them spread", used)
	}
	if info, err := e.insp.GetQueueInfo("normal"); err == nil && info.Size > 0 {
		t.Errorf("the priority queue holds %d tasks, want none", info.Size)
	}
	if acc, err := e.client.Enqueue(t.Context(), alertJob("sj-0", "again", apnsRecipient("u-0", apnsToken("x")))); err != nil || !acc.Duplicate {
		t.Errorf("a duplicate of a queued job: %+v, %v", acc, err)
	}

	later := alertJob("sj-later", "l", apnsRecipient("u-later", apnsToken("sj-later")))
	at := time.Now().Add(time.Hour)
	later.SendAt = &at
	e.submit(later)
	q := task.ShardQueue("normal", task.JobID(later.ID), shards)
	if ti, err := e.insp.GetTaskInfo(q, task.JobID(later.ID)); err != nil || ti.State != asynq.TaskStateScheduled {
		t.Fatalf("the scheduled job on %s: %+v, %v", q, ti, err)
	}
	if _, err := e.client.Cancel(t.Context(), later.ID); err != nil {
		t.Fatal(err)
	}
	if ti, err := e.insp.GetTaskInfo(q, task.JobID(later.ID)); err != nil || ti.State != asynq.TaskStatePending {
		t.Errorf("the cancelled scheduled job was not woken on %s: %+v, %v", q, ti, err)
	}

	e.start()
	t.Cleanup(e.shutdown)
	for _, id := range ids {
		e.waitDone(id, 10*time.Second)
	}
	// The woken job task is on its shard queue beside the others: the 40
	// being done does not mean it has run (failed in CI when read at once).
	var st JobStatus
	var err error
	waitFor(t, 10*time.Second, "the cancelled job to settle", func() bool {
		st, err = e.client.Status(t.Context(), later.ID)
		return err == nil && st.Counts["pending"] == 0
	})
	if st.State != jobCancelled || st.Counts[task.Cancelled] != 1 {
		t.Errorf("the cancelled job: %+v, %v", st, err)
	}
	if got := len(e.apns.Requests()); got != len(ids) {
		t.Errorf("%d pushes, want %d", got, len(ids))
	}
}

// TestHeldConcurrencyDefaults: held tasks get ten slots per delivery slot
// unless HeldConcurrency says otherwise.
func TestHeldConcurrencyDefaults(t *testing.T) {
	for _, tc := range []struct{ conc, held, want int }{{0, 0, 10 * DefaultConcurrency}, {7, 0, 70}, {7, 300, 300}} {
		if got := (Options{Concurrency: tc.conc, HeldConcurrency: tc.held}).withDefaults().HeldConcurrency; got != tc.want {
			t.Errorf("Concurrency %d, HeldConcurrency %d: %d held slots, want %d", tc.conc, tc.held, got, tc.want)
		}
	}
}

// TestDeliveryShards: with 4 shards a delivery task (a retry, a late or
// near slot) waits in the shard queue of its user, so one user's
// deliveries share a queue, and many users' spread over every shard.
func TestDeliveryShards(t *testing.T) {
	const users, shards = 40, 4
	e := newEnv(t, envOptions{noRun: true, shards: shards})
	used := map[string]bool{}
	for i := range users {
		d := task.Delivery{Job: fmt.Sprint("ds-", i), UserID: fmt.Sprint("u-", i), Priority: payload.PriorityNormal,
			Devices: []payload.Device{{Platform: payload.APNs, Token: apnsToken(fmt.Sprint("ds-", i))}}}
		if err := e.w.enqueueDelivery(t.Context(), &d, time.Minute); err != nil {
			t.Fatal(err)
		}
		q := task.ShardQueue("normal", d.UserID, shards)
		if _, err := e.insp.GetTaskInfo(q, task.DeliveryID(d.Job, 0)); err != nil {
			t.Errorf("user %s: delivery task not in its shard %s: %v", d.UserID, q, err)
		}
		used[q] = true
	}
	if len(used) != shards {
		t.Errorf("deliveries of %d users use %d of %d shards", users, len(used), shards)
	}
}
