package faultsim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

var (
	flagSeed     = flag.Uint64("seed", 0, "run this one seed (0: the CI seeds, or -sim.seeds random ones)")
	flagSeeds    = flag.Int("sim.seeds", 0, "how many seeds to run when -seed is not given (0: the CI seeds, ciSeeds)")
	flagRandom   = flag.Bool("sim.random", false, "draw the seeds at random instead of 1..sim.seeds")
	flagDuration = flag.Duration("sim.duration", 4*time.Second, "how long each seed submits jobs and injects faults")
	flagNodes    = flag.Int("sim.nodes", 3, "worker processes per seed")
	flagSkew     = flag.Duration("sim.skew", 2*time.Second, "largest clock skew of a worker, either way")
	flagBroken   = flag.String("sim.broken", "", "knownBroken switches to turn on (comma-separated, or all)")
	flagVerbose  = flag.Bool("sim.v", false, "log every event of the run")
	flagDrain    = flag.Duration("sim.drain", time.Minute, "how long the jobs may take to finish after the workload")
	flagCluster  = flag.Bool("sim.cluster", false, "run TestSimulation's seeds on a 3-master Redis Cluster")
)

// ciSeeds are the seeds CI runs on one node: between them they catch
// every mutant of the mutation self-test (mutants_test.go), within the CI
// step's few minutes.
var ciSeeds = []uint64{1, 4, 5}

// TestSimulation runs the chosen seeds (-seed, -sim.seeds, -sim.random)
// on one redis-server, or on a Redis Cluster under -sim.cluster.
func TestSimulation(t *testing.T) {
	skipUnderRace(t)
	kb, err := parseKnownBroken(*flagBroken)
	if err != nil {
		t.Fatal(err)
	}
	var seeds []uint64
	switch {
	case *flagSeed != 0:
		seeds = []uint64{*flagSeed}
	case *flagRandom:
		for range max(*flagSeeds, 1) {
			seeds = append(seeds, rand.Uint64()%1_000_000+1)
		}
	case *flagSeeds > 0:
		for i := range *flagSeeds {
			seeds = append(seeds, uint64(i+1))
		}
	default:
		seeds = ciSeeds
	}
	for _, seed := range seeds {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			runSeed(t, seed, kb, *flagCluster)
		})
	}
}

// TestSimulationCluster runs seed 1 (or -seed) with the whole world
// (Asynq, the job store, the limiter) on a 3-master Redis Cluster, so
// that CI's run of the package covers the Cluster too. Under -sim.cluster
// it leaves the seeds to TestSimulation, which then runs them on a
// Cluster.
func TestSimulationCluster(t *testing.T) {
	skipUnderRace(t)
	if *flagCluster {
		t.Skip("-sim.cluster: TestSimulation runs the seeds on a Redis Cluster")
	}
	kb, err := parseKnownBroken(*flagBroken)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(1)
	if *flagSeed != 0 {
		seed = *flagSeed
	}
	t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
		runSeed(t, seed, kb, true)
	})
}

func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled && os.Getenv("HUSH_SIM_RACE") == "" {
		// The race detector slows every worker several times over, and the
		// checks measure real time (gaps, rates, expiry): .ci/run runs the
		// simulation in a step of its own, without it.
		t.Skip("runs without -race (.ci/run: go test ./internal/faultsim); HUSH_SIM_RACE=1 runs it under -race")
	}
}

// replay is the command that runs seed again as this run did.
func replay(seed uint64, cluster bool) string {
	cmd := fmt.Sprintf("go test ./internal/faultsim -run 'TestSimulation$' -seed %d -sim.duration %s -sim.broken=%q", seed, *flagDuration, *flagBroken)
	if cluster {
		// A Cluster is in the slow tier (redistest.StartCluster).
		cmd = testkit.SlowEnv + "=all " + cmd + " -sim.cluster"
	}
	return cmd
}

// setupAllowance is how long the fakes and nodes may take to start.
const setupAllowance = 4 * time.Second

// sim is one seed's run.
type sim struct {
	t     *testing.T
	seed  uint64
	sc    *scenario
	kb    knownBroken
	world *world
	start time.Time

	fakes   fakes
	senders senders
	hook    *hookReceiver  // the webhook endpoint of every node
	obs     *worker.Client // reads statuses on a clean connection and clock

	// failures are the broken promises the checks found; quiet leaves
	// them to the caller (the mutation self-test) instead of failing.
	failures []failure
	quiet    bool

	mu    sync.Mutex
	gen   int
	nodes []*node // current node per slot
	all   []*node // every node ever started
	jobs  map[string]*jobRun
	prefs []prefWrite // the preference writes made, in order
	log   []string
}

// prefWrite is what the run learned about one preference write.
type prefWrite struct {
	user   string
	optOut []string
	// tried is when its first try began; answered when a try was
	// answered with success (zero: none was, though a try whose answer
	// was lost may have written it).
	tried, answered time.Time
}

// jobRun is what the run learned about one job.
type jobRun struct {
	spec     *jobSpec
	tried    bool      // a submission was made (maybe accepted)
	accepted bool      // a submission was answered as accepted
	submitAt time.Time // when the accepted answer came
	// firstTry and lastTry are when the first submission began and the
	// last one was answered (accepted or not).
	firstTry, lastTry time.Time
	// cancelled is when a cancellation was answered (zero: none was);
	// cancelTried says one was sent.
	cancelled   time.Time
	cancelTried bool
}

func (s *sim) logf(format string, args ...any) {
	msg := fmt.Sprintf("%7.3fs ", time.Since(s.start).Seconds()) + fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.log = append(s.log, msg)
	s.mu.Unlock()
	if *flagVerbose {
		s.t.Log(msg)
	}
}

// runSeed runs seed and fails t with every broken promise.
func runSeed(t *testing.T, seed uint64, kb knownBroken, cluster bool) {
	simulate(t, seed, kb, cluster, false)
}

// simulate runs seed and returns the broken promises; unless quiet, it
// also fails t with them, the run's event log and the replay command.
func simulate(t *testing.T, seed uint64, kb knownBroken, cluster, quiet bool) []failure {
	t.Logf("seed %d (replay: %s)", seed, replay(seed, cluster))
	w := startWorld(t, cluster)
	// The run starts once the nodes are up; absolute times (quiet hours)
	// are drawn against that start.
	s := &sim{t: t, seed: seed, kb: kb, world: w, start: time.Now().Add(setupAllowance), jobs: map[string]*jobRun{}, quiet: quiet}
	s.sc = newScenario(seed, s.start, *flagDuration, *flagNodes, *flagSkew, kb)
	s.fakes, s.senders = startFakes(t)
	s.hook = startHookReceiver(t, seed)
	err := s.sc.subscribe(func(hostile bool) (string, error) {
		if hostile {
			return s.fakes.hostile.Subscribe(s.fakes.vapidPublic)
		}
		return s.fakes.webpush.Subscribe(s.fakes.vapidPublic)
	})
	if err != nil {
		t.Fatal(err)
	}
	for tok, as := range s.sc.scripts {
		s.fakes.apns.Script(tok, as...)
		s.fakes.fcm.Script(tok, as...)
		s.fakes.webpush.Script(tok, as...)
		s.fakes.hostile.Script(tok, as...)
	}
	obsRdb := w.client(nil)
	t.Cleanup(func() { _ = obsRdb.Close() })
	s.obs = worker.NewClient(obsRdb)
	for i := range *flagNodes {
		n := s.startNode(i, s.sc.lateNode != i)
		s.nodes = append(s.nodes, n)
		s.all = append(s.all, n)
	}
	s.logf("scenario: %d jobs, faults %v, skews %v, policy %+v, max_rate %.0f/s, quiet %s",
		len(s.sc.jobs), s.sc.faults, s.sc.skews, s.sc.policy.Limits, s.sc.maxRate, s.sc.quiet)

	if late := time.Since(s.start); late > 0 {
		s.logf("setup took %s longer than allowed: the quiet hours come early in the run", late)
		t.Logf("setup took %s longer than allowed", late)
	}
	s.drive()
	s.drain(obsRdb)
	s.settleWebhook(obsRdb)
	s.logKeys(obsRdb)
	for _, n := range s.current() {
		if !n.hook.dead.Load() {
			n.shutdown(10 * time.Second)
		}
	}
	s.failures = s.check(obsRdb)
	t.Logf("seed %d: %d jobs, requests: APNs %d, FCM %d, Web Push %d (%d at the hostile service)", seed, len(s.sc.jobs),
		len(s.fakes.apns.Requests()), len(s.fakes.fcm.Requests()), len(s.fakes.webpush.Requests())+len(s.fakes.hostile.Requests()), len(s.fakes.hostile.Requests()))
	if len(s.failures) > 0 && !s.quiet {
		for _, l := range s.log {
			t.Log(l)
		}
		var b strings.Builder
		for _, f := range s.failures {
			b.WriteString(f.String() + "\n")
		}
		t.Errorf("seed %d broke %d promise(s):\n%sreplay: %s -sim.v",
			seed, len(s.failures), b.String(), replay(seed, cluster))
	}
	return s.failures
}

func (s *sim) current() []*node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*node(nil), s.nodes...)
}

// live is a node that is not killed, picked by i.
func (s *sim) live(i int) *node {
	ns := s.current()
	for k := range ns {
		n := ns[(i+k)%len(ns)]
		if !n.hook.dead.Load() {
			return n
		}
	}
	return nil
}

// drive submits the workload and injects the faults at their offsets.
func (s *sim) drive() {
	type event struct {
		at   time.Duration
		job  *jobSpec
		f    *fault
		pref *prefSpec
	}
	var evs []event
	for _, js := range s.sc.jobs {
		evs = append(evs, event{at: js.at, job: js})
	}
	for _, ps := range s.sc.prefs {
		evs = append(evs, event{at: ps.at, pref: ps})
	}
	for i := range s.sc.faults {
		evs = append(evs, event{at: s.sc.faults[i].at, f: &s.sc.faults[i]})
	}
	// Stable merge by offset: jobs and faults are each sorted.
	sortEvents(evs, func(e event) time.Duration { return e.at })
	var wg sync.WaitGroup
	// A user's writes are made in order, each after the one before it
	// was answered; writes of different users, and the rest of the
	// workload, go on meanwhile (an opt-out's answer waits its grace).
	prefDone := map[string]chan struct{}{} // a user's last write, closed once made
	for _, e := range evs {
		if d := time.Until(s.start.Add(e.at)); d > 0 {
			time.Sleep(d) // the simulation's own pacing
		}
		switch {
		case e.job != nil:
			s.submit(e.job, &wg)
		case e.pref != nil:
			prev, done := prefDone[e.pref.user], make(chan struct{})
			prefDone[e.pref.user] = done
			wg.Add(1)
			go func(ps *prefSpec) {
				defer wg.Done()
				defer close(done)
				if prev != nil {
					<-prev
				}
				s.writePrefs(ps)
			}(e.pref)
		default:
			s.inject(*e.f, &wg)
		}
	}
	wg.Wait()
}

func sortEvents[E any](evs []E, at func(E) time.Duration) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && at(evs[j]) < at(evs[j-1]); j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}

// submitTries is how many times a submission is made before the workload
// gives up on it, submitPause the pause between tries: a backend retries
// a submission answered with an error (the job id makes that
// idempotent), so that the workload lands under the Redis faults too.
const (
	submitTries = 8
	submitPause = 20 * time.Millisecond
)

// submit enqueues js through a live node, again through the next one when
// the answer is an error.
func (s *sim) submit(js *jobSpec, wg *sync.WaitGroup) {
	jr := &jobRun{spec: js}
	s.mu.Lock()
	s.jobs[js.job.ID] = jr
	s.mu.Unlock()
	now := time.Now().Truncate(time.Millisecond)
	if js.sendAtIn > 0 {
		t := now.Add(js.sendAtIn)
		js.job.SendAt = &t
	}
	if js.expiresIn > 0 {
		t := now.Add(js.expiresIn)
		js.job.ExpiresAt = &t
	}
	jr.firstTry = time.Now()
	for try := range submitTries {
		if try > 0 {
			time.Sleep(submitPause) // the simulation's own pacing
		}
		n := s.live(js.seq + try)
		if n == nil {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		acc, err := n.w.Client().Enqueue(ctx, js.job)
		cancel()
		jr.tried, jr.lastTry = true, time.Now()
		if err == nil {
			jr.accepted, jr.submitAt = true, time.Now()
			s.logf("submit %s via node %d: %+v (%s)", js.job.ID, n.id, acc, describe(js))
			break
		}
		s.logf("submit %s via node %d: %v", js.job.ID, n.id, err)
		if _, ok := errors.AsType[*payload.ValidationError](err); ok {
			break
		}
	}
	if js.cancelAfter > 0 && jr.tried {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(js.cancelAfter) // the simulation's own pacing
			s.cancel(jr, js.seq)
			if js.cancelTwice {
				s.cancel(jr, js.seq+1)
			}
		}()
	}
}

// cancelTries is how many times a cancellation is sent before the
// workload gives up on it, cancelPause the pause between tries: a backend
// retries a cancellation answered with an error, as it retries a
// submission.
const (
	cancelTries = 8
	cancelPause = 500 * time.Millisecond
)

// cancel cancels jr's job through a live node, again through the next one
// while the answer is an error.
func (s *sim) cancel(jr *jobRun, pick int) {
	var res worker.CancelResult
	var n *node
	for try := range cancelTries {
		if try > 0 {
			time.Sleep(cancelPause) // the simulation's own pacing
		}
		if n = s.live(pick + try); n == nil {
			return
		}
		s.mu.Lock()
		jr.cancelTried = true
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		r, err := n.w.Client().Cancel(ctx, jr.spec.job.ID)
		cancel()
		if err == nil {
			res = r
			break
		}
		s.logf("cancel %s via node %d: %v", jr.spec.job.ID, n.id, err)
		if try == cancelTries-1 {
			return
		}
	}
	s.mu.Lock()
	if jr.cancelled.IsZero() {
		jr.cancelled = time.Now()
	}
	s.mu.Unlock()
	s.logf("cancel %s via node %d (skew %s): cancelled=%v", jr.spec.job.ID, n.id, n.skew, res.Cancelled)
}

// writePrefs writes ps's preferences with a live node's limiter of the
// plain app (worker.Client.PutPreferences, as the API writes them),
// again through the next node while the answer is an error. A later
// write of the same user waits for it: the workload's writes of one user
// are made in order.
func (s *sim) writePrefs(ps *prefSpec) {
	w := prefWrite{user: ps.user, optOut: ps.optOut, tried: time.Now()}
	for try := range prefTries {
		if try > 0 {
			time.Sleep(prefPause) // the simulation's own pacing
		}
		n := s.live(try)
		if n == nil {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := n.w.Client().PutPreferences(ctx, appPlain, ps.user, throttle.Preferences{OptOut: ps.optOut})
		cancel()
		if err == nil {
			w.answered = time.Now()
			s.logf("preferences of %s via node %d: opted out of %v", ps.user, n.id, ps.optOut)
			break
		}
		s.logf("preferences of %s via node %d: %v", ps.user, n.id, err)
	}
	s.mu.Lock()
	s.prefs = append(s.prefs, w)
	s.mu.Unlock()
}

// inject applies fault f.
func (s *sim) inject(f fault, wg *sync.WaitGroup) {
	n := s.current()[f.node]
	switch f.kind {
	case "kill":
		if n.hook.dead.Load() {
			return
		}
		n.kill()
		s.logf("kill -9 node %d", n.id)
		// The pod comes back once its tasks' leases have lapsed (rescue).
	case "shutdown":
		if n.hook.dead.Load() {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.logf("SIGTERM node %d", n.id)
			if !n.shutdown(30 * time.Second) {
				s.logf("node %d did not stop within 30s", n.id)
			}
			s.replace(n.id, true)
		}()
	case "redis":
		n.hook.rate.Store(200)
		s.logf("redis faults on node %d for %s", n.id, f.span)
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(f.span) // the simulation's own pacing
			n.hook.rate.Store(0)
			s.logf("redis faults off on node %d", n.id)
		}()
	case "reload":
		if err := n.apps.Swap(appSet(s.sc, n.lims, n.ss, true)...); err != nil {
			s.t.Error(err)
		}
		s.logf("node %d reloads its apps: now knows %s", n.id, appLate)
	}
}

// replace starts a new node in slot id (a pod restarted).
func (s *sim) replace(id int, knowsLate bool) {
	n := s.startNode(id, knowsLate)
	s.mu.Lock()
	s.nodes[id] = n
	s.all = append(s.all, n)
	s.mu.Unlock()
	s.logf("node %d started (generation %d, skew %s)", id, n.gen, n.skew)
}

// leaseStale is how long a task's lease may go without being extended
// before the simulation treats its holder as dead: two missed heartbeats
// (Asynq extends leases every 5 s, to 30 s ahead).
const leaseStale = 12 * time.Second

// rescue does what time does for a killed node's tasks: a lease not
// extended for leaseStale is moved past Asynq's lapse (30 s and a 30 s
// margin), and a node restarts so that its recoverer runs at once (Asynq
// runs it at start and then every minute). It reports whether it found
// any.
func (s *sim) rescue(rdb redis.UniversalClient) bool {
	ctx := context.Background()
	var keys []string // a queue's keys are on one master, queues on every one
	err := eachMaster(ctx, rdb, func(ctx context.Context, m *redis.Client) error {
		ks, err := m.Keys(ctx, "asynq:{*}:lease").Result()
		keys = append(keys, ks...)
		return err
	})
	if err != nil {
		s.logf("rescue: %v", err)
		return false
	}
	cutoff := time.Now().Add(30*time.Second - leaseStale).Unix()
	found := 0
	for _, k := range keys {
		ids, err := rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: k, ByScore: true, Start: "-inf", Stop: strconv.FormatInt(cutoff, 10)}).Result()
		if err != nil {
			continue
		}
		for _, id := range ids {
			rdb.ZAdd(ctx, k, redis.Z{Score: float64(time.Now().Add(-61 * time.Second).Unix()), Member: id})
			found++
		}
	}
	if found == 0 {
		return false
	}
	s.logf("rescue: %d lapsed leases", found)
	// Restart the killed nodes; with none, restart a live one gracefully.
	restarted := false
	for _, n := range s.current() {
		if n.hook.dead.Load() {
			s.replace(n.id, true)
			restarted = true
		}
	}
	if !restarted {
		n := s.live(0)
		n.shutdown(30 * time.Second)
		s.replace(n.id, true)
	}
	return true
}

// drain waits until every job tried is final or unknown, rescuing lapsed
// leases, for at most drainTimeout.
func (s *sim) drain(rdb redis.UniversalClient) {
	deadline := time.Now().Add(*flagDrain)
	lastRescue := time.Now()
	for time.Now().Before(deadline) {
		open := 0
		for _, jr := range s.jobList() {
			if !jr.tried {
				continue
			}
			st, err := s.obs.Status(context.Background(), jr.spec.job.ID)
			if errors.Is(err, worker.ErrNotFound) {
				continue
			}
			if err != nil || !final(st) {
				open++
			}
		}
		if open == 0 {
			s.logf("drained")
			return
		}
		if time.Since(lastRescue) > 3*time.Second {
			lastRescue = time.Now()
			s.rescue(rdb)
		}
		time.Sleep(250 * time.Millisecond) // the simulation's own pacing
	}
	s.logf("drain timed out")
	insp := asynq.NewInspectorFromRedisClient(rdb)
	qs, _ := insp.Queues()
	for _, q := range qs {
		if info, err := insp.GetQueueInfo(q); err == nil && info.Size > 0 {
			s.logf("queue %s: pending %d active %d scheduled %d retry %d archived %d", q, info.Pending, info.Active, info.Scheduled, info.Retry, info.Archived)
		}
		for _, state := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){insp.ListArchivedTasks, insp.ListRetryTasks, insp.ListScheduledTasks} {
			ts, _ := state(q)
			for _, ti := range ts {
				s.logf("  task %s %s state %s retried %d next %s last error: %s", ti.Type, ti.ID, ti.State, ti.Retried, ti.NextProcessAt.Format("15:04:05"), ti.LastErr)
			}
		}
	}
}

func (s *sim) jobList() []*jobRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*jobRun, 0, len(s.jobs))
	for _, jr := range s.jobs {
		out = append(out, jr)
	}
	return out
}

// final reports whether every recipient of st has a final state.
func final(st worker.JobStatus) bool {
	sum := 0
	for k, v := range st.Counts {
		if k != "pending" {
			sum += v
		}
	}
	return st.Counts["pending"] == 0 && sum == st.Recipients
}

// describe is a job's shape for the event log.
func describe(js *jobSpec) string {
	j := js.job
	var b strings.Builder
	fmt.Fprintf(&b, "app %s, %s, %d recipients", j.App, j.Priority, len(j.Recipients))
	if j.Category != "" {
		fmt.Fprintf(&b, ", category %s", j.Category)
	}
	if j.CollapseKey != "" {
		fmt.Fprintf(&b, ", collapse %s for %s", j.CollapseKey, j.Recipients[0].UserID)
	}
	if j.SendAt != nil {
		fmt.Fprintf(&b, ", send_at %s", j.SendAt.Format("15:04:05.000"))
	}
	if j.ExpiresAt != nil {
		fmt.Fprintf(&b, ", expires_at %s", j.ExpiresAt.Format("15:04:05.000"))
	}
	if js.cancelAfter > 0 {
		fmt.Fprintf(&b, ", cancel after %s", js.cancelAfter)
	}
	return b.String()
}
