package worker

import (
	"maps"
	"testing"
	"time"

	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// TestReRunWithoutSecondsTasksRunsItsGroups (issue 39, 10a): a batch run
// writes its held jobs' markers, naming groups waiting for their seconds,
// and is cut before it adds them (no group in its second, no second's
// task). A process without seconds' tasks (CHANGELOG, Upgrading) re-runs
// the batch: it creates each group's own task under the group's id, in
// the marker's queue, due at its second. A process with seconds' tasks
// that starts then sends every job once.
func TestReRunWithoutSecondsTasksRunsItsGroups(t *testing.T) {
	const n, gap = 4, 3 * time.Second
	e, batchT, jobs := waitingJobsEnv(t, n, gap)
	if err := e.w.handleBatch(t.Context(), batchT); err != nil {
		t.Fatal(err)
	}
	// The cut: the groups never joined their seconds.
	bodies := map[string]string{}
	for id, s := range e.waitingSeconds() {
		k := store.TogetherKeys(s.Queue, s.Wake)[0]
		maps.Copy(bodies, e.rdb.HGetAll(t.Context(), k).Val())
		if err := e.rdb.Del(t.Context(), k).Err(); err != nil {
			t.Fatal(err)
		}
		if err := e.insp.DeleteTask(heldNormal, id); err != nil {
			t.Fatal(err)
		}
	}
	if len(bodies) == 0 {
		t.Fatal("the batch held no job back")
	}
	e.w.seconds.reset() // the cut process's memory goes with it
	// The re-run by a process without seconds' tasks: each group's own
	// task where its markers say.
	for _, j := range jobs {
		q, g := task.ParseHeldMark(e.rdb.HGet(t.Context(), store.JobKey(j.ID), store.HeldPrefix+"0").Val())
		if q != heldJoined || bodies[g] == "" {
			t.Fatalf("job %s marked held in %q by %q, want a group of the cut run in %s", j.ID, q, g, heldJoined)
		}
		_, _, wake, _ := task.ParseWaitingJobsID(g)
		if err := e.client.enqueueHeld(t.Context(), TypeWaitingJobs, g, q, time.Unix(wake, 0), []byte(bodies[g])); err != nil {
			t.Fatal(err)
		}
	}
	e.start()
	t.Cleanup(e.shutdown)
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	e.waitDelivered(ids, 30*time.Second)
	reqs := e.apns.Requests()
	for _, j := range jobs {
		if got := len(requestsFor(reqs, apnsToken(j.ID))); got != 1 {
			t.Errorf("job %s: %d pushes, want 1", j.ID, got)
		}
	}
}
