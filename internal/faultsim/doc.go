// Package faultsim is hush's seeded fault simulation, in the spirit of
// FoundationDB's simulation and TigerBeetle's VOPR: several worker.Worker
// processes (real Asynq servers, each on a Redis client of its own) in one
// test process on a private redis-server, the real APNs and FCM SDK
// senders against the fake providers (providers/fake) recording every
// arrival, and a workload and faults drawn from one seed. At the end it
// checks every promise of docs/delivery.md from the arrival log and the
// job statuses.
//
// The package has no API: it is its test (TestSimulation). It may import
// anything in the module; nothing imports it.
//
// # What a seed draws
//
// The workload: users with one or two devices (APNs, FCM), some of whose
// tokens answer 429 with and without Retry-After, 503, slowly, or are
// dead; short rules (2 or 3 per 2 s, a gap of 100 to 400 ms, a promo
// category of 1/2s, an ops category outside the global rules, a night
// category whose quiet hours are a few seconds of the run); fan-out jobs
// with categories, send_at, expires_at and the bypass priority; single
// pushes with collapse keys; a rated app with a max_rate; cancellations.
//
// The faults: a worker killed as kill -9 would (its Redis commands fail
// from then on, its provider calls under way are abandoned and their
// answers lost, it starts no more), a graceful shutdown and restart,
// Redis commands failing for a moment on one worker (a go-redis hook;
// half of them fail after Redis ran them, so the reply is lost), clock
// skew per worker (Options.Clock; the limiter keeps the Redis server's
// clock), and with unknownApp an apps reload on the one worker that
// started without an app.
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
//   - collapse: a collapsed push never arrives, and the newest push of a
//     user's collapse key is not the one collapsed.
//   - unknown-app: a job of an app one worker loads late does not end
//     failed (the workload's answers never fail a delivery for good).
//   - memory: once the run is over a user's limiter keys hold at most
//     memoryBound bytes.
//
// # Known broken
//
// Features that break a promise on today's code are left out of the
// workload unless switched on with -sim.broken (names, comma-separated, or
// all); the checks stay on, so switching one on reproduces its failure.
// Each names its item of issue 39:
//
//   - heldMaxRate (item 1): the rated app's pushes may be held (send_at,
//     the global caps); off, they are in the ops category and never held.
//   - retryCollapse (item 2): collapse users' tokens answer 429 and 503
//     too; off, they answer 200.
//   - cancelReadFault (item 3): Redis faults may overlap cancellations;
//     off, they end before the first job that is cancelled.
//   - repeatCancelSkew (item 4): some jobs are cancelled twice, through two
//     workers with skewed clocks; off, once.
//   - pacedExpiry (item 5): the rated app's pushes may have expires_at;
//     off, they have none.
//   - collapseMemory (item 6): the memory check covers users with collapse
//     keys; off, it skips them.
//   - unknownApp (item 8): jobs of an app one worker loads only mid-run;
//     off, every worker knows every app.
//   - skewStall (not in issue 39): workers' clocks are skewed by up to
//     -sim.skew (2 s); off, by at most skewSafe (300 ms). With 2 s, seeds
//     1 and 2 leave deliveries deferred by the limiter again and again,
//     never final (never-lost).
//   - bypassSendAt (not in issue 39): jobs of the bypass priority may have
//     send_at; off, they have none. Seed 1 with heldMaxRate on sends one
//     such job's pushes a second before its send_at (never-early/send_at).
//
// What the switches reproduce, each with -sim.seeds 3 (a failure may take
// a few runs: the interleaving is not replayed): unknownApp breaks
// unknown-app on seeds 1 and 3; pacedExpiry breaks never-early/max_rate on
// seed 1; cancelReadFault has broken never-twice on seed 1; skewStall
// leaves jobs not final (never-lost) on seeds 1 and 2. heldMaxRate,
// retryCollapse, repeatCancelSkew and collapseMemory have not failed yet at
// these sizes: their items need tests of their own (or longer runs).
//
// # Running and replaying
//
// CI runs it with the rest: go test ./internal/faultsim (seeds 1 and 2, a
// few seconds of workload each, then a drain). It needs a real
// redis-server on PATH (redistest starts a private one per seed); without
// one it skips, and fails under CI=true.
//
//	go test ./internal/faultsim -run TestSimulation -v
//	go test ./internal/faultsim -run TestSimulation -seed 7 -sim.v          # replay seed 7, logging every event
//	go test ./internal/faultsim -run TestSimulation -sim.random -sim.seeds 20 -sim.duration 10s -timeout 1h
//	go test ./internal/faultsim -run TestSimulation -seed 3 -sim.broken=pacedExpiry
//
// A failure prints its seed and the command that replays it, with the
// run's event log. A replay draws the same workload and faults; the
// interleaving of goroutines, Redis and the network is not replayed, so a
// rare failure may take a few runs of its seed. Other flags: -sim.nodes
// (workers, default 3), -sim.skew (largest clock skew, with skewStall),
// -sim.drain (how long jobs may take to finish after the workload, 1m;
// heldMaxRate and pacedExpiry send to 20 users per rated job at a few per
// second, so give them -sim.drain 3m or a never-lost failure may only
// mean the backlog had not drained yet).
//
// When a fix lands, delete its switch so that the workload always has
// the feature.
package faultsim
