package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// doneEntries returns every done-hash entry in e's Redis: job id -> entry.
func (e *env) doneEntries() map[string]string {
	e.t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	keys, err := e.rdb.Keys(ctx, "hush:done:*").Result()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, k := range keys {
		m, err := e.rdb.HGetAll(ctx, k).Result()
		if err != nil {
			e.t.Fatal(err)
		}
		for id, v := range m {
			out[id] = v
		}
	}
	return out
}

// liveKeys returns which of job id's records exist.
func (e *env) liveKeys(id string) []string {
	e.t.Helper()
	var out []string
	for _, k := range store.JobKeys(id) {
		if e.rdb.Exists(context.Background(), k).Val() == 1 {
			out = append(out, k)
		}
	}
	return out
}

// TestFinishedJobLeavesOneCompactEntry: once a job is done, its records
// and its Asynq task are gone and one done-hash entry answers its status
// and duplicates; re-runs of its job, chunk and delivery tasks (an Asynq
// retry after a lost acknowledgement) send nothing and write nothing back.
func TestFinishedJobLeavesOneCompactEntry(t *testing.T) {
	e := newEnv(t, envOptions{})
	solo := alertJob("solo/1", "s", apnsRecipient("u-solo", apnsToken("solo")))
	wide := fanJob("wide}2", 250) // "}" ends the key's hash tag early
	for _, j := range []payload.Job{solo, wide} {
		e.submit(j)
	}
	for id, n := range map[string]int{solo.ID: 1, wide.ID: 250} {
		st := e.waitDone(id, 20*time.Second)
		if st.Recipients != n || st.Counts[task.Delivered] != n || st.Counts["pending"] != 0 || st.Queue != "normal" {
			t.Errorf("status of %s: %+v, want %d delivered on normal", id, st, n)
		}
		if st.AcceptedAt.IsZero() || time.Since(st.AcceptedAt) > time.Minute {
			t.Errorf("status of %s: accepted at %v", id, st.AcceptedAt)
		}
		if live := e.liveKeys(id); len(live) > 0 {
			t.Errorf("job %s done, its records %v are still there", id, live)
		}
		// The handler returns after the script that finishes the job; Asynq
		// then deletes the task (no retention), a moment later.
		waitFor(t, 5*time.Second, "job "+id+"'s Asynq task deleted", func() bool {
			_, err := e.insp.GetTaskInfo("normal", task.JobID(id))
			return errors.Is(err, asynq.ErrTaskNotFound)
		})
	}
	entries := e.doneEntries()
	if len(entries) != 2 || entries[solo.ID] == "" || entries[wide.ID] == "" {
		t.Fatalf("done entries %v, want one per job", entries)
	}
	sent := len(e.apns.Requests())

	for _, j := range []payload.Job{solo, wide} {
		acc, err := e.client.Enqueue(t.Context(), j)
		if err != nil || !acc.Duplicate {
			t.Errorf("submitting %s again: %+v, %v; want a duplicate", j.ID, acc, err)
		}
	}
	// Re-runs of every task of both jobs, as Asynq would run them after a
	// crash between the handler's end and its acknowledgement.
	e.shutdown()
	w, err := New(e.rdb, e.opts) // a process that has not run yet
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []payload.Job{solo, wide} {
		j.AcceptedAt = time.Now()
		if err := w.handleJob(t.Context(), jobTask(t, j)); err != nil {
			t.Errorf("re-run of job %s: %v", j.ID, err)
		}
		for from := 0; from < len(j.Recipients); from += task.ChunkSize {
			c := task.ChunkOf(&j, from)
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.handleChunk(t.Context(), asynq.NewTask(TypeGroupingChunk, b)); err != nil {
				t.Errorf("re-run of chunk %s: %v", c.Name(), err)
			}
			d := c.Delivery(0)
			if b, err = json.Marshal(d); err != nil {
				t.Fatal(err)
			}
			if err := w.handleDelivery(t.Context(), asynq.NewTask(TypeDelivery, b)); err != nil {
				t.Errorf("re-run of delivery %s: %v", d.Member(), err)
			}
		}
		if live := e.liveKeys(j.ID); len(live) > 0 {
			t.Errorf("re-runs of %s wrote its records %v back", j.ID, live)
		}
	}
	if got := len(e.apns.Requests()); got != sent {
		t.Errorf("%d pushes after the duplicates and re-runs, want %d", got, sent)
	}
	// The duplicates were answered as such, and each left a job task
	// (Enqueue looks up live records only; create found them finished):
	// it does nothing. The re-runs left no task.
	tasks, err := e.insp.ListPendingTasks("normal")
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range tasks {
		if ti.Type != TypeJob {
			t.Errorf("the re-runs left task %s", ti.ID)
			continue
		}
		if err := w.handleJob(t.Context(), asynq.NewTask(ti.Type, ti.Payload)); err != nil {
			t.Errorf("duplicate's task %s: %v", ti.ID, err)
		}
	}
	if n, err := e.insp.GetQueueInfo("normal"); err == nil && n.Scheduled > 0 {
		t.Errorf("the re-runs left %d scheduled tasks", n.Scheduled)
	}
	if st, err := e.client.Status(t.Context(), wide.ID); err != nil || st.State != jobDone || st.Counts[task.Delivered] != 250 {
		t.Errorf("status of %s after the re-runs: %+v, %v", wide.ID, st, err)
	}
	cr, err := e.client.Cancel(t.Context(), solo.ID)
	if err != nil || cr.Cancelled || cr.State != jobDone {
		t.Errorf("cancelling the finished %s: %+v, %v; want it left done", solo.ID, cr, err)
	}
}

// TestRetentionEndsDuplicateDetection: a finished job's id answers
// duplicates for HUSH_JOB_RETENTION (up to a quarter more), then is
// forgotten: its status is not found and the same id is a new job.
func TestRetentionEndsDuplicateDetection(t *testing.T) {
	t.Parallel()
	const retention = 2 * time.Second
	e := newEnv(t, envOptions{retention: retention})
	tok := apnsToken("again")
	job := alertJob("again", "a", apnsRecipient("u-again", tok))
	e.submit(job)
	e.waitDone(job.ID, 10*time.Second)
	finished := time.Now()
	if acc, err := e.client.Enqueue(t.Context(), job); err != nil || !acc.Duplicate {
		t.Fatalf("submitting it again at once: %+v, %v; want a duplicate", acc, err)
	}
	waitFor(t, 10*time.Second, "the finished job to be forgotten", func() bool {
		_, err := e.client.Status(t.Context(), job.ID)
		return errors.Is(err, ErrNotFound)
	})
	if kept := time.Since(finished); kept < retention-200*time.Millisecond {
		t.Errorf("forgotten %v after it finished, want at least the retention %v", kept, retention)
	}
	if acc, err := e.client.Enqueue(t.Context(), job); err != nil || acc.Duplicate {
		t.Fatalf("submitting it after the retention: %+v, %v; want a new job", acc, err)
	}
	e.waitDone(job.ID, 10*time.Second)
	if got := len(requestsFor(e.apns.Requests(), tok)); got != 2 {
		t.Errorf("%d pushes, want 2 (one per acceptance)", got)
	}
}

// TestRetiredStatusKeepsTheRecord: the compact entry retire.lua writes
// (instants turned into Unix ms in Lua) reads back as the status the live
// record gave, to the millisecond, across leap days, month ends and
// centuries, cancelled or not.
func TestRetiredStatusKeepsTheRecord(t *testing.T) {
	ctx := context.Background()
	s := jobStore{rdb: redistest.Client(t), done: store.DoneBuckets{Retention: time.Hour}}
	prefix := redistest.Prefix(t)
	instants := []time.Time{
		time.Unix(0, 0), time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 500_000_000, time.UTC), time.Date(2024, 3, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2100, 2, 28, 23, 0, 0, 0, time.UTC), time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		instants = append(instants, time.Unix(0, rng.Int64N(5_000_000_000*int64(time.Second))).UTC())
	}
	for k, at := range instants {
		id := fmt.Sprintf("%sst%d", prefix, k)
		t.Cleanup(func() { s.rdb.Del(context.Background(), store.JobKeys(id)...) })
		want := JobStatus{ID: id, State: jobDone, Outcome: OutcomePartlyDelivered, Queue: "high", Recipients: 7, Deferrals: k,
			AcceptedAt: at.Truncate(time.Millisecond),
			Counts:     map[string]int{"pending": 0, task.Delivered: 3, task.Collapsed: 4}}
		fields := []any{"queue", "high", "accepted_at", store.TimeField(at), "recipients", 7, "deadline", "",
			"state", store.JobFanning, task.Delivered, 3, task.Collapsed, 4, "deferrals", k}
		if k%2 == 1 {
			dl := at.Add(time.Duration(k) * time.Hour)
			want.Deadline = dl.Truncate(time.Millisecond)
			fields[7] = store.TimeField(dl)
		}
		if k%3 == 1 {
			want.State, want.CancelledAt = jobCancelled, at.Add(time.Second).Truncate(time.Millisecond)
			fields = append(fields, store.FieldCancelled, store.TimeField(at.Add(time.Second)))
		}
		for _, f := range task.FinalStates() {
			if _, ok := want.Counts[f]; !ok {
				want.Counts[f] = 0
			}
		}
		got := retireRecord(t, s, id, 7, fields...)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("status of a job accepted at %s after it retired (-want +got):\n%s", store.TimeField(at), diff)
		}
		if n := s.rdb.Exists(ctx, store.JobKeys(id)...).Val(); n != 0 {
			t.Fatalf("%d of the job's records left after it retired", n)
		}
	}
}

// retireRecord writes job id's record as fields, fans it out to n
// recipients (which retires it once every one has a final state) and
// returns the status read back.
func retireRecord(t *testing.T, s jobStore, id string, n int, fields ...any) JobStatus {
	t.Helper()
	ctx := context.Background()
	if err := s.rdb.HSet(ctx, store.JobKey(id), fields...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.fannedOut(ctx, id, n); err != nil {
		t.Fatal(err)
	}
	got, err := s.status(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestRetiredInstantsOfEveryLayout: retire.lua reads Go's usual layout
// (a four-digit year, then 0 to 9 digits of fraction) by byte position,
// and any other (a longer year) by its pattern; both give the instant's
// Unix ms, the fraction's first three digits kept.
func TestRetiredInstantsOfEveryLayout(t *testing.T) {
	s := jobStore{rdb: redistest.Client(t), done: store.DoneBuckets{Retention: time.Hour}}
	prefix := redistest.Prefix(t)
	for k, c := range []struct {
		field string
		want  time.Time
	}{
		{"2026-11-27T13:04:05Z", time.Date(2026, 11, 27, 13, 4, 5, 0, time.UTC)},
		{"2026-11-27T13:04:05.1Z", time.Date(2026, 11, 27, 13, 4, 5, 100e6, time.UTC)},
		{"2026-11-27T13:04:05.12Z", time.Date(2026, 11, 27, 13, 4, 5, 120e6, time.UTC)},
		{"2026-11-27T13:04:05.123Z", time.Date(2026, 11, 27, 13, 4, 5, 123e6, time.UTC)},
		{"2026-11-27T13:04:05.999999999Z", time.Date(2026, 11, 27, 13, 4, 5, 999e6, time.UTC)},
		{"2026-02-28T23:59:59.000000001Z", time.Date(2026, 2, 28, 23, 59, 59, 0, time.UTC)},
		{"0001-01-01T00:00:00.5Z", time.Date(1, 1, 1, 0, 0, 0, 500e6, time.UTC)},
		{"10000-03-01T00:00:00.25Z", time.Date(10000, 3, 1, 0, 0, 0, 250e6, time.UTC)},
		{"12345-06-07T08:09:10Z", time.Date(12345, 6, 7, 8, 9, 10, 0, time.UTC)},
	} {
		id := fmt.Sprintf("%slayout%d", prefix, k)
		t.Cleanup(func() { s.rdb.Del(context.Background(), store.JobKeys(id)...) })
		got := retireRecord(t, s, id, 1, "queue", "high", "accepted_at", c.field, "recipients", 1,
			"deadline", c.field, "state", store.JobFanning, task.Delivered, 1)
		if got.State != jobDone || !got.AcceptedAt.Equal(c.want) || !got.Deadline.Equal(c.want) {
			t.Errorf("%s retired as state %s, accepted at %s, deadline %s; want done, %s", c.field, got.State,
				got.AcceptedAt.UTC().Format(time.RFC3339Nano), got.Deadline.UTC().Format(time.RFC3339Nano), c.want.Format(time.RFC3339Nano))
		}
	}
}

// TestDoneBucketsShareTheJobsSlot: on a real 3-master Redis Cluster, each
// job's done buckets are on its records' slot, whatever its id holds, so
// retiring (one script over both) and reading both in one pipeline work
// there (worker/internal/store's TestSlotTags: every slot has a short tag).
func TestDoneBucketsShareTheJobsSlot(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rdb := c.Client(t)
	ctx := context.Background()
	s := newStore(rdb, time.Hour)
	for _, id := range []string{"plain", "a/b", "a}b", "}x", "{y}", "ünï-€", "x{", strings.Repeat("z", 256)} {
		want, err := rdb.ClusterKeySlot(ctx, store.JobKey(id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range s.done.Keys(id, time.Now()) {
			if got := rdb.ClusterKeySlot(ctx, k).Val(); got != want {
				t.Errorf("id %q: done bucket %s on slot %d, its records on %d", id, k, got, want)
			}
		}
		if int64(store.KeySlot(store.JobKey(id))) != want {
			t.Errorf("id %q: store.KeySlot %d, Redis says %d", id, store.KeySlot(store.JobKey(id)), want)
		}
		r := store.RecordInfo{ID: id, Queue: "normal", Recipients: 2, AcceptedAt: time.Now(), Retain: time.Now()}
		if _, err := s.create(ctx, r, store.JobQueued); err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		ch := &task.Chunk{Job: id, AcceptedAt: r.AcceptedAt}
		rec := &chunkRecord{}
		rec.final(0, task.Delivered, Event{})
		rec.final(1, task.Expired, Event{})
		if _, err := s.record(ctx, ch, rec); err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		if err := s.fannedOut(ctx, id, 2); err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		st, err := s.status(ctx, id)
		if err != nil || st.State != jobDone || st.Counts[task.Expired] != 1 {
			t.Errorf("id %q: status %+v, %v; want done, retired", id, st, err)
		}
		// Its own submission writing the record late is not a duplicate;
		// another acceptance, or another queue, is.
		if dup, err := s.create(ctx, r, store.JobQueued); err != nil || dup {
			t.Errorf("id %q: its own submission writing its record late: duplicate %v, %v; want not", id, dup, err)
		}
		later, other := r, r
		later.AcceptedAt = r.AcceptedAt.Add(time.Millisecond)
		other.Queue = "high"
		for _, again := range []store.RecordInfo{later, other} {
			if dup, err := s.create(ctx, again, store.JobQueued); err != nil || !dup {
				t.Errorf("id %q: creating its record again (%s, %s): duplicate %v, %v; want a duplicate", id, again.Queue, again.AcceptedAt, dup, err)
			}
		}
		if n := rdb.Exists(ctx, store.JobKey(id)).Val(); n != 0 {
			t.Errorf("id %q: its record is still there", id)
		}
	}
}

// TestFinishedByTellsBatchesApart: two batches submit one id into one
// queue in the same millisecond, and batch A's task finishes the job
// before batch B's write of its record. B's write reads the job finished
// by another submission (a duplicate), A's by its own; the status shows
// the queue without the tag.
func TestFinishedByTellsBatchesApart(t *testing.T) {
	ctx := context.Background()
	s := newStore(redistest.Client(t), DefaultJobRetention)
	id := redistest.Prefix(t) + "twice"
	t.Cleanup(func() { s.rdb.Del(context.Background(), store.JobKeys(id)...) })
	at := time.Now().Truncate(time.Millisecond)
	a := store.RecordInfo{ID: id, Queue: "normal", Task: task.BatchID("0123456789abcdef0123456789aaaaaa"), Recipients: 1, AcceptedAt: at, Retain: at}
	b := a
	b.Task = task.BatchID("0123456789abcdef0123456789bbbbbb")
	if dup, err := s.create(ctx, a, store.JobQueued); err != nil || dup {
		t.Fatalf("A's write: duplicate %v, err %v", dup, err)
	}
	// A's task runs it: fanned out, its one recipient delivered.
	if _, _, _, err := s.start(ctx, a, true, nil); err != nil {
		t.Fatal(err)
	}
	rec := &chunkRecord{}
	rec.final(0, task.Delivered, Event{})
	if _, err := s.record(ctx, &task.Chunk{Job: id, AcceptedAt: at}, rec); err != nil {
		t.Fatal(err)
	}
	if n := s.rdb.Exists(ctx, store.JobKey(id)).Val(); n != 0 {
		t.Fatal("the job did not retire")
	}
	if dup, err := s.create(ctx, b, store.JobQueued); err != nil || !dup {
		t.Errorf("B's write after A finished: duplicate %v, err %v; want a duplicate", dup, err)
	}
	if dup, err := s.create(ctx, a, store.JobQueued); err != nil || dup {
		t.Errorf("A's write after its task finished: duplicate %v, err %v; want accepted", dup, err)
	}
	st, err := s.status(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Queue != "normal" || st.State != jobDone {
		t.Errorf("status %+v, want done on queue normal", st)
	}
}

// TestFinishedByWithoutATag: an entry without a task tag (a job of its own
// task, or one written before entries had tags) is told by its queue and
// its millisecond, as before.
func TestFinishedByWithoutATag(t *testing.T) {
	at := time.Now().Truncate(time.Millisecond)
	st := &chunkStates{retired: true, acceptedAt: at}
	r := store.RecordInfo{Queue: "normal", Task: task.BatchID("whatever"), AcceptedAt: at}
	for _, tt := range []struct {
		owner string
		want  bool
	}{
		{"normal", true},
		{"high", false},
		{"normal@" + store.TaskTag(r.Task), true},
		{"normal@other", false},
	} {
		if got := finishedBy(tt.owner, st, r); got != tt.want {
			t.Errorf("finishedBy(%q) = %v, want %v", tt.owner, got, tt.want)
		}
	}
	r.Task = ""
	if finishedBy("normal@"+store.TaskTag(task.BatchID("whatever")), st, r) {
		t.Error("a job of its own task read as finished by it, though a batch's task finished it")
	}
}
