package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// cutBeforePaced is a Redis hook that fails, once, the round trip that
// records held recipients' paced turns (holdPaced), before Redis sees
// it: what Redis holds afterwards is what a process killed between giving
// the recipients' bookings back and recording their turns leaves.
type cutBeforePaced struct{ fired atomic.Int32 }

func (h *cutBeforePaced) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cutBeforePaced) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *cutBeforePaced) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			args := c.Args()
			if len(args) < 3 || !strings.EqualFold(fmt.Sprint(args[0]), "hset") || !strings.HasSuffix(fmt.Sprint(args[2]), "/p") {
				continue
			}
			if h.fired.CompareAndSwap(0, 1) {
				err := errors.New("cut before the paced turns were recorded")
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// TestPacedCutBeforeTurnsKeepsTheRate (issue 39, 10b): a paced fan-out's
// wave gives the bookings of the recipients the rate holds back and is
// cut before their turns are recorded. The re-runs book those recipients
// again without a paced time, ask the Pacer again and are granted turns
// after every turn granted before: every push arrives once, and no second
// of the provider's arrival log holds more than MaxRateBound.
func TestPacedCutBeforeTurnsKeepsTheRate(t *testing.T) {
	const rate, n = 10, 30
	e := newEnv(t, envOptions{noRun: true, concurrency: 25, apps: func(rdb *redis.Client, lim Limiter, senders map[payload.Platform]Sender) []App {
		p := throttle.Policy{MinGap: time.Second}
		return []App{{Name: "cut", Senders: senders, Limiter: scopedLimiter(t, rdb, p, "cut"), Policy: p,
			MaxRate: map[payload.Platform]float64{payload.APNs: rate}}}
	}})
	cut := &cutBeforePaced{}
	e.rdb.AddHook(cut)
	e.start()
	t.Cleanup(e.shutdown)
	var rs []payload.Recipient
	for i := range n {
		rs = append(rs, apnsRecipient(fmt.Sprint("pc-", i), tokenOf(fmt.Sprint("pc/", i))))
	}
	e.submit(withApp(alertJob("pacecut", "cut", rs...), "cut"))
	st := e.waitDone("pacecut", 60*time.Second)
	if cut.fired.Load() == 0 {
		t.Fatal("no held recipient's turn was recorded: nothing was cut")
	}
	if st.Counts[task.Delivered] != n {
		t.Fatalf("counts %v, want %d delivered", st.Counts, n)
	}
	reqs := e.apns.Requests()
	seen := map[string]int{}
	for _, r := range reqs {
		seen[r.Token]++
	}
	for i := range n {
		if got := seen[tokenOf(fmt.Sprint("pc/", i))]; got != 1 {
			t.Errorf("recipient %d: %d pushes, want 1", i, got)
		}
	}
	if most, bound := mostInOneSecond(arrivals(reqs)), MaxRateBound(rate); most > bound {
		t.Errorf("%d of %d sends within one second at %d/s, want at most %d", most, len(reqs), rate, bound)
	}
}

// TestWokenGroupRunAgainChangesNothing (issue 39, 10c): a group woken out
// of its second (a cancellation) runs in a task of its own, which
// completes before the second's task runs; Asynq then deletes it, and the
// second's task, making sure each woken group's task exists, creates it
// again: the group runs twice. Two groups are woken: one whose other
// members the early run hands to their delivery tasks (its run mark
// stays), and one whose members are all cancelled (its first run settles
// every member and deletes the mark). The run again reads each member
// given up or settled (its marker, its job's record) and does nothing:
// every job ends with one push or none (cancelled), its counts and its
// events as they were after the woken run. The run again finds every
// member's job retired: a run that took a job without its record for a
// fresh one (headOf not looking in the done hash) pushes every member
// again, and this test fails.
func TestWokenGroupRunAgainChangesNothing(t *testing.T) {
	testkit.Slow(t, "waits out an 8 s gap for a held second")
	const n, gap = 4, 8 * time.Second
	e, ta, tb, ja, jb := twoBatchesEnv(t, n, gap, "wa", "wb")
	for _, bt := range []*asynq.Task{ta, tb} {
		if err := e.w.handleBatch(t.Context(), bt); err != nil {
			t.Fatal(err)
		}
	}
	groupOf := func(job string) string {
		q, g := task.ParseHeldMark(e.rdb.HGet(t.Context(), store.JobKey(job), store.HeldPrefix+"0").Val())
		if q != heldJoined {
			t.Fatalf("job %s marked held in %q by %s, want a group waiting for its second", job, q, g)
		}
		return g
	}
	ga, gb := groupOf(ja[0].ID), groupOf(jb[0].ID)
	var withA, cancelled []string
	for _, j := range ja {
		if groupOf(j.ID) == ga {
			withA = append(withA, j.ID)
		}
	}
	if len(withA) < 2 {
		t.Fatalf("group %s holds %v, want two jobs or more", ga, withA)
	}
	cancelled = append(cancelled, ja[0].ID)
	for _, j := range jb {
		if groupOf(j.ID) == gb {
			cancelled = append(cancelled, j.ID)
		}
	}
	var wg sync.WaitGroup
	for _, id := range cancelled {
		wg.Go(func() {
			if _, err := e.client.Cancel(t.Context(), id); err != nil {
				t.Errorf("cancel %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	// The woken groups' own tasks, run as Asynq runs them, then deleted
	// (Asynq keeps no completed task without a retention).
	runOwn := func() []string {
		var ran []string
		for _, ti := range e.heldTasks(TypeWaitingJobs) {
			if err := e.w.handleWaitingJobs(t.Context(), asynq.NewTask(TypeWaitingJobs, ti.Payload)); err != nil {
				t.Fatalf("run of %s: %v", ti.ID, err)
			}
			if err := e.insp.DeleteTask(heldNormal, ti.ID); err != nil {
				t.Fatal(err)
			}
			ran = append(ran, ti.ID)
		}
		slices.Sort(ran)
		return ran
	}
	if ran, want := runOwn(), []string{ga, gb}; !slices.Equal(ran, slices.Sorted(slices.Values(want))) {
		t.Fatalf("woken groups run %v, want %v", ran, want)
	}
	all := append(slices.Clone(ja), jb...)
	type seen struct {
		counts map[string]int
		events int
	}
	snapshot := func() map[string]seen {
		out := map[string]seen{}
		evs := e.events()
		for _, j := range all {
			st, err := e.client.Status(t.Context(), j.ID)
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for _, ev := range evs {
				if ev.Job == j.ID {
					k++
				}
			}
			out[j.ID] = seen{counts: st.Counts, events: k}
		}
		return out
	}
	before := snapshot()
	e.runHeldSeconds(1)
	// The woken run's members' delivery tasks first, so that a group's
	// run again that sent to them would send twice.
	for _, ti := range e.scheduled(TypeDelivery) {
		if err := e.w.handleDelivery(t.Context(), asynq.NewTask(ti.Type, ti.Payload)); err != nil {
			t.Errorf("delivery %s: %v", ti.ID, err)
		}
	}
	again := runOwn()
	t.Logf("woken groups whose tasks the second's task created again and ran: %v", again)
	after := snapshot()
	reqs := e.apns.Requests()
	for _, j := range all {
		got := len(requestsFor(reqs, apnsToken(strings.Replace(j.ID, "-", "", 1))))
		want := 1
		if slices.Contains(cancelled, j.ID) {
			want = 0
			if b, a := before[j.ID], after[j.ID]; !maps.Equal(b.counts, a.counts) || b.events != a.events {
				t.Errorf("cancelled job %s: counts %v and %d events after its woken run, %v and %d at the end", j.ID, b.counts, b.events, a.counts, a.events)
			}
			if a := after[j.ID].counts; a[task.Cancelled] != 1 || a["pending"] != 0 {
				t.Errorf("cancelled job %s: counts %v, want 1 cancelled", j.ID, a)
			}
		} else if a := after[j.ID].counts; a[task.Delivered] != 1 || a["pending"] != 0 {
			t.Errorf("job %s: counts %v, want 1 delivered", j.ID, a)
		}
		if got != want {
			t.Errorf("job %s: %d pushes, want %d", j.ID, got, want)
		}
	}
}

// TestLateGroupJoinsASecondTakenAnHourAgo (issue 39, 10d): a process made
// sure of a second's task; another ran it at its second and marked it
// done, a mark that lasts togetherDoneTTL. Just as the mark is gone, a
// group of a run late by that hour joins the second through the first
// process, whose clock is a minute behind: it no longer takes the task
// for one that is still there (secondFresh), so the group is not left
// waiting for a task that never comes: the second's task is made again.
// While the mark is there, the join is refused and the group gets a task
// of its own. A clock more than a minute behind, or the process that ran
// the second's task a minute ahead and the joiner behind by the rest,
// leaves it waiting: togetherDoneTTL's minute is the skew it tolerates.
func TestLateGroupJoinsASecondTakenAnHourAgo(t *testing.T) {
	const n, gap, behind = 2, 3 * time.Second, time.Minute
	e, batchT, _ := waitingJobsEnv(t, n, gap)
	var offset atomic.Int64
	opts := e.opts
	opts.Clock = clockFunc(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
	b, err := New(e.rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.handleBatch(t.Context(), batchT); err != nil {
		t.Fatal(err)
	}
	secs := e.waitingSeconds()
	if len(secs) == 0 {
		t.Fatal("the batch held no job back")
	}
	// A group of the batch, and two of runs late for its second under
	// other tokens: one within the hour, one after it.
	var g, body string
	for _, s := range secs {
		for id, b := range e.rdb.HGetAll(t.Context(), store.TogetherKeys(s.Queue, s.Wake)[0]).Val() {
			if g == "" || id < g {
				g, body = id, b
			}
		}
	}
	scope, _, wake, _ := task.ParseWaitingJobsID(g)
	e.runHeldSeconds(1) // by the other process, e.w
	join := func(token string) (own, waiting, second bool) {
		id := task.WaitingJobsID(scope, token, wake)
		if err := b.joinSecond(t.Context(), id, heldNormal, wake, []byte(strings.Replace(body, g, id, 1))); err != nil {
			t.Fatal(err)
		}
		_, errOwn := e.insp.GetTaskInfo(heldNormal, id)
		_, errSec := e.insp.GetTaskInfo(heldNormal, task.WaitingSecondID(heldNormal, wake))
		return errOwn == nil, e.rdb.HExists(t.Context(), store.TogetherKeys(heldNormal, wake)[0], id).Val(), errSec == nil
	}
	// Within the hour: refused, a task of its own.
	offset.Store(int64(-behind))
	if own, waiting, _ := join("soon"); !own || waiting {
		t.Errorf("a group joining within the hour: own task %v, waiting %v; want its own task", own, waiting)
	}
	// The hour passes: the second's mark is gone, the first process's
	// clock then behind by a minute.
	k := store.TogetherKeys(heldNormal, wake)[1]
	left, err := e.rdb.PTTL(t.Context(), k).Result()
	if err != nil || left <= 0 {
		t.Fatalf("second %d's mark: ttl %v, %v", wake, left, err)
	}
	offset.Store(int64(left - behind))
	if err := e.rdb.Del(t.Context(), k).Err(); err != nil {
		t.Fatal(err)
	}
	if own, waiting, task := join("late"); !own && !(waiting && task) {
		t.Errorf("a group joining once the mark is gone: own task %v, waiting %v, its second's task %v; want it waiting for a task that exists", own, waiting, task)
	}
}

// clockFunc is a Clock reading a function.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }
