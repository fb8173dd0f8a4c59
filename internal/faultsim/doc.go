// Package faultsim is hush's seeded fault simulation, in the spirit of
// FoundationDB's simulation and TigerBeetle's VOPR: several worker.Worker
// processes (real Asynq servers, each on a Redis client of its own) in one
// test process on a private redis-server or a private 3-master Redis
// Cluster, the real APNs and FCM SDK senders against the fake providers
// (providers/fake) recording every arrival, and a workload and faults
// drawn from one seed. At the end it checks every promise of
// docs/delivery.md from the arrival log and the job statuses.
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
// The workload: users with one or two devices (APNs, FCM), some of whose
// tokens answer 429 with and without Retry-After, 503, slowly, or are
// dead; short rules (2 or 3 per 2 s, a gap of 100 to 400 ms, a promo
// category of 1/2s, an ops category outside the global rules, a night
// category whose quiet hours are a few seconds of the run); fan-out jobs
// with categories, send_at, expires_at and the bypass priority (with
// send_at too); single pushes with collapse keys, whose users' second
// devices answer 503 first; a rated app with a max_rate; jobs of an app
// one worker loads only mid-run; cancellations, some answered twice
// through two workers with skewed clocks.
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
// Each failure names its check in brackets:
//
//   - never-lost: every accepted job ends with every recipient in a
//     documented final state.
//   - counts-equal-arrivals: a job's delivered count is the number of its
//     recipients the providers saw a 200 for (give or take recipients whose
//     calls were in flight at a kill).
//   - never-twice: no device gets a job twice, except a device whose call
//     was in flight at a kill, or answered within recordWindow before it
//     (docs/delivery.md section 9).
//   - never-after-expiry, nothing-after-cancel: no request reaches a
//     provider after the job's expires_at or after its cancellation was
//     answered (each with 25 ms for loopback).
//   - never-early: the caps, the gap, the quiet hours and send_at hold per
//     user within 250 ms (section 8); a rated app's requests per second
//     stay within R + 1 + ceil(2 R 0.025) (configuration.md, Send rates).
//   - collapse: a collapsed push never arrives, and a push is collapsed
//     only when another of its key has a later or equal accepted_at,
//     read from the statuses of every job hush knows (a submission
//     answered only with errors may have been accepted all the same);
//     and that accepted_at lies within the job's submissions on the
//     workers' clocks.
//   - unknown-app: a job of an app one worker loads late does not end
//     failed (the workload's answers never fail a delivery for good).
//   - memory: once the run is over a user's limiter keys hold at most
//     memoryBound bytes (on a Cluster, searched on every master).
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
//     met up to the skew early (never-early/send_at). (Collapse orders
//     pushes by accepted_at, their accepting process's clock, as the
//     collapse check does, so a push accepted within the skew of another
//     may lose to it without breaking that check.)
//
// Every other item of issue 39 the simulation can reach is in the default
// workload: collapse users' tokens answer 429 and 503 (item 2), Redis
// faults overlap cancellations and hit every node at each cancellation's
// answer (item 3), jobs are
// cancelled twice through workers with skewed clocks (item 4), the memory
// check covers collapse users (item 6), an app is loaded by one worker
// only mid-run (item 8), bypass jobs carry send_at, fan-outs of the rated
// app (max_rate 4 to 8/s) go to 20 users of two devices each, half of them
// held by send_at, so held rated waves keep max_rate (item 1), and rated
// pushes carry expires_at (item 5).
//
// Failures the default workload meets now and then have no switch,
// since the faults that cause them are the simulation's own:
//
//   - never-twice without a kill (seed 3 on a Cluster), after a lost
//     answer to a held task's creation, seen once, undiagnosed.
//   - never-lost (seed 3, on one node and on a Cluster): a recipient of
//     rated job s3-j036 is still waiting for a retry when the drain ends.
//     A provider's 429 without Retry-After backs off by the delivery's
//     attempt count, which counts its attempts left late for their slot
//     too: after eight, the retry waits 2 to 4 minutes.
//
// # Running and replaying
//
// .ci/run runs it in a step of its own, without the race detector (its
// checks measure real time, and -race slows every worker several times
// over): go test ./internal/faultsim (TestSimulation: seeds 1 and 2, a few
// seconds of workload each, then a drain, on one node; TestSimulationCluster:
// seed 1 on a Cluster). Under -race it skips unless HUSH_SIM_RACE=1
// is set; under -race seeds 1 and 2 have failed never-lost now and then,
// undiagnosed. It needs a real
// redis-server on PATH (redistest starts a private one per seed); without
// one it skips, and fails under CI=true. The Cluster variant needs
// redis-cli too, and starting a Cluster puts it in the slow tier
// (testkit.Slow): locally it runs with HUSH_TESTS=all, under CI always.
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
