// Package throttle is hush's per-user limiter: several exact rolling windows
// ("10/1m,100/24h") plus a minimum gap between two actions, decided
// atomically in Redis (Redis) or in process memory (Memory) with the same
// semantics.
//
// # Semantics
//
// Times are integer milliseconds. A user's set holds entries: recorded
// actions (Allow) and bookings (Reserve), possibly in the future. Two
// entries share a window of rule N/W when they are less than W apart, so an
// entry exactly W old no longer counts. A time t is feasible when adding it
// leaves no window of any rule with more than N entries around t and t is at
// least MinGap from every entry (exactly MinGap is allowed). Allow records
// the action only when now is feasible; otherwise it returns the time left
// until the earliest feasible instant (RetryAfter) and records nothing, so a
// flood of denied attempts neither grows the set nor slows decisions.
// Reserve records the earliest feasible instant (possibly in a hole between
// bookings) under a member id and returns the same slot for the same member.
//
// Reserve may refuse a new member instead, booking nothing; the
// Reservation's Refused says why (empty: the member holds At).
// Options.MaxPending caps the entries after now one user may hold: at the
// cap a new member is RefusedFull, with At the user's earliest entry after
// now (no place frees before it comes due, unless a booking is released).
// Entries at or before now do not count, and Allow, which records only at
// now, is never refused by the cap. Request.NotAfter (ReserveBatch) refuses
// a new member whose earliest slot is after it: RefusedLate, with At and
// Wait that slot; exactly NotAfter is booked. The cap is checked before the
// slot is sought, so a user at the cap is RefusedFull whatever NotAfter
// says. A member already booked gets its slot back (Existing) whatever the
// cap and NotAfter say.
//
// DeniedBy names, among the rules that deny now, the one that on its own
// would be satisfied latest (the first such rule on a tie, limits in order
// before the gap): the rule to blame for most of the wait.
//
// Entries at or before now - max(longest window, MinGap) are trimmed when a
// user's set is written; they can no longer affect any decision. Time is
// expected to move forward per user; an injected clock that goes backwards
// sees only what trimming left.
//
// # Redis schema
//
// One sorted set per user, key Options.Prefix (default "hush:throttle:") +
// "{" + user + "}": member = "allow:<random hex>" for Allow or the caller's
// member id for Reserve, score = time in ms. The braces are a hash tag, so
// every single-user script touches one key in one slot and works on Redis
// Cluster. The
// key's TTL (PEXPIRE) covers the newest entry plus max(longest window,
// MinGap); with an injected clock it is at least an hour, because TTLs tick
// in the server's real time.
//
// Every operation is one Lua script (allow_one.lua, reserve_one.lua,
// release.lua, status.lua; the decision code of Allow and Reserve lives in
// allow.lua and reserve.lua, shared with the batch scripts), prefixed with
// lib.lua, embedded and run with EVALSHA (EVAL when the server lacks it);
// Reset is a DEL. With no entry after now, Allow costs O(log n) in calls
// that answer integers: a ZCOUNT for entries after now (a ZREVRANGE 0 0 for
// the last entry instead when there is a gap), a ZCOUNT per rule, and when a
// rule denies a ZREVRANGE by index for its N-th most recent entry; when it
// records, ZADD and PEXPIRE, with ZREMRANGEBYSCORE only when ZCARD shows
// entries outside the horizon. Only when bookings lie after now does a
// script read the user's recent entries; it then sweeps
// the instants each rule rules out (for N entries less than W apart,
// (last-W, first+W); around each entry, (e-MinGap, e+MinGap)) in one pass
// per rule, O(entries x rules), landing on now or some e+W or e+MinGap. The
// in-memory limiter tests those candidates in ascending order instead: two
// algorithms, both checked against a brute-force model in the tests.
//
// AllowBatch and ReserveBatch make one network round trip. On a
// *redis.Client (standalone or Sentinel) they run allow_batch.lua or
// reserve_batch.lua once per chunk of up to 256 users: the same per-user
// code in a loop over the chunk's keys, at one instant (TIME read once per
// call), a failing user (WRONGTYPE) reported alone. Script invocation, not
// the commands, dominates a single decision's cost on the server, so this
// is what makes batches cheap. On Redis Cluster (or any other client) the
// keys may live on different nodes, so they pipeline one single-key script
// call per user instead, split by slot. Both paths decide the same.
// ReserveBatchWith lets a caller put its own commands in the same pipeline
// (the worker writes a job's record and books its one recipient in one
// round trip); Uses tells whether the limiter runs on the caller's client.
//
// # Cost of one user's bookings
//
// Without a cap nothing bounds a user's bookings, and every Allow, Peek,
// Status and slot-seeking Reserve for that user reads and sweeps them all,
// while the server serves no one else. With MaxPending = P a user's set
// holds at most P entries after now, plus those in (now - horizon, now],
// which the rules bound (at most the N of the longest window's limit; one
// when the gap is the longest). So each of those decisions reads and sweeps
// at most P + N entries, O((P + N) x rules), whatever the caller asks for.
// A Reserve refused by the cap costs O(log n): a ZREMRANGEBYSCORE of
// aged-out entries, a ZSCORE, a ZCOUNT over (now, +inf] and one
// ZRANGEBYSCORE ... LIMIT 0 1. One refused for NotAfter has sought its
// slot, so it costs what a booking does, less the write. Entries booked
// before the cap was set or lowered still count until they come due. (The
// bound, like every other, assumes time moves forward per user.)
//
// Reading the entries, not sweeping them, dominates: about 1 us of Redis
// per entry, most of it turning scores into strings for Lua. So the cost
// grows linearly with P; BenchmarkPendingBookings, on the production policy
// 10/1m,100/24h with a 3 s gap, measured about 60 us of Redis CPU for a
// fresh user's Allow, 0.24 ms for an Allow behind 100 bookings, 1.7 ms
// behind 1,000 and 16 ms behind 10,000 (a slot-seeking Reserve costs about
// the same), while a Reserve refused at the cap costs no more than a fresh
// user's. Another run, on a 2-core machine (-benchtime 300x): 39 us fresh,
// 132 us behind 100 bookings, 1.3 ms behind 1,000, 12.3 ms behind 10,000;
// refused at the cap of 1,000: 39 us.
//
// # Clock
//
// By default the Redis limiter trusts the Redis server's TIME (read inside
// the script), so pods with skewed clocks agree. Options.Clock injects a
// time instead (tests, simulation, replay); the Memory limiter uses
// time.Now when it is nil.
//
// # Imports
//
// The standard library and github.com/redis/go-redis/v9 only; the package
// knows nothing of jobs, providers or Asynq.
package throttle
