// Package faultsim is hush's seeded fault simulation, in the spirit of
// FoundationDB's simulation and TigerBeetle's VOPR: several worker.Worker
// processes (real Asynq servers, each on a Redis client of its own) in one
// test process on a private redis-server or a private 3-master Redis
// Cluster, the real APNs and FCM SDK senders against the fake providers
// (providers/fake) recording every arrival, and a workload and faults
// drawn from one seed, with Web Push devices through the real sender
// against fake push services. At the end it checks every promise of
// docs/delivery.md from the arrival log, the job statuses and the keys
// left in Redis.
//
// The package has no API: it is its tests (TestSimulation,
// TestSimulationCluster). It may import anything in the module; nothing
// imports it.
//
// # One node or a Cluster
//
// A run's Redis is one redis-server, or a Redis Cluster of three masters
// without replicas (redistest.StartCluster) that holds the whole world:
// Asynq's queues, the job store and the limiter, each worker on a
// redis.ClusterClient of its own. Every client comes from one place
// (world.client in redis_test.go). On a Cluster a worker's fault hook is
// on its client for each master (ClusterClient.OnNewNode), so a kill or
// a Redis fault cuts its connections to every master; the commands that
// see one node's data (KEYS for the lease rescue and the memory check,
// DBSIZE) go to every master (eachMaster).
//
// # What a seed draws
//
// The workload: users with one or two devices (APNs, FCM, Web Push:
// subscriptions at two fake push services, one of them slow to dial and
// to shake hands), some of whose tokens answer 429 with and without a
// Retry-After of 3 to 4 s (above hush's own second of margin, so a retry
// that ignores it is early), 503, slowly, or are dead; Web Push ones also
// endless bodies, a per-subscription 403 and an absurd Retry-After (ten
// years). Every seed has a token throttled with a Retry-After and a
// subscription at the hostile service. Short rules (2 or 3 per 2 s, a gap
// of 600 to 900 ms: above twice the 250 ms tolerance, so a gap kept by
// half fails the check; a promo category of 1/2s, an ops category outside
// the global rules, a night category whose quiet hours are a few seconds
// of the run, with three night pushes submitted inside them); fan-out
// jobs with categories, send_at, expires_at and the bypass priority (with
// send_at too); single pushes with collapse keys, whose users' second
// devices refuse every other push with a 503, so older pushes' retries
// meet newer ones; a collapse pair at a calm moment of the run (no fault
// for pairCalm): an older push whose retry books while a newer push of
// its key is held by its category's gap beyond worker.CollapseMargin, so
// that a limiter ordering the key's pushes by booking collapses the newer
// one; two users whose preferences change while their pushes are held
// (an opt category with a gap of optGap): one opts out of it (and of a
// required category) while a fan-out of it waits for its slot, and gets
// pushes of it, a critical one and a required one once the opt-out was
// answered; the other opts out and back in before the slot; a third gets
// a push booked before its opt-out and sent, waited for in place, after
// the write (so an answer that does not wait its grace is caught); each
// write made with a node's Client (worker.Client.PutPreferences, as the
// API makes it) and retried while its answer is an error; a rated app
// with a max_rate on every platform; jobs of an app one worker loads only
// mid-run; cancellations, some sent twice through two workers with skewed
// clocks, each retried (up to cancelTries) while its answer is an error,
// as a backend would, and one at a calm moment (cancelNear) of a push
// booked before it and sent, waited for in place, after it was written.
// The
// apps' limiters are scoped as production scopes them: the plain and
// late apps share one throttle_group's scope, the rated app has its own.
// TestWorkloadCoversProduction checks that every seed has each of these.
//
// The faults: a worker killed as kill -9 would (its Redis commands fail
// from then on, its provider calls under way are abandoned and their
// answers lost, it starts no more), a graceful shutdown and restart,
// Redis commands failing for a moment on one worker (a go-redis hook;
// half of them fail after Redis ran them, so the reply is lost), clock
// skew per worker (Options.Clock; the limiter keeps the Redis server's
// clock), and an apps reload on the one worker that started without an
// app.
//
// Asynq leaves a killed worker's tasks leased for 30 s and recovers them
// at a server's start and then every minute. The simulation compresses
// that: a lease not extended for leaseStale is moved past its lapse and a
// worker restarts (the pod coming back), so its recoverer runs at once.
//
// # The checks
//
// A run leaves a history (history_test.go: the fakes' requests, the job
// statuses, the pushes a kill may have sent twice, the keys left in
// Redis); each check is a function of it alone (check_test.go,
// collapse_check_test.go), with a table test of histories that must pass
// and must fail (TestChecks). Each failure names its check in brackets
// and prints the arrivals that show it:
//
//   - never-lost: every accepted job ends with every recipient in a
//     documented final state, and in one the run allows: token_invalid
//     only for a recipient whose every device is dead, expired only with a
//     deadline, collapsed only with a collapse key, cancelled only when a
//     cancellation was sent, opted_out only after an opt-out was written, throttle_full only when a user could hold the
//     pending cap, failed only for a recipient whose devices answer an
//     absurd Retry-After.
//   - counts-equal-arrivals: a job's delivered count is the number of its
//     recipients the providers pushed to, give or take recipients whose
//     push was excused by a kill.
//   - never-twice: no device gets a job twice, except the push (that job,
//     that device) whose call was in flight at a kill, or answered within
//     recordWindow before it (docs/delivery.md section 9); a kill excuses
//     nothing else sent to that device.
//   - never-after-expiry, nothing-after-cancel: no request reaches a
//     provider after the job's expires_at or after its cancellation was
//     answered (loopback, 25 ms, for the wire: the docs give these no
//     tolerance; for expiry also how far the run's slowest clock is
//     behind, as a worker reads expires_at on its own clock: a request
//     197 ms late from a node 200 ms behind is the promise kept).
//   - never-early: the caps (every rolling window), the gap, the quiet
//     hours and send_at hold per user within tolerance, 250 ms
//     (docs/delivery.md section 8, "The rules hold"); a rated app's
//     requests per second and platform stay within R + 1 + ceil(2 R
//     0.025) (docs/configuration.md, "Send rates").
//   - retry-after: after a 429 with a Retry-After, the same push is not
//     asked of the provider again sooner (docs/delivery.md section 5),
//     less the wire's time and the run's spread of worker clocks (the
//     retry's time is read on one clock and may be waited for on another).
//   - collapse: a collapsed push never arrives; a push is collapsed only
//     when another of its key has a later or equal accepted_at, read from
//     the statuses of every job hush knows, and that accepted_at lies
//     within the job's submissions on the workers' clocks; and an older
//     push's retry, booked after a newer push of its key and while the
//     limiter remembers that push (docs/limiter.md, "The newest accepted
//     push wins in collapse"), never reaches a device after the newer one.
//   - opted-out: nothing of a category a user opted out of (not a
//     required one, nor a critical push) reaches a provider more than
//     the wire's 25 ms after the opt-out's write was answered
//     (docs/delivery.md section 3c), until the user's next
//     write; a job submitted after its recipient's opt-out ends opted_out
//     for that recipient; and opted_out (never-lost) only for a recipient
//     whose user was written to opt out of the job's category.
//   - unknown-app: a job of an app one worker loads late does not end
//     failed.
//   - memory: after the run every key of the limiter, the pacer and the
//     job store has an expiry, but a user's preferences (kept until
//     written again or deleted), and a user's limiter keys hold at most
//     memoryBound bytes.
//   - webhook: every event hush:events holds reached the webhook with a
//     2xx at least once, and every POST verifies (Standard Webhooks
//     signature), names an event hush wrote and carries it as written
//     (docs/events.md, "Delivery"). Every node posts to one receiver
//     that refuses a share of the first and second POSTs of each event
//     (500, or 503 with a Retry-After), with a short retry schedule
//     (hookRetries) and killed nodes' events claimed after
//     hookClaimAfter; the run waits up to hookSettle after the drain.
//   - events: for each final state a finished job's status counts,
//     hush:events holds as many events of that state for the job
//     (token_invalid, reported per device, left out; docs/events.md).
//   - lookup: the recipients lookup of every finished job lists each of
//     its recipients, in the states its status counts, a failed one with
//     its reason, and none delivered that no provider pushed to
//     (docs/api.md, the recipients lookup).
//
// # The mutation self-test
//
// TestMutants (mutants_test.go) runs the simulation with deliberate bugs,
// one at a time, each a few lines in worker/ (and its parts), throttle/
// or payload/ behind mutant.On(name) (internal/mutant; throttle and
// payload, which import only the standard library, have their own
// mutant(name)): every ordinary build answers a constant false, one built
// with -tags hushmutant reads HUSH_MUTANT. Each mutant breaks one promise, and the test asserts that
// the check of that promise fails at the mutant's seeds:
//
//	go test -tags hushmutant ./internal/faultsim -run TestMutants -v -timeout 30m
//	go test -tags hushmutant ./internal/faultsim -run TestMutants -sim.mutant gapHalf -seed 7 -v
//
// # Known broken
//
// A feature that breaks a promise on today's code is left out of the
// workload unless switched on with -sim.broken (names, comma-separated, or
// all); the check it would fail stays on, so switching it on reproduces
// the failure:
//
//   - skewStall: workers' clocks are skewed by up to -sim.skew (2 s); off,
//     by at most skewSafe (300 ms), the tolerance docs/delivery.md states.
//     At 2 s, a bypass push's send_at, decided on the worker's clock, is
//     met up to the skew early (never-early/send_at).
//
// # Open defects
//
// Failures the simulation has shown on hush, each with a seed; those
// fixed are in CHANGELOG.md. Still open:
//
//   - retry-after (seed 5, once): an FCM token answering 429 with a
//     Retry-After of 3 s was asked again 38 ms later (a job with
//     send_at). Seed 1's like failure (a re-run handing the recipient
//     over again at once) is fixed (CHANGELOG.md); whether seed 5's was
//     the same is not known: not met since.
//   - never-lost (seed 5, once in five runs): a job accepted by its
//     submission is unknown to hush after the run (s5-j017); not
//     diagnosed.
//   - webhook (seed 3, once in six runs): an event waits for its retry
//     past the settle with the retrier lease held; not reproduced since
//     the lease was shortened, not diagnosed.
//   - never-lost under -race (HUSH_SIM_RACE=1): seed 1 passed once after
//     the backoff fix; not run since.
//   - never-early/max_rate (seed 9, once, and again once in two runs of a
//     later build): 8 sends of the rated app within one second under a
//     max_rate of 5/s (the check's bound is 7), in pairs on the same
//     millisecond of the 200 ms grid, as if one turn were used twice; not
//     diagnosed.
//   - never-early/send_at (not seen): the check allows 250 ms and skews go
//     to 300 ms, and a worker waits for a bypass push's send_at on its own
//     clock: a node more than 250 ms ahead could fail it, as expiry did
//     before it allowed the slowest clock.
//
// # Running and replaying
//
// .ci/run runs it in a step of its own, without the race detector (its
// checks measure real time, and -race slows every worker several times
// over): go test ./internal/faultsim (TestSimulation: the CI seeds,
// ciSeeds, a few seconds of workload each, then a drain, on one node;
// TestSimulationCluster: seed 1 on a Cluster; the checks' table tests).
// The CI seeds are chosen so that each of the mutation self-test's
// mutants is caught by at least one of them (mutants_test.go lists the
// seeds per mutant). Under -race it skips unless HUSH_SIM_RACE=1 is set.
// It needs a real
// redis-server on PATH (redistest starts a private one per seed); without
// one it skips, and fails under CI=true. The Cluster variant needs
// redis-cli too, and starting a Cluster puts it in the slow tier
// (testkit.Slow): locally it runs with HUSH_TESTS=all, under CI always.
//
// A soak runs more seeds, drawn at random, with a longer workload (and a
// longer drain for it):
//
//	go test ./internal/faultsim -run 'TestSimulation$' -sim.random -sim.seeds 50 -sim.duration 10s -sim.drain 3m -timeout 4h
//
// -sim.seeds N without -sim.random runs seeds 1 to N instead of the CI
// seeds.
//
//	go test ./internal/faultsim -run 'TestSimulation$' -v
//	go test ./internal/faultsim -run 'TestSimulation$' -seed 7 -sim.v          # replay seed 7, logging every event
//	go test ./internal/faultsim -run 'TestSimulation$' -sim.random -sim.seeds 20 -sim.duration 10s -timeout 1h
//	go test ./internal/faultsim -run 'TestSimulation$' -seed 3 -sim.broken=skewStall
//	HUSH_TESTS=all go test ./internal/faultsim -run TestSimulationCluster -v   # seed 1 on a Cluster, as CI runs it
//	HUSH_TESTS=all go test ./internal/faultsim -run 'TestSimulation$' -sim.cluster -sim.seeds 4 -timeout 20m
//	HUSH_TESTS=all go test ./internal/faultsim -run 'TestSimulation$' -sim.cluster -seed 7 -sim.v
//
// -sim.cluster runs TestSimulation's seeds on a Cluster (and
// TestSimulationCluster then skips); TestSimulationCluster runs seed 1, or
// -seed. The -run pattern ends in $ so that a replay of one variant does
// not run the other too. A failure prints its seed and the command that
// replays it (with -sim.cluster for a Cluster run), with the run's event
// log. A replay draws the same workload and faults; the
// interleaving of goroutines, Redis and the network is not replayed, so a
// rare failure may take a few runs of its seed. Other flags: -sim.nodes
// (workers, default 3), -sim.skew (largest clock skew, with skewStall),
// -sim.drain (how long jobs may take to finish after the workload, 1m;
// the rated app's jobs send to 20 users each at a few per second, so a
// long -sim.duration needs a longer -sim.drain, or a never-lost failure
// may only mean the backlog had not drained yet).
//
// When a fix lands, delete its switch so that the workload always has
// the feature.
package faultsim
